"""readplan: TFDS/tf.data read order, exact and resumable, without TensorFlow.

The public names below are the supported API; modules whose names start with an
underscore are private.  Data flows one way: dataset metadata -> split instructions ->
file instructions -> epoch file order -> interleave -> positions -> checkpoint/reader.
"""

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

__version__ = "0.1.0"

__all__ = [
    "CheckpointError",
    "CheckpointMismatchError",
    "ConfigError",
    "CorruptRecordError",
    "DatasetInfoError",
    "EmptySplitError",
    "ExampleError",
    "IndexFileError",
    "ReadplanError",
    "SplitError",
    "UnsupportedSplitError",
    "__version__",
]
