"""readplan: TFDS/tf.data read order, exact and resumable, without TensorFlow.

The names below are the supported API; modules whose names start with an underscore are
private.  Data flows one way: dataset metadata -> split instructions -> file instructions
-> epoch file order -> interleave -> positions -> checkpoint/reader.

Generic verbs stay on their modules: ``readplan.tfrecord.read/write/count``,
``readplan.example.decode/encode/parse``; ``readplan.testing`` holds property-test helpers
and ``readplan.torch`` the optional PyTorch integration.
"""

from readplan.checkpoint import Checkpoint
from readplan.dataset_info import DatasetInfo, SplitInfo, catalog_names, shard_lengths
from readplan.errors import (
    CheckpointError,
    CheckpointMismatchError,
    ConfigError,
    CorruptRecordError,
    DatasetInfoError,
    EmptySplitError,
    ExampleError,
    IndexFileError,
    ReadplanError,
    SplitError,
    UnsupportedSplitError,
)
from readplan.example import FixedLen, VarLen
from readplan.index import build_index
from readplan.instructions import (
    FileInstruction,
    LazySplit,
    even_splits,
    file_instructions,
    split_for_process,
)
from readplan.interleave import InterleaveSchedule, interleave_order
from readplan.plan import EpochOrder, ExampleShuffle, InputContext, ReadConfig, ReadPlan
from readplan.reader import Batch, Item, Reader, merge_states
from readplan.shuffle import (
    ShuffleBufferState,
    buffer_shuffle,
    epoch_seed_pair,
    permutation,
    seed_pair,
    shuffle_order,
)
from readplan.splits import AllSplits, ReadInstruction, SplitSpec, parse_split
from readplan.tfrecord import CorruptionEvent, CorruptionReport, RecordFile, TFRecordWriter

__version__ = "0.1.0"

__all__ = [
    "AllSplits",
    "Batch",
    "Checkpoint",
    "CheckpointError",
    "CheckpointMismatchError",
    "ConfigError",
    "CorruptRecordError",
    "CorruptionEvent",
    "CorruptionReport",
    "DatasetInfo",
    "DatasetInfoError",
    "EmptySplitError",
    "EpochOrder",
    "ExampleError",
    "ExampleShuffle",
    "FileInstruction",
    "FixedLen",
    "IndexFileError",
    "InputContext",
    "InterleaveSchedule",
    "Item",
    "LazySplit",
    "ReadConfig",
    "ReadInstruction",
    "ReadPlan",
    "Reader",
    "ReadplanError",
    "RecordFile",
    "ShuffleBufferState",
    "SplitError",
    "SplitInfo",
    "SplitSpec",
    "TFRecordWriter",
    "UnsupportedSplitError",
    "VarLen",
    "__version__",
    "buffer_shuffle",
    "build_index",
    "catalog_names",
    "epoch_seed_pair",
    "even_splits",
    "file_instructions",
    "interleave_order",
    "merge_states",
    "parse_split",
    "permutation",
    "seed_pair",
    "shard_lengths",
    "shuffle_order",
    "split_for_process",
]
