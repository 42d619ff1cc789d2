"""readplan: TFDS/tf.data read order, exact and resumable, without TensorFlow.

The names below are the supported API; modules whose names start with an underscore are
private.  The package is layered and data flows one way (specs/architecture.md §1):
storage (local paths and URLs) -> records and metadata -> planning (split instructions,
file order, interleave) -> state (checkpoints) -> plan -> reading (Reader, ranks) -> cli
and integrations.

Generic verbs stay on their modules: ``readplan.tfrecord.read/write/count``,
``readplan.example.decode/encode/parse``; ``readplan.testing`` holds property-test helpers
and ``readplan.torch`` the optional PyTorch integration.
"""

from readplan.errors import (
    CheckpointError,
    CheckpointMismatchError,
    ClosedError,
    ConfigError,
    ConfigTypeError,
    ConversionError,
    CorruptRecordError,
    CorruptTblError,
    DatasetInfoError,
    EmptySplitError,
    ExampleError,
    FeatureError,
    IndexFileError,
    MissingExtraError,
    ObjectChangedError,
    ObjectNotFoundError,
    ReadplanError,
    ReadplanIndexError,
    ReadplanTypeError,
    RecordKeyError,
    SplitError,
    StorageError,
    StoragePermissionError,
    UnsupportedSplitError,
)
from readplan.metadata.dataset_info import DatasetInfo, SplitInfo, catalog_names, shard_lengths
from readplan.metadata.features import FeaturesDict, SkipDecoding
from readplan.plan import EpochOrder, ReadPlan
from readplan.planning.config import ExampleShuffle, InputContext, ReadConfig
from readplan.planning.instructions import (
    FileInstruction,
    LazySplit,
    even_splits,
    file_instructions,
    split_for_process,
)
from readplan.planning.interleave import InterleaveSchedule, interleave_order
from readplan.planning.seeds import epoch_seed_pair, seed_pair
from readplan.planning.shuffle import ShuffleBufferState, buffer_shuffle, permutation, shuffle_order
from readplan.planning.splits import AllSplits, ReadInstruction, SplitSpec, parse_split
from readplan.reading.data_source import RecordSource, data_source
from readplan.reading.items import Batch, Item
from readplan.reading.ranks import merge_states
from readplan.reading.reader import Reader
from readplan.records.example import FixedLen, VarLen
from readplan.records.index import build_index
from readplan.records.native import NATIVE
from readplan.records.tfrecord import (
    CorruptionEvent,
    CorruptionReport,
    LostRecord,
    PackedRecords,
    RecordFile,
    TFRecordWriter,
)
from readplan.state.checkpoint import Checkpoint
from readplan.tbl import TblFile, TblWriter
from readplan.writing import write_dataset, write_records

# The documented submodules, reachable as attributes after ``import readplan``.
from readplan import example as example  # isort: skip
from readplan import features as features  # isort: skip
from readplan import index as index  # isort: skip
from readplan import tbl as tbl  # isort: skip
from readplan import tfrecord as tfrecord  # isort: skip

__version__ = "0.2.0"

__all__ = [
    "NATIVE",
    "AllSplits",
    "Batch",
    "Checkpoint",
    "CheckpointError",
    "CheckpointMismatchError",
    "ClosedError",
    "ConfigError",
    "ConfigTypeError",
    "ConversionError",
    "CorruptRecordError",
    "CorruptTblError",
    "CorruptionEvent",
    "CorruptionReport",
    "DatasetInfo",
    "DatasetInfoError",
    "EmptySplitError",
    "EpochOrder",
    "ExampleError",
    "ExampleShuffle",
    "FeatureError",
    "FeaturesDict",
    "FileInstruction",
    "FixedLen",
    "IndexFileError",
    "InputContext",
    "InterleaveSchedule",
    "Item",
    "LazySplit",
    "LostRecord",
    "MissingExtraError",
    "ObjectChangedError",
    "ObjectNotFoundError",
    "PackedRecords",
    "ReadConfig",
    "ReadInstruction",
    "ReadPlan",
    "Reader",
    "ReadplanError",
    "ReadplanIndexError",
    "ReadplanTypeError",
    "RecordFile",
    "RecordKeyError",
    "RecordSource",
    "ShuffleBufferState",
    "SkipDecoding",
    "SplitError",
    "SplitInfo",
    "SplitSpec",
    "StorageError",
    "StoragePermissionError",
    "TFRecordWriter",
    "TblFile",
    "TblWriter",
    "UnsupportedSplitError",
    "VarLen",
    "__version__",
    "buffer_shuffle",
    "build_index",
    "catalog_names",
    "data_source",
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
    "write_dataset",
    "write_records",
]


def _check_facade(names: list[str], namespace: dict[str, object]) -> None:
    """``names`` (``__all__``) is sorted and names exactly the public names ``namespace``
    (this module's globals) defines, submodules aside: a name added to one place and not the
    other fails at import, not in a user's code."""
    from types import ModuleType  # imported here: a module-level name would be public

    def group(name: str) -> tuple[bool, bool, str]:
        # ruff's isort-style order (RUF022): constants, then classes, then the rest.
        return not name.isupper(), not name[:1].isupper(), name

    if names != sorted(set(names), key=group):
        raise ImportError("readplan.__all__ must be sorted and free of repeats")
    missing = [name for name in names if name not in namespace]
    if missing:
        raise ImportError(f"readplan.__all__ names undefined {missing}")
    unlisted = sorted(
        name
        for name, value in namespace.items()
        if not name.startswith("_") and not isinstance(value, ModuleType) and name not in names
    )
    if unlisted:
        raise ImportError(f"readplan defines public names missing from __all__: {unlisted}")


_check_facade(__all__, globals())
