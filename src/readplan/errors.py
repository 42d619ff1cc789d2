"""readplan's exception hierarchy.

Every error readplan raises on purpose derives from :class:`ReadplanError` and also from
the built-in exception a caller would expect for that situation (``ValueError`` for bad
input), so ``except ValueError`` keeps working for code written against TFDS.  Each
error carries the offending value as attributes, so callers never have to parse messages.
Every attribute has a default, so an error can be rebuilt from its message alone (as
PyTorch does when it forwards an exception out of a DataLoader worker).
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

__all__ = [
    "CheckpointError",
    "CheckpointMismatchError",
    "ClosedError",
    "ConfigError",
    "ConfigTypeError",
    "ConversionError",
    "CorruptRecordError",
    "CorruptTblError",
    "DatasetInfoError",
    "EmptySplitError",
    "ExampleError",
    "FeatureError",
    "IndexFileError",
    "MissingExtraError",
    "ObjectChangedError",
    "ObjectNotFoundError",
    "ReadplanError",
    "ReadplanIndexError",
    "ReadplanTypeError",
    "RecordKeyError",
    "SplitError",
    "StorageError",
    "StoragePermissionError",
    "UnsupportedSplitError",
]


_E = TypeVar("_E", bound="ReadplanError")


class ReadplanError(Exception):
    """Root of every error readplan raises deliberately."""

    def with_context(self: _E, note: str) -> _E:
        """The same error (class and attributes) with ``note`` appended to its message."""
        extended = copy.copy(self)
        extended.args = (f"{self}{note}",)
        return extended


class ReadplanTypeError(ReadplanError, TypeError):
    """An argument of the wrong type (``except TypeError`` catches it too).

    Attributes:
        field: the argument or field at fault, when known.
        value: the offending value, when known.
    """

    def __init__(self, message: str, *, field: str | None = None, value: Any = None) -> None:
        super().__init__(message)
        self.field = field
        self.value = value


class ReadplanIndexError(ReadplanError, IndexError):
    """A key or index out of range (``except IndexError`` catches it too).

    Attributes:
        key: the offending key.
        length: how many keys there are (valid: ``0 .. length - 1``), when known.
    """

    def __init__(self, message: str, *, key: Any = None, length: int | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.length = length


class RecordKeyError(ReadplanIndexError, ValueError):
    """A record key outside ``[0, len)`` of a random-access data source.

    An ``IndexError`` for Python's sequence protocols and samplers, and a ``ValueError``
    like the one TFDS's ArrayRecord data source raises for the same key.  ``key`` and
    ``length`` are as for :class:`ReadplanIndexError`.
    """


class SplitError(ReadplanError, ValueError):
    """A split string (or a ReadInstruction) that TFDS would refuse.

    Attributes:
        spec: the whole split string as given.
        part: the ``+``-separated part at fault, when there is one.
        tfds_message: the exact text TFDS 4.9.10 raises for the same input; ``str(err)``
            starts with it and adds readplan's explanation of the accepted forms.
    """

    def __init__(
        self,
        message: str,
        *,
        spec: str | None = None,
        part: str | None = None,
        tfds_message: str | None = None,
    ) -> None:
        super().__init__(message)
        self.spec = spec
        self.part = part
        self.tfds_message = tfds_message if tfds_message is not None else message


class UnsupportedSplitError(SplitError, NotImplementedError):
    """A form TFDS parses but deliberately does not implement (``all[...]``)."""


class EmptySplitError(SplitError):
    """A split string that selects no records (TFDS: ``Instruction [] corresponds to no data!``)."""


class DatasetInfoError(ReadplanError, ValueError):
    """Dataset metadata that is missing, malformed or inconsistent.

    Attributes:
        path: the file at fault (``dataset_info.json`` or a shard), when there is one.
        field: the JSON field or argument at fault, when there is one.
    """

    def __init__(self, message: str, *, path: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.field = field


class ConfigError(ReadplanError, ValueError):
    """A read configuration that is invalid or would not be reproducible.

    Attributes:
        field: the configuration field at fault.
        value: the offending value.
    """

    def __init__(self, message: str, *, field: str | None = None, value: Any = None) -> None:
        super().__init__(message)
        self.field = field
        self.value = value


class ClosedError(ReadplanError, ValueError):
    """An operation on a reader or writer that was already closed (``ValueError``, as for a
    closed Python file).

    Attributes:
        path: the file the object was open on.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class ConfigTypeError(ConfigError, ReadplanTypeError):
    """A configuration value of the wrong type: a :class:`ConfigError` and a ``TypeError``."""


class ConversionError(ReadplanError, ValueError):
    """A dataset conversion run by a pipeline runner that failed (``specs/tbl.md`` §9): a
    shard that could not be converted (a damaged source, a wrong ``shardLengths``, an image
    that does not decode), reported wherever the runner ran it.

    Attributes:
        shard: the shard that failed, as ``split[index]``, when the runner's error names it.
        path: that shard's source file.
        cause: the class name of the error the shard's conversion raised.
    """

    def __init__(
        self,
        message: str,
        *,
        shard: str | None = None,
        path: str | None = None,
        cause: str | None = None,
    ) -> None:
        super().__init__(message)
        self.shard = shard
        self.path = path
        self.cause = cause


class CorruptRecordError(ReadplanError, ValueError):
    """Damage found while reading a TFRecord file.

    Attributes:
        path: the file.
        offset: byte offset of the damaged record's start (in the decompressed stream).
        record_index: index of the damaged record (the number of valid records before it).
        kind: one of the ``KIND_*`` names in :mod:`readplan.tfrecord`.
        compressed_offset: for GZIP/ZLIB files, where in the compressed file the failing
            inflate step started, when known.
        stored_crc, computed_crc: the masked CRC found in the file and the one computed,
            for checksum damage.
        tf_message: the text TensorFlow reports for the same damage, when it reports any.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        offset: int | None = None,
        record_index: int | None = None,
        kind: str | None = None,
        compressed_offset: int | None = None,
        stored_crc: int | None = None,
        computed_crc: int | None = None,
        tf_message: str | None = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.offset = offset
        self.record_index = record_index
        self.kind = kind
        self.compressed_offset = compressed_offset
        self.stored_crc = stored_crc
        self.computed_crc = computed_crc
        self.tf_message = tf_message


class CorruptTblError(CorruptRecordError):
    """Damage found while reading a TBL v2 file (specs/tbl.md, "Damage").

    Carries the attributes of :class:`CorruptRecordError`; ``record_index`` is the sample
    index (0 for damage to the header, which no sample precedes), ``offset`` the byte
    offset in the file of the damaged structure, and ``kind`` one of
    :data:`readplan.tbl.KINDS`.  ``field`` names the header, index or metadata field at
    fault, when there is one.
    """

    def __init__(self, message: str, *, field: str | None = None, **context: Any) -> None:
        super().__init__(message, **context)
        self.field = field


class IndexFileError(ReadplanError, ValueError):
    """An index sidecar that is malformed, stale, or belongs to another file.

    Attributes:
        path: the index file.
        field: the header field that failed its check, when there is one.
    """

    def __init__(self, message: str, *, path: str | None = None, field: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.field = field


class ExampleError(ReadplanError, ValueError):
    """A serialized ``tf.train.Example`` that is malformed or does not match a schema.

    Attributes:
        key: the feature name at fault, when there is one.
        index: the record's index in a batch, when decoding a batch.
    """

    def __init__(self, message: str, *, key: str | None = None, index: int | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.index = index


class FeatureError(ReadplanError, ValueError):
    """A TFDS feature that readplan cannot model or decode, or a value that breaks its spec.

    Attributes:
        feature: the feature's path in the features dict (``"objects/bbox"``), when known.
        feature_type: the TFDS class of the feature (``"Image"``, or the full Python class
            name of a type readplan does not know), when known.
        path: the file at fault (``features.json``, a ``.labels.txt``), when there is one.
    """

    def __init__(
        self,
        message: str,
        *,
        feature: str | None = None,
        feature_type: str | None = None,
        path: str | None = None,
    ) -> None:
        super().__init__(message)
        self.feature = feature
        self.feature_type = feature_type
        self.path = path


class MissingExtraError(ReadplanError, ImportError):
    """An optional dependency is not installed.

    Attributes:
        extra: the ``readplan[...]`` extra that installs it (``"images"``).
        package: the missing Python package.
    """

    def __init__(
        self, message: str, *, extra: str | None = None, package: str | None = None
    ) -> None:
        super().__init__(message)
        self.extra = extra
        self.package = package


class CheckpointError(ReadplanError, ValueError):
    """A checkpoint that is malformed, of an unknown version, or out of range.

    Attributes:
        field: the JSON field at fault (dotted path), when there is one.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class CheckpointMismatchError(CheckpointError):
    """A checkpoint taken from a different plan than the one asked to resume it.

    Attributes:
        differences: ``{field: (checkpoint value, plan value)}`` for every differing field.
    """

    def __init__(
        self, message: str, *, differences: dict[str, tuple[Any, Any]] | None = None
    ) -> None:
        differences = {} if differences is None else differences
        super().__init__(message, field=next(iter(differences), None))
        self.differences = differences


class StorageError(ReadplanError, OSError):
    """A file or object that could not be read or written (``specs/storage.md``).

    Raised for URLs (``gs://``, ``s3://``, any fsspec protocol) after the bounded retries
    of transient failures are spent; local paths raise the operating system's errors.

    Attributes:
        url: the file or object at fault.
        operation: what was being done (``"read"``, ``"stat"``, ``"write"``, ``"list"``).
    """

    def __init__(
        self, message: str, *, url: str | None = None, operation: str | None = None
    ) -> None:
        super().__init__(message)
        self.url = url
        self.operation = operation


class ObjectNotFoundError(StorageError, FileNotFoundError):
    """A URL that names no object (or a bucket that does not exist)."""


class StoragePermissionError(StorageError, PermissionError):
    """The store refused access to a URL (missing or insufficient credentials)."""


class ObjectChangedError(StorageError):
    """An object that changed while it was being read (its size or generation differs).

    Attributes:
        expected: the identity the object had when it was opened or indexed.
        found: the identity it has now (``None`` when it no longer exists).
    """

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        operation: str | None = None,
        expected: Any = None,
        found: Any = None,
    ) -> None:
        super().__init__(message, url=url, operation=operation)
        self.expected = expected
        self.found = found
