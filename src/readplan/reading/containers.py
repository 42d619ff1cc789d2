"""Record containers: how the shards of a dataset are opened, chosen by its file format.

A dataset's ``dataset_info.json`` names its file format (TFDS's ``fileFormat``, also the
``{FILEFORMAT}`` part of shard names).  Every container offers the same ways in: random
access (``len``, ``[i]``, ``read(skip, take)``, ``close``), a sequential stream from the
first record, nearby records read in spans, and a salvage of a damaged shard, so the
reader drives TFRecord and TBL v2 shards alike (``specs/reader.md``, "Containers";
``specs/tbl.md``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, SupportsIndex

from readplan._internal.arrays import IntArray
from readplan.errors import CorruptTblError, DatasetInfoError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.reading.salvage import Lost, Salvage
from readplan.reading.salvage_tbl import TblSalvage
from readplan.reading.spans import FrameSpans, walks_over_payloads
from readplan.records import tbl, tfrecord
from readplan.records._damage import CorruptionEvent
from readplan.records.index import RecordIndex
from readplan.storage import Handle, StorageOptions

__all__ = [
    "CONTAINERS",
    "RecordContainer",
    "RecordSource",
    "SalvageSource",
    "Sidecar",
    "SpanSource",
    "container_for",
    "readable",
]

Sidecar = str | RecordIndex | None
"""Where a shard's offsets come from: its sidecar's path, an index built in memory, or none."""


class RecordSource(Protocol):
    """Random access to the records of one open shard."""

    def __len__(self) -> int: ...

    def __getitem__(self, i: SupportsIndex) -> bytes: ...

    def read(self, skip: int = 0, take: int | None = None) -> Iterator[bytes]: ...

    def gather(self, indices: Sequence[SupportsIndex]) -> list[bytes]: ...

    def binding(self) -> tuple[int, int]: ...

    def close(self) -> None: ...


class SpanSource(Protocol):
    """Records of one open shard read by index, many at once (``spans.py``)."""

    def read(self, indices: IntArray, to_end: bool) -> list[bytes] | None: ...

    def read_into(
        self, out: list[Any], places: IntArray, indices: IntArray, to_end: bool
    ) -> bool: ...

    def prefetch(self, indices: IntArray) -> bool: ...


class SalvageSource(Protocol):
    """The readable records of one damaged shard, for ``on_corruption="skip"``."""

    events: tuple[CorruptionEvent, ...]

    def read(self, index: int) -> bytes | Lost: ...

    def data_crc_event(self, lost: Lost) -> CorruptionEvent: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class RecordContainer:
    """One container format: its ``fileFormat`` name and how its files are opened: for
    random access, as a stream from the first record, salvaged after damage, and by key
    for the data source."""

    file_format: str
    # Each takes the path, and the keyword options the reader passes (storage_options,
    # index_dir) when it has them.
    open: Callable[..., RecordSource]
    stream: Callable[..., Iterator[bytes]]
    salvage: Callable[..., SalvageSource]
    # (open file, keeper of a descriptor: the caller closes what it is given) -> the file
    # read by increasing indices in spans; its reads give None when a record is damaged
    # (the caller then reads them one by one).
    spans: Callable[..., SpanSource | None]
    # (path, index sidecar, offsets built in memory, or None for offsets found without one,
    # storage options) -> the file opened for keyed access; ``sidecars`` is False when the
    # file carries its own index.
    keyed: Callable[[str, Sidecar, StorageOptions], RecordSource]
    sidecars: bool


def _tfrecord_spans(
    records: tfrecord.RecordFile, keep: Callable[[Handle], Handle]
) -> FrameSpans | None:
    """Spans are read where frames lie as written: not in GZIP/ZLIB files (those are read
    record by record, decompressing).  Their handle is the open file's, duplicated: the
    same object version as its offsets, and no second lookup of a remote object."""
    if records.compression is not None:
        return None
    fd = keep(records.dup_handle())
    walk = not records.indexed and walks_over_payloads(fd)
    return FrameSpans(fd, None if walk else records.offsets)


@dataclass(frozen=True)
class _TblSpans:
    """A TBL file's index already locates each sample: it reads them itself."""

    samples: tbl.TblFile

    def read(self, indices: IntArray, to_end: bool) -> list[bytes] | None:
        total, last = len(self.samples), int(indices[-1])
        if total <= last or (to_end and total != last + 1):
            return None
        try:
            return self.samples.gather(indices.tolist())
        except CorruptTblError:
            return None

    def read_into(self, out: list[Any], places: IntArray, indices: IntArray, to_end: bool) -> bool:
        samples = self.read(indices, to_end)
        if samples is None:
            return False
        for place, sample in zip(places.tolist(), samples):
            out[place] = sample
        return True

    def prefetch(self, indices: IntArray) -> bool:
        """Samples are fetched when read (the file's index was fetched when it was opened)."""
        return True


def _tbl_spans(samples: tbl.TblFile, keep: Callable[[Handle], Handle]) -> _TblSpans:
    return _TblSpans(samples)


def _keyed_tfrecord(
    path: str, sidecar: Sidecar, storage_options: StorageOptions
) -> tfrecord.RecordFile:
    """Keys land anywhere in the file: remote records are fetched exactly, not read ahead."""
    return tfrecord.RecordFile(
        path,
        use_index=sidecar is not None,
        index_path=sidecar if isinstance(sidecar, str) else None,
        index=sidecar if isinstance(sidecar, RecordIndex) else None,
        storage_options=storage_options,
        read_ahead=False,
    )


def _open_tbl(
    path: str, *, storage_options: StorageOptions = None, index_dir: object = None
) -> tbl.TblFile:
    """A TBL file carries its own index: a reader's ``index_dir`` does not apply to it."""
    return tbl.TblFile(path, storage_options=storage_options)


def _keyed_tbl(path: str, sidecar: Sidecar, storage_options: StorageOptions) -> tbl.TblFile:
    """A TBL file's own index gives every sample's offset: there is no sidecar.  Keys land
    anywhere in the file: remote samples are fetched exactly, not read ahead."""
    return tbl.TblFile(path, storage_options=storage_options, read_ahead=False)


CONTAINERS = {
    container.file_format: container
    for container in (
        RecordContainer(
            "tfrecord",
            tfrecord.RecordFile,
            tfrecord.read,
            Salvage,
            _tfrecord_spans,
            keyed=_keyed_tfrecord,
            sidecars=True,
        ),
        RecordContainer(
            tbl.FILE_FORMAT,
            _open_tbl,
            tbl.read,
            TblSalvage,
            _tbl_spans,
            keyed=_keyed_tbl,
            sidecars=False,
        ),
    )
}


def container_for(
    file_format: str,
    *,
    path: str | os.PathLike[str] | None = None,
    available: Sequence[str] = (),
) -> RecordContainer:
    """The container of ``file_format``; an unknown one is a :class:`DatasetInfoError`
    (naming those of the dataset's ``available`` formats that readplan reads)."""
    container = CONTAINERS.get(file_format)
    if container is None:
        readable = [f for f in available if f in CONTAINERS]
        hint = (
            f"; the dataset is also stored as {readable[0]!r}: load it with "
            f"DatasetInfo.load(dir, file_format={readable[0]!r})"
            if readable
            else " (dataset_info.json's fileFormat; readplan convert rewrites a dataset from "
            "one to the other)"
        )
        raise DatasetInfoError(
            f"file format {file_format!r} has no reader in readplan: shards can be read in "
            f"the formats {', '.join(sorted(CONTAINERS))}{hint}",
            path=None if path is None else os.fspath(path),
            field="fileFormat",
        )
    return container


def readable(info: DatasetInfo) -> DatasetInfo:
    """``info`` in the first format readplan reads among those the dataset is stored in (as
    TFDS's data sources pick a random-access one); ``info`` itself when there is none."""
    for file_format in info.available_file_formats:
        if file_format in CONTAINERS:
            return info.with_file_format(file_format)
    return info
