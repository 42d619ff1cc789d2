"""TBL v2 files: TurboLoader's indexed container, read and written byte for byte.

Normative description: specs/tbl.md.  In short:

* :func:`write` / :class:`TblWriter` produce the files TurboLoader 2.39's ``TblWriterV2``
  writes for the same samples, with memory bounded by 24 bytes per sample.
* :class:`TblFile` gives ``len()``, ``tf[i]`` (CRC-16 verified, LZ4 undone), ``info``,
  ``metadata``, ``read(skip, take)``, iteration and a zero-copy RAW_U8 view.
* Damage raises :class:`~readplan.errors.CorruptTblError` naming the file, sample, offset
  and kind, or is skipped and reported (``on_corruption="skip"``), never hidden.
"""

from __future__ import annotations

import mmap
import operator
import os
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import SupportsIndex

import numpy as np
import numpy.typing as npt

from readplan._internal.closing import Closing
from readplan._internal.validate import check_bool
from readplan.errors import ClosedError, ConfigError, CorruptTblError, ReadplanIndexError
from readplan.records._binding import binding_of, ends_read
from readplan.records._clusters import clusters, gap_for
from readplan.records._damage import (
    KIND_DATA_CRC,
    TBL_KIND_LZ4,
    TBL_KINDS,
    CorruptionEvent,
    CorruptionReport,
    OnCorruption,
    check_damage_options,
)
from readplan.records.tbl._checks import (
    FileView,
    Layout,
    MetadataBlocks,
    entry_error,
    entry_kinds,
    open_layout,
    raw_view_problem,
    scan_metadata,
    tail_damage,
)
from readplan.records.tbl._layout import (
    ENTRY,
    ENTRY_DTYPE,
    ENTRY_SIZE,
    FILE_CHECKSUMS,
    FILE_COMPRESSED,
    FORMATS,
    HEADER_SIZE,
    METADATA_TYPES,
    SAMPLE_COMPRESSED,
    SAMPLE_METADATA,
    Metadata,
    SampleInfo,
    crc16_function,
    lz4_block,
)
from readplan.storage import (
    BlobView,
    Handle,
    PathLike,
    StorageOptions,
    open_read,
    read_span,
    to_str,
)
from readplan.storage import close as close_handle

__all__ = [
    "FILE_FORMAT",
    "KINDS",
    "TblFile",
    "count",
    "read",
]

KINDS = TBL_KINDS
# The fileFormat a dataset_info.json gives for TBL v2 shards, and the {FILEFORMAT} part of
# their names.  TFDS 4.9.10 knows "tfrecord", "riegeli", "array_record" and "parquet" only.
FILE_FORMAT = "tbl"


class TblFile(Closing):
    """Random access to a TBL v2 file: ``len(tf)``, ``tf[i]``, ``tf.read(skip, take)``.

    The header and the whole index are checked when the file is opened (specs/tbl.md,
    "Damage"): damage to the header raises at once, whatever ``on_corruption`` says.
    Damage to a sample (its index entry, payload checksum or LZ4 block) raises when that
    sample is read; :meth:`read` and iteration in ``on_corruption="skip"`` mode instead
    drop the sample and add a :class:`CorruptionEvent` to ``report``.  ``verify=False``
    skips the payload CRC-16 (files written without checksums are never verified).

    Payloads are read through a memory map of the file: the file must not shrink while it
    is open.  Iterators returned by :meth:`read` stay valid after :meth:`close`.

    ``path`` may be a URL (``specs/storage.md``, reached with ``storage_options``): the
    header and the index are then fetched when the file is opened, and payloads by ranged
    requests, from read-ahead blocks for a walk forward, or (``read_ahead=False``, random
    access) exactly, one request per sample or per cluster of nearby samples of a
    :meth:`gather`.

    A compressed sample may claim at most ``max_record_bytes`` uncompressed bytes (None:
    ``DEFAULT_MAX_COMPRESSED_RECORD_BYTES``, 256 MiB; a stored sample is bounded by the
    file); a larger claim is ``index_field`` damage, found when the file is opened.
    """

    def __init__(
        self,
        path: PathLike,
        *,
        verify: bool = True,
        on_corruption: OnCorruption = "raise",
        report: CorruptionReport | None = None,
        storage_options: StorageOptions = None,
        read_ahead: bool = True,
        max_record_bytes: int | None = None,
    ) -> None:
        self._mm: FileView | None = None  # first, so that close() works whatever fails
        _check_options(verify, on_corruption, report)
        read_ahead = check_bool(read_ahead, "read_ahead")
        self.path = to_str(path)
        self._skip = on_corruption == "skip"
        self._report = report
        fd = open_read(self.path, storage_options=storage_options)
        try:
            try:
                layout = open_layout(fd, self.path, max_record_bytes)
            except CorruptTblError as err:
                self._note(err, sample=False)
                raise
            mapped, index = _map(fd, layout, read_ahead)
        finally:
            if isinstance(fd, int):
                os.close(fd)
        self._layout = layout
        self._gap = gap_for(fd)
        self._blob = None if isinstance(fd, int) else fd
        self._index = index
        self._kinds = entry_kinds(layout, self._index)
        self._tail = tail_damage(layout, self._index, self._kinds)
        self._any_damaged = bool(self._kinds.any())
        self._lz4: ModuleType | None = None
        self._mm = mapped
        self._n = layout.num_samples
        flags = layout.header.flags
        self._crc = crc16_function() if verify and flags & FILE_CHECKSUMS else None
        self._metadata: MetadataBlocks | None = None

    # ------------------------------------------------------------------ properties
    @property
    def file_size(self) -> int:
        return self._layout.file_size

    @property
    def compressed(self) -> bool:
        """The header's compressed flag (set whenever the writer had compression on)."""
        return bool(self._layout.header.flags & FILE_COMPRESSED)

    @property
    def entries(self) -> npt.NDArray[np.void]:
        """The index as a read-only numpy array of :data:`ENTRY_DTYPE` records."""
        return np.frombuffer(self._index, dtype=ENTRY_DTYPE)

    @property
    def damaged(self) -> npt.NDArray[np.intp]:
        """Indices of the samples whose index entry is damaged (found when opening)."""
        return np.flatnonzero(self._kinds)

    def __len__(self) -> int:
        return self._n

    # ------------------------------------------------------------------ samples
    def __getitem__(self, i: SupportsIndex) -> bytes:
        position = operator.index(i)
        if not 0 <= position < self._n:
            position = self._position(position)
        mapped = self._mm
        if mapped is None:
            mapped = self._open_map()  # raises: closed
        return self._decode(position, ENTRY.unpack_from(self._index, ENTRY_SIZE * position), mapped)

    def __iter__(self) -> Iterator[bytes]:
        return self.read()

    def gather(self, indices: Sequence[SupportsIndex]) -> list[bytes]:
        """Samples ``indices`` (any order, repeats allowed), in the order given, each checked
        as by ``tf[i]``.  Locally the index makes each one slice of the map; in a store,
        samples less than 1 MiB apart share one ranged request (at most 4 MiB)."""
        wanted = [self._position(operator.index(i)) for i in indices]
        damaged = self._any_damaged and bool(self._kinds[wanted].any())
        if not isinstance(self._mm, BlobView) or damaged:
            # A damaged entry's offset and size are not read from: it raises on its own.
            return [self[i] for i in wanted]
        found = dict(zip(*self._gathered(sorted(set(wanted)), self._mm)))
        return [found[i] for i in wanted]

    def _gathered(self, unique: list[int], view: BlobView) -> tuple[list[int], list[bytes]]:
        """Samples ``unique`` (ascending, distinct) read a cluster per request."""
        entries = [ENTRY.unpack_from(self._index, ENTRY_SIZE * i) for i in unique]
        starts = [entry[0] for entry in entries]
        ends = [entry[0] + entry[1] for entry in entries]
        order = sorted(range(len(unique)), key=starts.__getitem__)
        starts, ends = [starts[k] for k in order], [ends[k] for k in order]
        samples: list[bytes] = []
        for first, stop in clusters(starts, ends, self._gap):
            span = _Span(starts[first], view[starts[first] : max(ends[first:stop])])
            samples.extend(self._decode(unique[k], entries[k], span) for k in order[first:stop])
        return [unique[k] for k in order], samples

    def read(self, skip: int = 0, take: int | None = None) -> Iterator[bytes]:
        """Samples ``[skip, skip + take)`` in order; ``take=None`` (or -1) reads to the end."""
        total = len(self)
        if take is None or take == -1:
            take = total - skip
        if skip < 0 or take < 0 or skip + take > total:
            raise ReadplanIndexError(
                f"{self.path}: cannot read {take} samples from sample {skip}: the file has "
                f"{total} samples",
                key=(skip, take),
                length=total,
            )
        return self._samples(self._open_map(), skip, skip + take)

    def _samples(self, mapped: FileView, start: int, stop: int) -> Iterator[bytes]:
        # The iterator holds the map itself: it stays valid after close(), like a
        # RecordFile's, and the map is unmapped when its last user is gone.
        entries = ENTRY.iter_unpack(self._index[ENTRY_SIZE * start : ENTRY_SIZE * stop])
        for i, entry in enumerate(entries, start):
            try:
                yield self._decode(i, entry, mapped)
            except CorruptTblError as err:
                self._note(err, sample=True)
                if not self._skip:
                    raise
        if stop == self._n and self._tail is not None:
            # Like a TFRecord file's garbage tail: met when the walk reaches the end.
            self._note(self._tail, sample=False)
            if not self._skip:
                raise self._tail

    def _decode(self, i: int, entry: tuple[int, ...], mapped: FileView) -> bytes:
        """Sample ``i`` from its unpacked index entry: checked, decompressed, verified."""
        if self._any_damaged and self._kinds[i]:
            raise entry_error(self._layout, self._index, i, int(self._kinds[i]))
        offset, size, usize, _, _, _, flags, checksum = entry
        data = mapped[offset : offset + size]
        if flags & SAMPLE_COMPRESSED:
            lz4 = self._lz4 if self._lz4 is not None else self._load_lz4()
            try:
                # Positional: keyword parsing costs more than the decoding of a small block.
                data = lz4.decompress(data, usize)
            except lz4.LZ4BlockError as exc:
                raise self._payload_error(
                    i,
                    TBL_KIND_LZ4,
                    "size",
                    f"its {size}-byte LZ4 block does not decode to {usize} bytes ({exc})",
                ) from None
        if self._crc is not None:
            computed = self._crc(data)
            if computed != checksum:
                raise self._payload_error(
                    i,
                    KIND_DATA_CRC,
                    "checksum",
                    f"its CRC-16 is {computed:#06x} but the index stores {checksum:#06x}",
                    stored_crc=checksum,
                    computed_crc=computed,
                )
        return data

    def _load_lz4(self) -> ModuleType:
        # Imported on the first compressed sample: stored samples need no lz4.
        self._lz4 = lz4_block()
        return self._lz4

    def _payload_error(
        self, i: int, kind: str, field: str, why: str, **crc: int
    ) -> CorruptTblError:
        if self._blob is not None:
            # A store may serve a replaced object's bytes: that is a change, not damage.
            self._blob.check_unchanged()
        offset = ENTRY.unpack_from(self._index, ENTRY_SIZE * i)[0]
        return CorruptTblError(
            f"{self.path}: sample {i} at offset {offset} is damaged ({kind}): {why}",
            path=self.path,
            offset=offset,
            record_index=i,
            kind=kind,
            field=field,
            **crc,
        )

    def info(self, i: SupportsIndex) -> SampleInfo:
        """The index entry of sample ``i`` (damaged entries raise :class:`CorruptTblError`)."""
        position = self._position(operator.index(i))
        if self._kinds[position]:
            raise entry_error(self._layout, self._index, position, int(self._kinds[position]))
        offset, size, usize, width, height, fmt, flags, checksum = ENTRY.unpack_from(
            self._index, ENTRY_SIZE * position
        )
        return SampleInfo(
            position,
            offset,
            size,
            usize,
            width,
            height,
            FORMATS[fmt],
            bool(flags & SAMPLE_COMPRESSED),
            bool(flags & SAMPLE_METADATA),
            checksum,
        )

    def metadata(self, i: SupportsIndex) -> Metadata | None:
        """Sample ``i``'s first metadata block, or ``None`` when it has none.

        A damaged metadata section raises :class:`CorruptTblError` in ``"raise"`` mode; in
        ``"skip"`` mode it is reported once and the blocks before the damage still count.
        """
        position = self._position(operator.index(i))
        damage = self.metadata_damage
        if damage is not None and not self._skip:
            raise damage
        assert self._metadata is not None
        found = self._metadata.blocks.get(position)
        if found is None:
            return None
        code, start, size = found
        return Metadata(METADATA_TYPES[code], self._open_map()[start : start + size])

    @property
    def metadata_damage(self) -> CorruptTblError | None:
        """The metadata section's damage (its first damaged block), or None when it is
        sound; the section is walked on first use and its damage reported once."""
        if self._metadata is None:
            self._metadata = scan_metadata(self._layout, self._open_map())
            if self._metadata.damage is not None:
                self._note(self._metadata.damage, sample=False)
        return self._metadata.damage

    def raw_view(
        self, *, verify: bool = True, copy_on_write: bool = False
    ) -> np.memmap[tuple[int, ...], np.dtype[np.uint8]]:
        """A read-only ``(N, H, W, 3)`` uint8 memory map of a uniform RAW_U8 file, no copy.

        Every sample must be raw_u8, stored uncompressed, of one width and height, with
        ``width * height * 3`` bytes, back to back.  ``verify`` checks every payload's
        CRC-16 once before the view is returned.  ``copy_on_write`` maps the file privately
        instead: the view is writable, and a write changes this process's copy of the page
        written, never the file.
        """
        check_bool(copy_on_write, "copy_on_write")
        if isinstance(self._mm, BlobView):
            raise ConfigError(
                f"{self.path}: raw_view maps a local file; copy the object to local disk, or "
                "read its samples with tf[i]",
                field="raw_view",
                value=self.path,
            )
        table = self.entries
        problem = raw_view_problem(table, self._kinds)
        if problem is not None:
            raise ConfigError(
                f"{self.path}: no (N, H, W, 3) view: {problem}", field="raw_view", value=None
            )
        if verify and self._crc is not None:
            mapped = self._open_map()
            for i, entry in enumerate(ENTRY.iter_unpack(self._index)):
                self._decode(i, entry, mapped)
        height, width = int(table["height"][0]), int(table["width"][0])
        return np.memmap(
            self.path,
            dtype=np.uint8,
            mode="c" if copy_on_write else "r",
            offset=int(table["offset"][0]),
            shape=(len(table), height, width, 3),
        )

    # ------------------------------------------------------------------ plumbing
    def _note(self, err: CorruptTblError, *, sample: bool) -> None:
        """Add ``err`` to the report; a damaged sample is one record lost."""
        if self._report is None:
            return
        self._report.add(
            CorruptionEvent(
                path=self.path,
                kind=str(err.kind),
                offset=int(err.offset or 0),
                record_index=int(err.record_index or 0),
                message=str(err),
                records_lost=1 if sample else None,
                stored_crc=err.stored_crc,
                computed_crc=err.computed_crc,
            )
        )

    def _position(self, i: int) -> int:
        total = len(self)
        position = i + total if i < 0 else i
        if not 0 <= position < total:
            raise ReadplanIndexError(
                f"{self.path}: sample index {i} is out of range ({total} samples)",
                key=i,
                length=total,
            )
        return position

    def binding(self) -> tuple[int, int]:
        """The file's size and the CRC32C of its first and last 64 KiB, what a reader's
        state binds to (``specs/checkpoint.md`` §4), read exactly from the version opened:
        its memory map, or ranged requests on the object opened (no new lookup)."""
        if self._blob is not None:
            return binding_of(self._blob)
        mapped = self._open_map()
        size = self._layout.file_size
        return size, ends_read(lambda start, stop: mapped[start:stop], size)

    def _open_map(self) -> FileView:
        if self._mm is None:
            raise ClosedError(f"{self.path}: the TblFile is closed", path=self.path)
        return self._mm

    def close(self) -> None:
        """Drop this object's map of the file; idempotent.  Iterators from :meth:`read`
        hold the map until they end, like a RecordFile's hold their descriptor."""
        self._mm = None

    def __repr__(self) -> str:
        return f"TblFile({self.path!r}, {len(self)} samples, compressed={self.compressed})"


def _map(fd: Handle, layout: Layout, read_ahead: bool) -> tuple[FileView, bytes]:
    """The file's bytes by slice, and its index (fetched at once from a store)."""
    if isinstance(fd, int):
        mapped = mmap.mmap(fd, layout.file_size, access=mmap.ACCESS_READ)
        return mapped, mapped[HEADER_SIZE : layout.index_end]
    return BlobView(fd, read_ahead=read_ahead), read_span(
        fd, layout.index_end - HEADER_SIZE, HEADER_SIZE
    )


class _Span:
    """Bytes ``[base, base + len(data))`` of a file, sliced as the whole file's view."""

    def __init__(self, base: int, data: bytes) -> None:
        self._base, self._data = base, data

    def __getitem__(self, span: slice) -> bytes:
        return self._data[span.start - self._base : span.stop - self._base]


def _check_options(verify: object, on_corruption: object, report: object) -> None:
    check_bool(verify, "verify")
    check_damage_options(on_corruption, report)


def read(
    path: PathLike,
    *,
    verify: bool = True,
    on_corruption: OnCorruption = "raise",
    report: CorruptionReport | None = None,
    storage_options: StorageOptions = None,
    max_record_bytes: int | None = None,
) -> Iterator[bytes]:
    """Every sample of ``path`` (a path or URL) in order (see :class:`TblFile` for the
    damage rules).

    The file is opened (and its header checked) at once and closed when the iterator is
    exhausted or garbage-collected.
    """
    tbl = TblFile(
        path,
        verify=verify,
        on_corruption=on_corruption,
        report=report,
        storage_options=storage_options,
        max_record_bytes=max_record_bytes,
    )
    return _closing_samples(tbl)


def _closing_samples(tbl: TblFile) -> Iterator[bytes]:
    try:
        yield from tbl.read()
    finally:
        tbl.close()


def count(path: PathLike, *, storage_options: StorageOptions = None) -> int:
    """Number of samples in ``path`` (a path or URL), from its checked header."""
    name = to_str(path)
    fd = open_read(name, storage_options=storage_options)
    try:
        return open_layout(fd, name).num_samples
    finally:
        close_handle(fd)
