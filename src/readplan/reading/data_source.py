"""Random access to a TFDS dataset's records, with TFDS's key mapping (``specs/data_source.md``).

TFDS gives a random-access data source (``builder.as_data_source``) only for ArrayRecord
and Parquet datasets; :func:`data_source` gives one for TFRecord datasets as they are
prepared, and for datasets converted to TBL v2.  Key ``i`` is record
``skip + (i - records before)`` of the file instruction holding ``i``, the split's file
instructions concatenated in order: exactly what TFDS's ArrayRecord data source does.
Shards are opened by their dataset's container (:mod:`readplan.reading.containers`):
TFRecord records are found through index sidecars, built on first use, TBL samples through
the file's own index; every record read is checked.  A dataset in an object store
(``gs://``, ``s3://``) is read through :mod:`readplan.storage`: each record, or each cluster
of nearby records of a batch, is one ranged request.
"""

from __future__ import annotations

import bisect
import operator
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Literal, NamedTuple, TypeAlias, cast

import numpy as np
import numpy.typing as npt

from readplan import storage
from readplan._internal.arrays import IntArray
from readplan._internal.closing import Closing
from readplan._internal.progress import Progress
from readplan.errors import (
    ConfigError,
    ConfigTypeError,
    DatasetInfoError,
    RecordKeyError,
    SplitError,
    StoragePermissionError,
)
from readplan.metadata.dataset_info import DatasetInfo
from readplan.metadata.features import FeaturesDict
from readplan.metadata.loader import INFO_FILE
from readplan.metadata.raw_images import RawMarker, raw_marker
from readplan.planning.instructions import FileInstruction, LazySplit, file_instructions
from readplan.planning.splits import SplitArg
from readplan.reading import containers
from readplan.reading.decoding import RecordDecoder, decodes_media, example_decoder
from readplan.reading.items import Record
from readplan.reading.raw_records import RawSamples, over_raw
from readplan.reading.workers import check_decode_workers, decoded_in_parts
from readplan.records import index as _index
from readplan.records import tbl
from readplan.records.example._rows import records_as_dicts
from readplan.storage import StorageOptions

__all__ = ["RecordSource", "data_source"]

Decode: TypeAlias = bool | Literal["tfds"] | Mapping[str, Any] | None
"""``decode=``: bytes (``None``/``False``), Example features, TFDS features, or a schema."""
DatasetArg = DatasetInfo | str | os.PathLike[str]


def data_source(
    dataset: DatasetArg,
    split: SplitArg,
    *,
    decode: Decode = None,
    decoders: Mapping[str, Any] | None = None,
    index_dir: str | os.PathLike[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    decode_workers: int = 1,
) -> RecordSource:
    """A random-access source over ``split`` of a TFRecord or TBL dataset, keyed as TFDS keys it.

    Args:
        dataset: a :class:`~readplan.DatasetInfo` loaded from its directory, or the
            directory itself (the folder holding ``dataset_info.json`` and the shards): a
            local path or a URL (``gs://bucket/dataset/config/version``, ``s3://...``).
        split: a TFDS split string (``"train[10%:20%]+test"``), as for
            :func:`~readplan.file_instructions`.
        decode: ``None``/``False`` gives the records' bytes, ``True`` decoded
            ``tf.train.Example`` features, a schema mapping parsed features (as for
            :class:`~readplan.Reader`), ``"tfds"`` the dataset's features decoded as TFDS's
            data sources return them (``features.json`` must be present).
        decoders: with ``decode="tfds"``, TFDS-style per-feature decoders
            (:class:`~readplan.SkipDecoding`), shaped like the features.
        index_dir: where index sidecars are looked up and missing ones written (a local
            path or a URL; default: beside the data when it can be written there; with
            nothing writable, offsets are kept in memory).
        storage_options: fsspec options for a dataset or ``index_dir`` given as a URL
            (``specs/storage.md``).
        decode_workers: threads decoding the records of one ``__getitems__`` call, in as
            many consecutive parts; the same records and errors as one thread.

    Missing sidecars of TFRecord shards are built here, with a progress bar on a terminal
    when that takes more than a second; TBL shards carry their own index.  See
    ``specs/data_source.md``.
    """
    info = dataset if isinstance(dataset, DatasetInfo) else _load(dataset, storage_options)
    return RecordSource(
        containers.readable(info),
        split,
        decode=decode,
        decoders=decoders,
        index_dir=index_dir,
        storage_options=storage_options,
        decode_workers=decode_workers,
    )


def _load(dataset: object, storage_options: Mapping[str, Any] | None) -> DatasetInfo:
    if not isinstance(dataset, (str, os.PathLike)):
        raise ConfigError(
            "dataset must be a readplan.DatasetInfo or the path or URL of a dataset "
            f"directory, got {type(dataset).__name__}",
            field="dataset",
            value=dataset,
        )
    return DatasetInfo.load(dataset, storage_options=storage_options)


class RecordSource(Closing):
    """The records of one split of a TFRecord or TBL dataset, by key (``specs/data_source.md``).

    ``len(source)``, ``source[key]`` (any integer with ``__index__``; keys outside
    ``[0, len)`` raise :class:`~readplan.errors.RecordKeyError`), ``source.__getitems__(keys)``
    and Grain's ``_getitems(keys)`` (records of one file read together), iteration in key
    order.  Safe to use from many threads; picklable (open files are not pickled, each
    process opens its own).  Build it with :func:`data_source`.
    """

    def __init__(
        self,
        info: DatasetInfo,
        split: SplitArg,
        *,
        decode: Decode = None,
        decoders: Mapping[str, Any] | None = None,
        index_dir: str | os.PathLike[str] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        decode_workers: int = 1,
    ) -> None:
        if info.data_dir is None:
            raise ConfigError(
                f"dataset {info.name!r} has no data_dir (a catalog layout has no files); "
                "load it from its directory with readplan.DatasetInfo.load(dir)",
                field="dataset",
                value=info.name,
            )
        self._container = containers.container_for(
            info.file_format, path=storage.join(info.data_dir, INFO_FILE)
        )
        self.info = info
        self.split = str(split.resolve(info) if isinstance(split, LazySplit) else split)
        self.decode = decode
        self.decoders = decoders
        self.storage_options = storage_options
        # A TBL-RAW dataset's samples are decoded as images and metadata (tbl.md §12).
        self._raw = None if decode in (None, False) else _raw_marker(info, storage_options)
        self._decoder = _record_decoder(info, decode, decoders, storage_options, self._raw)
        self.decode_workers = check_decode_workers(decode_workers)
        self.index_dir = None if index_dir is None else storage.to_str(index_dir)
        # A store answers each request after a delay: every batch spanning several files
        # reads them concurrently, whatever its size.
        self._remote = storage.is_remote(info.data_dir)
        instructions = file_instructions(info, split)
        _check_takes(instructions, self.split)
        takes = [fi.take for fi in instructions]
        self._starts: list[int] = np.concatenate([[0], np.cumsum(takes)]).astype(int).tolist()
        self._skips = np.array([fi.skip for fi in instructions], dtype=np.int64)
        self._starts_array = np.array(self._starts, dtype=np.int64)
        numbers = {
            name: k for k, name in enumerate(dict.fromkeys(fi.filename for fi in instructions))
        }
        paths = list(numbers)
        self.paths = tuple(paths)
        self._file_of = np.array([numbers[fi.filename] for fi in instructions], dtype=np.int64)
        self._needed = [0] * len(paths)
        self._planned = [0] * len(paths)
        for fi, file in zip(instructions, self._file_of.tolist()):
            self._needed[file] = max(self._needed[file], fi.skip + fi.take)
            self._planned[file] = fi.examples_in_shard
        self._index_paths = self._prepare_indexes()
        # Local batches are read in parallel only when large (the estimate needs the sizes).
        sizes = [0 if self._remote else os.path.getsize(path) for path in paths]
        self._mean_sizes = [size / max(1, n) for size, n in zip(sizes, self._planned)]
        self._lock = threading.Lock()
        self._opening = _opening_locks()
        self._files: list[containers.RecordSource | None] = [None] * len(paths)

    # -- sidecars ---------------------------------------------------------------------

    def _prepare_indexes(self) -> list[containers.Sidecar]:
        """Per file: the sidecar to use, building missing ones (kept in memory where they
        cannot be written); ``None``: none is used."""
        if not self._container.sidecars:
            return [None] * len(self.paths)
        options = self.storage_options
        targets = [_index.index_path_for(path, self.index_dir) for path in self.paths]
        present = _present(targets, options)
        missing = [k for k, target in enumerate(targets) if target not in present]
        if not missing:
            return list(targets)
        found: list[containers.Sidecar] = list(targets)
        # Remote shards are indexed concurrently: each request waits on the store.
        run = _pool().map if self._remote else map
        shards = list(run(lambda k: _Shard.of(self.paths[k], options), missing))
        total = sum(shard.size for shard in shards)
        with Progress(f"indexing {self.info.name} {self.split}", total=total, unit="B") as bar:
            lock = threading.Lock()

            def advance(amount: int) -> None:
                with lock:
                    bar.advance(amount)

            def build(k: int, shard: _Shard) -> containers.Sidecar:
                return _build(self.paths[k], targets[k], shard, advance, options)

            for k, built in zip(missing, list(run(build, missing, shards))):
                found[k] = built
        return found

    # -- access -----------------------------------------------------------------------

    def __len__(self) -> int:
        return self._starts[-1]

    def __getitem__(self, key: Any) -> Record:
        k = self._key(key)
        j = bisect.bisect_right(self._starts, k) - 1
        raw = self._file(int(self._file_of[j]))[int(self._skips[j]) + k - self._starts[j]]
        return raw if self._decoder is None else self._decoder(raw)

    def __getitems__(self, keys: Sequence[Any] | npt.NDArray[Any]) -> list[Record]:
        """The records of ``keys``, in the order given (repeats allowed).

        Keys are grouped by file; the records of one file are read in offset order, nearby
        ones with one positioned read (:meth:`readplan.tfrecord.RecordFile.gather`; a TBL
        file's index locates each sample on its own).
        """
        wanted = self._keys(keys)
        j = np.searchsorted(self._starts_array, wanted, side="right") - 1
        files = self._file_of[j].tolist()
        records = (self._skips[j] + wanted - self._starts_array[j]).tolist()
        by_file: dict[int, list[int]] = {}
        for slot, file in enumerate(files):
            by_file.setdefault(file, []).append(slot)
        groups = [(file, [records[k] for k in slots]) for file, slots in by_file.items()]
        if len(groups) > 1 and (self._remote or self._batch_bytes(files) >= _PARALLEL_BYTES):
            # Large records: positioned reads and checksums release the GIL, so files are
            # read in parallel (as ArrayRecord's data source does); remote files: their
            # requests wait on the store together.
            threads = _REMOTE_THREADS if self._remote else _THREADS
            shares = [groups[k::threads] for k in range(min(threads, len(groups)))]
            done = list(_pool().map(self._read_groups, shares))
            payloads: list[list[bytes]] = [[] for _ in groups]
            for k, share in enumerate(done):
                payloads[k::threads] = share
        else:
            payloads = [self._read_group(group) for group in groups]
        found: list[Any] = [None] * len(files)
        for slots, read in zip(by_file.values(), payloads):
            for slot, payload in zip(slots, read):
                found[slot] = payload
        if self._decoder is None:
            return found
        decoded: list[Record]
        decoded, error = decoded_in_parts(
            self._decoder.decode_all, found, self.decode_workers, media=self._decoder.media
        )
        if error is not None:
            raise error
        return decoded

    def _read_groups(self, groups: list[tuple[int, list[int]]]) -> list[list[bytes]]:
        return [self._read_group(group) for group in groups]

    def _read_group(self, group: tuple[int, list[int]]) -> list[bytes]:
        file, wanted = group
        opened = self._file(file)
        return [opened[wanted[0]]] if len(wanted) == 1 else opened.gather(wanted)

    def _batch_bytes(self, files: list[int]) -> float:
        """Estimated bytes of a batch: each file's mean record size per key in it."""
        return sum(self._mean_sizes[file] for file in files)

    _getitems = __getitems__
    """Grain's name for batched reads (``SupportsBatchedReadRandomAccessDataSource``)."""

    def __iter__(self) -> Iterator[Record]:
        """``source[0], source[1], ...``, streamed file by file."""
        for j, file in enumerate(self._file_of.tolist()):
            take = self._starts[j + 1] - self._starts[j]
            for raw in self._file(file).read(int(self._skips[j]), take):
                yield raw if self._decoder is None else self._decoder(raw)

    def _key(self, key: Any) -> int:
        k = _as_int(key)
        if not 0 <= k < len(self):
            raise self._out_of_range(k)
        return k

    def _keys(self, keys: Sequence[Any] | npt.NDArray[Any]) -> IntArray:
        if isinstance(keys, np.ndarray) and keys.dtype.kind in "iu":
            ints: list[int] = keys.reshape(-1).tolist()
        else:
            ints = [_as_int(key) for key in keys]
        if ints and (min(ints) < 0 or max(ints) >= len(self)):
            raise self._out_of_range(next(k for k in ints if not 0 <= k < len(self)))
        return np.array(ints, dtype=np.int64)

    def _out_of_range(self, key: int) -> RecordKeyError:
        n = len(self)
        keys = (
            f"keys 0..{n - 1}; negative keys are refused, as by TFDS's data sources"
            if n
            else "no keys"
        )
        return RecordKeyError(
            f"record key {key} is out of range: the source has {n} records ({keys}): {self!r}",
            key=key,
            length=n,
        )

    def _file(self, file: int) -> containers.RecordSource:
        opened = self._files[file]
        if opened is None:
            # Files open in parallel (a remote open waits on several requests); one file
            # is opened once.
            with self._opening[file % _OPENING_LOCKS]:
                opened = self._files[file]
                if opened is None:
                    opened = self._open(file)
                    self._files[file] = opened
        return opened

    def _open(self, file: int) -> containers.RecordSource:
        path, sidecar = self.paths[file], self._index_paths[file]
        opened = self._container.keyed(path, sidecar, self.storage_options)
        if self._raw is not None:
            # Its records are RawRecords, which the source's decoder takes.
            opened = cast(containers.RecordSource, RawSamples(cast(tbl.TblFile, opened), self._raw))
        try:
            found = len(opened)  # walks the headers now when there is no sidecar
            if found < self._needed[file]:
                raise DatasetInfoError(
                    f"{path} holds only {found} records, but split {self.split!r} reads up to "
                    f"record {self._needed[file] - 1} of it (dataset_info.json's shardLengths "
                    f"gives it {self._planned[file]}): the file and its metadata disagree; "
                    "regenerate or re-download the shard, or fix shardLengths",
                    path=path,
                    field="shardLengths",
                )
        except BaseException:
            opened.close()
            raise
        return opened

    # -- life cycle -------------------------------------------------------------------

    def close(self) -> None:
        """Close the open files (they reopen on the next access, remote objects with their
        identity then); idempotent."""
        with self._lock:
            for opened in self._files:
                if opened is not None:
                    opened.close()
            self._files = [None] * len(self.paths)

    def __repr__(self) -> str:
        version = "" if self.info.version is None else f":{self.info.version}"
        return (
            f"RecordSource({self.info.name + version!r}, split={self.split!r}, "
            f"num_records={len(self)}, files={len(self.paths)}, decode={_describe(self.decode)}"
            + ("" if self.decoders is None else f", decoders={_describe(self.decoders)}")
            + ")"
        )

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for unpicklable in ("_lock", "_opening", "_files", "_decoder", "_container"):
            del state[unpicklable]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._decoder = _record_decoder(
            self.info, self.decode, self.decoders, self.storage_options, self._raw
        )
        self._container = containers.container_for(self.info.file_format)
        self._lock = threading.Lock()
        self._opening = _opening_locks()
        self._files = [None] * len(self.paths)


# Batches estimated at this many bytes or more read their files in parallel.
_PARALLEL_BYTES = 1 << 20
# Reader threads per process; a batch is dealt to them in as many shares.  Remote reads
# spend their time waiting on the store, so more of them are in flight at once.
_THREADS = 8
_REMOTE_THREADS = 32
_POOL: tuple[int, ThreadPoolExecutor] | None = None
# File k is opened under lock k mod this (locks per file would cost memory at 10^6 files).
_OPENING_LOCKS = 64
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """This process's reader threads (a forked worker starts its own)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL[0] != os.getpid():
            _POOL = (
                os.getpid(),
                ThreadPoolExecutor(_REMOTE_THREADS, thread_name_prefix="readplan-source"),
            )
        return _POOL[1]


def _opening_locks() -> list[threading.Lock]:
    return [threading.Lock() for _ in range(_OPENING_LOCKS)]


def _as_int(key: Any) -> int:
    if isinstance(key, bool) or not hasattr(type(key), "__index__"):
        raise ConfigTypeError(
            f"a record key must be an integer (anything with __index__), got "
            f"{type(key).__name__}; for several records use source.__getitems__(keys)",
            field="key",
            value=key,
        )
    return operator.index(key)


def _present(targets: Sequence[str], storage_options: Mapping[str, Any] | None) -> set[str]:
    """The ``targets`` that exist: one listing per folder, not one request per file."""
    listed: dict[str, set[str]] = {}
    present = set()
    for target in targets:
        folder = storage.parent(target) or os.curdir
        if folder not in listed:
            listed[folder] = _names(folder, storage_options)
        if storage.basename(target) in listed[folder]:
            present.add(target)
    return present


def _names(folder: str, storage_options: Mapping[str, Any] | None) -> set[str]:
    try:
        entries = storage.listdir(folder, storage_options=storage_options)
    except (FileNotFoundError, NotADirectoryError):  # ObjectNotFoundError is one
        return set()
    return {storage.basename(entry) for entry, is_dir in entries if not is_dir}


class _Shard(NamedTuple):
    """A shard to index: its size, and a remote one's handle, opened to learn the size
    (one metadata lookup, which also binds the index built from it)."""

    size: int
    handle: storage.Handle | None

    @classmethod
    def of(cls, path: str, storage_options: Mapping[str, Any] | None) -> _Shard:
        if not storage.is_remote(path):
            return cls(storage.stat(path).size, None)
        handle = storage.open_read(path, storage_options=storage_options)
        return cls(storage.size_of(handle), handle)


def _build(
    path: str,
    target: str,
    shard: _Shard,
    advance: Callable[[int], None],
    storage_options: Mapping[str, Any] | None,
) -> containers.Sidecar:
    """Write the sidecar of ``path`` at ``target``; the index itself when the store refuses
    the write; ``None`` when a local folder cannot take it (the file is then walked on
    first access, which costs a local file little)."""
    if not storage.is_remote(target):
        folder = os.path.dirname(os.path.abspath(target))
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            folder = ""
        if not (folder and os.access(folder, os.W_OK)):
            if shard.handle is not None:
                storage.close(shard.handle)
            advance(shard.size)
            return None
    fd = storage.open_read(path) if shard.handle is None else shard.handle
    try:
        index = _index.index_open_file(fd, path, progress=advance)
    finally:
        storage.close(fd)
    try:
        return _index.write_index(index, target, storage_options=storage_options)
    except StoragePermissionError:
        # A read-only store (tried, as a store cannot be asked beforehand): the index built
        # is used from memory, and goes with the source when it is pickled.
        return index


def _raw_marker(info: DatasetInfo, storage_options: StorageOptions) -> RawMarker | None:
    if info.file_format != tbl.FILE_FORMAT or info.data_dir is None:
        return None
    return raw_marker(info.data_dir, storage_options)


def _record_decoder(
    info: DatasetInfo,
    decode: Decode,
    decoders: Mapping[str, Any] | None,
    storage_options: Mapping[str, Any] | None,
    raw: RawMarker | None,
) -> RecordDecoder | None:
    features = partial(_features, info, decode, storage_options)
    if raw is not None:
        return over_raw(decode, decoders, raw, features, _tfds_decoder)
    if decode != "tfds":
        if decoders is not None:
            raise ConfigError(
                "decoders= applies to TFDS feature decoding: pass decode='tfds' with it "
                f"(got decode={decode!r:.40})",
                field="decoders",
                value=decoders,
            )
        return example_decoder(decode)
    return _tfds_decoder(features(), decoders)


def _features(
    info: DatasetInfo, decode: Decode, storage_options: Mapping[str, Any] | None
) -> FeaturesDict:
    features = info.resolve_features(storage_options)
    if features is None:
        raise ConfigError(
            f"decode='tfds' needs the dataset's features, but {info.data_dir} has no "
            "features.json; use decode=True (tf.train.Example features) or a schema",
            field="decode",
            value=decode,
        )
    return features


def _tfds_decoder(features: FeaturesDict, decoders: Mapping[str, Any] | None) -> RecordDecoder:
    """Records decoded as TFDS's data sources return them (Python scalars)."""
    one, many = features.decoder(decoders=decoders), features.batch_decoder(decoders=decoders)
    return RecordDecoder(
        lambda raw: _python_scalars(one(raw)),
        lambda records: _python_scalars_of_all(many(records)) if records else [],
        media=decodes_media(features, decoders),
    )


def _python_scalars(value: Any) -> Any:
    """Scalars as Python values, as TFDS's NumPy decoding returns them (``.item()``)."""
    if isinstance(value, dict):
        return {key: _python_scalars(inner) for key, inner in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _python_scalars_of_all(values: list[Any]) -> list[Any]:
    """``_python_scalars`` of each value, leaf by leaf when the values share one structure
    (a batch's decoded examples do): a leaf of numpy scalars of one type converts in C."""
    kinds = set(map(type, values))
    if kinds == {dict}:
        keys = values[0].keys()
        if all(map(keys.__eq__, map(dict.keys, values))):
            leaves = [_python_scalars_of_all([value[key] for value in values]) for key in keys]
            return records_as_dicts(list(keys), leaves, len(values))
    elif len(kinds) == 1 and issubclass(kinds.pop(), np.generic):
        converted: list[Any] = np.array(values).tolist()
        return converted
    return list(map(_python_scalars, values))


def _check_takes(instructions: Sequence[FileInstruction], spec: str) -> None:
    for fi in instructions:
        if fi.take < 0:
            raise SplitError(
                f"The split {spec!r} has an inverted range inside one shard, which TFDS turns "
                f"into {os.path.basename(fi.filename)} skip={fi.skip} take={fi.take}: no "
                "record keys can be given to it. Give the range as [from:to] with from <= to.",
                spec=spec,
            )


def _describe(decode: object) -> str:
    """A repr of the decode option that does not change between processes."""
    if isinstance(decode, Mapping):
        return "{" + ", ".join(f"{key!r}: {value!r}" for key, value in decode.items()) + "}"
    return repr(decode)
