"""Writing datasets: a TFDS-layout directory from Python examples, and plain-schema records.

:func:`write_dataset` encodes each example as TFDS's ``encode_example`` does (the
features' rules, ``specs/features.md`` §5), writes each split's shards under TFDS's names,
then ``features.json``, the ClassLabel names files and, last, ``dataset_info.json``, so
``tfds.builder_from_directory`` and readplan both load the directory.  Everything is written
into a private staging directory first: locally it is renamed into place in one step;
for a URL the files are uploaded, ``dataset_info.json`` last.  An interrupted write leaves
no ``dataset_info.json``, and an existing dataset is never replaced.
:func:`write_records` writes ``tf.train.Example`` files checked against a plain
:class:`FixedLen`/:class:`VarLen` schema (``specs/example.md`` §6).
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from readplan import storage
from readplan._internal.validate import is_int
from readplan.errors import ConfigError, DatasetInfoError, ExampleError, FeatureError
from readplan.metadata._feature_declare import features_json, label_files
from readplan.metadata._feature_encode import encode_example
from readplan.metadata.dataset_info import DatasetInfo
from readplan.metadata.features import FEATURES_FILE, FeaturesDict
from readplan.metadata.loader import INFO_FILE
from readplan.metadata.naming import DEFAULT_FILEPATH_TEMPLATE, format_shard_name, shard_lengths
from readplan.records import example, tfrecord
from readplan.records.example import FixedLen, VarLen
from readplan.records.example._codec import check_schema

__all__ = ["DEFAULT_SHARD_SIZE", "encode_with_schema", "write_dataset", "write_records"]

DEFAULT_SHARD_SIZE = 1 << 30
"""Bytes per shard when neither ``shard_size`` nor ``examples_per_shard`` is given (TFDS's
largest shard, 1 GiB)."""

_FRAMING = 16  # a TFRecord's length, its CRC and the data's CRC
_UNBOUNDED = 1 << 62
_FILE_FORMAT = "tfrecord"


@dataclass(frozen=True)
class _Shard:
    path: str
    records: int


def write_dataset(
    data_dir: storage.PathLike,
    *,
    name: str,
    version: str,
    features: FeaturesDict | Mapping[str, Any],
    splits: Mapping[str, Iterable[Any]],
    shard_size: int | None = None,
    examples_per_shard: int | None = None,
    num_shards: int | None = None,
    description: str | None = None,
    storage_options: storage.StorageOptions = None,
) -> DatasetInfo:
    """Write ``splits`` (``{split: examples}``) as the TFDS dataset ``name`` ``version``.

    ``features`` is a :class:`FeaturesDict` (or a dict of features) and each example a dict
    shaped like it. Shards are cut every ``examples_per_shard`` examples, into ``num_shards``
    shards as TFDS's writer sizes them (:func:`readplan.shard_lengths`), or before an
    example that would take a shard past ``shard_size`` bytes (default 1 GiB); examples
    keep their given order. ``data_dir`` (a path or URL) must not hold a
    ``dataset_info.json``. Returns the written dataset's :class:`DatasetInfo`.
    """
    target = storage.to_str(data_dir)
    declared = features if isinstance(features, FeaturesDict) else FeaturesDict(features)
    DatasetInfo(name, {"check": (1,)}, version=_checked_version(version))  # validates the name
    limit, count = _sharding(shard_size, examples_per_shard, num_shards)
    if not isinstance(splits, Mapping) or not splits:
        raise ConfigError(
            f"splits must be a non-empty dict of split name to examples, got {splits!r:.80}",
            field="splits",
            value=splits,
        )
    _refuse_existing(target, storage_options)
    staging = _staging_dir(target)
    try:
        layout: dict[str, tuple[int, ...]] = {}
        sizes: dict[str, int] = {}
        for split, examples in splits.items():
            DatasetInfo(name, {split: (1,)})  # validates the split name
            shards, sizes[split] = _write_split(staging, split, examples, declared, limit, count)
            if num_shards is not None:
                shards = _resplit(staging, split, shards[0], num_shards)
            layout[split] = _name_shards(staging, name, split, shards)
        _write_text(staging, FEATURES_FILE, features_json(declared))
        for file_name, text in label_files(declared).items():
            _write_text(staging, file_name, text)
        info = _info_json(name, version, description, layout, sizes)
        _write_text(staging, INFO_FILE, info)
        _publish(staging, target, storage_options)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return DatasetInfo.load(target, storage_options=storage_options)


def _checked_version(version: object) -> str:
    parts = version.split(".") if isinstance(version, str) else []
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        raise DatasetInfoError(
            f"version {version!r} is not a TFDS version: give 'major.minor.patch', e.g. '1.0.0'",
            field="version",
        )
    assert isinstance(version, str)
    return version


def _sharding(
    shard_size: object, examples_per_shard: object, num_shards: object
) -> tuple[int, int | None]:
    """The byte limit and example count of a shard (one unbounded spool for num_shards)."""
    given = {"shard_size": shard_size, "examples_per_shard": examples_per_shard}
    given["num_shards"] = num_shards
    for field, value in given.items():
        if value is not None and not (is_int(value) and int(value) >= 1):
            raise ConfigError(
                f"{field} must be a positive int or None, got {value!r}", field=field, value=value
            )
    chosen = [field for field, value in given.items() if value is not None]
    if len(chosen) > 1:
        raise ConfigError(
            f"give one of shard_size (bytes per shard), examples_per_shard or num_shards, not "
            f"{' and '.join(chosen)}",
            field=chosen[-1],
            value=given[chosen[-1]],
        )
    if num_shards is not None:
        return _UNBOUNDED, None
    limit = DEFAULT_SHARD_SIZE if shard_size is None else int(shard_size)  # type: ignore[call-overload]
    return limit, None if examples_per_shard is None else int(examples_per_shard)  # type: ignore[call-overload]


def _refuse_existing(target: str, storage_options: storage.StorageOptions) -> None:
    info = storage.join(target, INFO_FILE)
    if storage.exists(info, storage_options=storage_options):
        raise ConfigError(
            f"{target} already holds a dataset ({INFO_FILE}); write_dataset never replaces "
            "one: write into a new or empty directory",
            field="data_dir",
            value=target,
        )
    if not storage.is_remote(target) and os.path.isdir(target) and os.listdir(target):
        raise ConfigError(
            f"{target} is not empty; write_dataset writes into a new or empty directory so "
            "that no file of yours is replaced",
            field="data_dir",
            value=target,
        )


def _staging_dir(target: str) -> str:
    """A private directory: beside a local target (one file system, so the final rename is
    atomic), in the system's temporary folder for a URL."""
    if storage.is_remote(target):
        return tempfile.mkdtemp(prefix="readplan-write-")
    parent = os.path.dirname(os.path.abspath(target))
    os.makedirs(parent, exist_ok=True)
    staging = os.path.join(
        parent, f".{os.path.basename(os.path.abspath(target))}.writing.{secrets.token_hex(4)}"
    )
    os.mkdir(staging)
    return staging


def _write_split(
    staging: str,
    split: str,
    examples: Iterable[Any],
    features: FeaturesDict,
    limit: int,
    count: int | None,
) -> tuple[list[_Shard], int]:
    """Write the split's shards under temporary names; their names need the shard count."""
    shards: list[_Shard] = []
    total = 0
    writer: tfrecord.TFRecordWriter | None = None
    in_shard = shard_bytes = 0
    try:
        for position, value in enumerate(_iterate(examples, split)):
            try:
                record = encode_example(features, value)
            except FeatureError as err:
                raise FeatureError(
                    f"split {split!r}, example {position}: {err}",
                    feature=err.feature,
                    feature_type=err.feature_type,
                ) from err
            full = count is not None and in_shard == count
            too_big = count is None and in_shard and shard_bytes + len(record) + _FRAMING > limit
            if writer is None or full or too_big:
                if writer is not None:
                    writer.close()
                path = os.path.join(staging, f"{split}.part{len(shards)}")
                writer = tfrecord.TFRecordWriter(path)
                shards.append(_Shard(path, 0))
                in_shard = shard_bytes = 0
            writer.write(record)
            in_shard += 1
            shard_bytes += len(record) + _FRAMING
            total += len(record)
            shards[-1] = _Shard(shards[-1].path, in_shard)
    finally:
        if writer is not None:
            writer.close()
    if not shards:
        raise ConfigError(
            f"split {split!r} has no examples; TFDS refuses to write an empty split",
            field="splits",
            value=split,
        )
    return shards, total


def _resplit(staging: str, split: str, spool: _Shard, num_shards: int) -> list[_Shard]:
    """The split's records, written to one spool, cut into ``num_shards`` shards of
    TFDS's lengths (which refuses fewer examples than shards)."""
    lengths = shard_lengths(spool.records, num_shards)
    records = iter(tfrecord.read(spool.path))
    shards = []
    for k, length in enumerate(lengths):
        path = os.path.join(staging, f"{split}.shard{k}")
        tfrecord.write(path, itertools.islice(records, length))
        shards.append(_Shard(path, length))
    os.remove(spool.path)
    return shards


def _iterate(examples: object, split: str) -> Iterator[Any]:
    if isinstance(examples, (str, bytes, Mapping)) or not isinstance(examples, Iterable):
        raise ConfigError(
            f"split {split!r} must be given an iterable of examples (dicts), got {examples!r:.80}",
            field="splits",
            value=split,
        )
    return iter(examples)


def _name_shards(staging: str, name: str, split: str, shards: list[_Shard]) -> tuple[int, ...]:
    for k, shard in enumerate(shards):
        final = format_shard_name(
            None,
            dataset=name,
            split=split,
            file_format=_FILE_FORMAT,
            shard_index=k,
            num_shards=len(shards),
        )
        os.rename(shard.path, os.path.join(staging, final))
    return tuple(shard.records for shard in shards)


def _info_json(
    name: str,
    version: str,
    description: str | None,
    layout: Mapping[str, tuple[int, ...]],
    sizes: Mapping[str, int],
) -> str:
    """``dataset_info.json`` as TFDS's ``DatasetInfo.write_to_directory`` writes it."""
    document: dict[str, Any] = {
        "fileFormat": _FILE_FORMAT,
        "name": name,
        "splits": [
            {
                "filepathTemplate": DEFAULT_FILEPATH_TEMPLATE,
                "name": split,
                "numBytes": str(sizes[split]),
                "shardLengths": [str(length) for length in lengths],
            }
            for split, lengths in layout.items()
        ],
        "version": version,
    }
    if description:
        document["description"] = description
    return json.dumps(document, indent=2, sort_keys=True)


def _write_text(folder: str, name: str, text: str) -> None:
    with open(os.path.join(folder, name), "w", encoding="utf-8", newline="") as out:
        out.write(text)


def _publish(staging: str, target: str, storage_options: storage.StorageOptions) -> None:
    names = sorted(os.listdir(staging))
    names.remove(INFO_FILE)
    if not storage.is_remote(target):
        _fsync_all(staging, [*names, INFO_FILE])
        if os.path.isdir(target):
            os.rmdir(target)  # empty (checked before writing): replaced by the staging dir
        os.rename(staging, target)
        return
    for file_name in [*names, INFO_FILE]:  # the dataset exists once its info is there
        with open(os.path.join(staging, file_name), "rb") as handle:
            data = handle.read()
        storage.write_bytes(storage.join(target, file_name), data, storage_options=storage_options)


def _fsync_all(folder: str, names: list[str]) -> None:
    for file_name in names:
        fd = os.open(os.path.join(folder, file_name), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# --- plain-schema records -----------------------------------------------------------------


def encode_with_schema(values: Mapping[str, Any], schema: Mapping[str, FixedLen | VarLen]) -> bytes:
    """One ``tf.train.Example`` of ``values`` checked against ``schema``, so that
    :func:`readplan.example.parse` with the same schema gives them back.

    A FixedLen value holds exactly ``prod(shape)`` values in any nesting (it may be absent
    when the entry has a default); a VarLen value holds rows of the inner shape, e.g. boxes
    as a ``(n, 4)`` array or nested lists, which are flattened. Every value's type must be
    the entry's dtype (ints for ``int64``, real numbers for ``float32``, bytes or str for
    ``bytes``); names outside the schema are an :class:`~readplan.errors.ExampleError`.
    """
    extra = sorted(str(key) for key in values if key not in schema)
    if extra:
        raise ExampleError(
            f"values {extra} are not in the schema; declared: {sorted(schema)}", key=extra[0]
        )
    entries: dict[str, Any] = {}
    for key, spec in schema.items():
        if key not in values or values[key] is None:
            if isinstance(spec, FixedLen) and spec.default is None:
                raise ExampleError(
                    f"feature {key!r} is missing and its FixedLen has no default", key=key
                )
            continue
        entries[key] = _schema_values(key, spec, values[key])
    return example.encode(entries)


def _schema_values(key: str, spec: FixedLen | VarLen, value: Any) -> Any:
    if spec.dtype == example.BYTES:
        flat = np.asarray(value, dtype=object).reshape(-1)
        if not all(isinstance(v, (bytes, bytearray, str)) for v in flat):
            raise ExampleError(f"feature {key!r} is bytes; got {value!r:.80}", key=key)
        values: Any = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in flat]
        size = len(values)
    else:
        array = np.asarray(value)
        if array.size == 0:
            array = array.astype(np.int64)  # an empty list has no type of its own
        wanted = "iub" if spec.dtype == example.INT64 else "iubf"
        if array.dtype.kind not in wanted:
            raise ExampleError(
                f"feature {key!r} is {spec.dtype}; got values of {array.dtype} ({value!r:.80})",
                key=key,
            )
        values = array.reshape(-1).astype(np.int64 if spec.dtype == example.INT64 else np.float32)
        size = int(values.size)
    inner = int(np.prod(spec.shape[1:] if isinstance(spec, VarLen) else spec.shape))
    fits = size == inner if isinstance(spec, FixedLen) else size % inner == 0
    if not fits:
        raise ExampleError(
            f"feature {key!r} holds {size} values, which does not fit shape {spec.shape} "
            f"({'exactly' if isinstance(spec, FixedLen) else 'a multiple of'} {inner})",
            key=key,
        )
    return values


def write_records(
    path: storage.PathLike,
    records: Iterable[Mapping[str, Any]],
    schema: Mapping[str, FixedLen | VarLen],
    *,
    compression: str | None = None,
) -> int:
    """Write ``records`` (dicts of values) as one TFRecord file of ``tf.train.Example``s, each
    checked against ``schema`` by :func:`encode_with_schema`; returns how many were written."""
    check_schema(schema)
    return tfrecord.write(
        path, (encode_with_schema(values, schema) for values in records), compression=compression
    )
