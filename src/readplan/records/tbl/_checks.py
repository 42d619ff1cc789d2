"""Checking a TBL v2 file's header, index and metadata section against the file.

Normative description: specs/tbl.md, "Damage".  Every size and offset read from the file
is compared with the file's size before anything is allocated or mapped from it; the
index is checked for all samples at once with numpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from readplan._internal.arrays import U8Array
from readplan.errors import CorruptTblError
from readplan.records._cap import record_cap
from readplan.records._damage import (
    KIND_HEADER_CRC,
    KIND_TRAILING_GARBAGE,
    KIND_TRUNCATED_DATA,
    KIND_TRUNCATED_HEADER,
    TBL_KIND_BAD_MAGIC,
    TBL_KIND_HEADER_FIELD,
    TBL_KIND_INDEX_BOUNDS,
    TBL_KIND_INDEX_FIELD,
    TBL_KIND_INDEX_ORDER,
    TBL_KIND_INDEX_OVERLAP,
    TBL_KIND_METADATA_FIELD,
    TBL_KIND_METADATA_OVERRUN,
)
from readplan.records.tbl._layout import (
    ENTRY,
    ENTRY_DTYPE,
    ENTRY_SIZE,
    FILE_CHECKSUMS,
    FILE_COMPRESSED,
    FILE_METADATA,
    FORMATS,
    HEADER_SIZE,
    LZ4_MAX_RATIO,
    MAGIC,
    METADATA_BLOCK,
    METADATA_TYPES,
    SAMPLE_COMPRESSED,
    SAMPLE_METADATA,
    SAMPLE_VERIFIED,
    VERSION,
    Header,
    header_crc,
)
from readplan.records.tfrecord._compression import pread
from readplan.storage import Handle, size_of

__all__ = [
    "ENTRY_KINDS",
    "FileView",
    "Layout",
    "entry_error",
    "entry_kinds",
    "open_layout",
    "raw_view_problem",
    "scan_metadata",
    "tail_damage",
]

# Codes of the per-sample index problems, in the order they are tested (0 = sound).
ENTRY_KINDS = (
    None,
    KIND_TRUNCATED_DATA,
    TBL_KIND_INDEX_BOUNDS,
    TBL_KIND_INDEX_FIELD,
    TBL_KIND_INDEX_ORDER,
    TBL_KIND_INDEX_OVERLAP,
)
_KNOWN_FILE_FLAGS = FILE_COMPRESSED | FILE_METADATA | FILE_CHECKSUMS
_KNOWN_SAMPLE_FLAGS = SAMPLE_COMPRESSED | SAMPLE_METADATA | SAMPLE_VERIFIED


class FileView(Protocol):
    """A file's bytes by slice: a memory map of a local file, or a remote object's
    :class:`~readplan.storage.BlobView`."""

    def __getitem__(self, span: slice, /) -> bytes: ...


@dataclass(frozen=True)
class Layout:
    """A header that passed every check, with the derived extents of the file."""

    path: str
    file_size: int
    header: Header
    # Payloads must lie in [index_end, payload_end): before the metadata section if the
    # file has a sound one, else before the end of the file.
    payload_end: int
    # Why the metadata section cannot be read, when it cannot.
    metadata_damage: CorruptTblError | None
    # The largest uncompressed_size a compressed sample may claim (max_record_bytes).
    max_record_bytes: int

    @property
    def num_samples(self) -> int:
        return self.header.num_samples

    @property
    def index_end(self) -> int:
        return self.header.index_end

    @property
    def has_metadata(self) -> bool:
        return bool(self.header.flags & FILE_METADATA)


def _fatal(path: str, kind: str, offset: int, field: str, why: str, **crc: int) -> CorruptTblError:
    return CorruptTblError(
        f"{path}: the TBL header is damaged ({kind}, field {field!r} at offset {offset}): {why}",
        path=path,
        offset=offset,
        record_index=0,
        kind=kind,
        field=field,
        **crc,
    )


def open_layout(fd: Handle, path: str, max_record_bytes: int | None = None) -> Layout:
    """Read and check the header of the open file or object ``fd``; raises
    :class:`CorruptTblError` (and :class:`ConfigError` for a bad ``max_record_bytes``)."""
    cap = record_cap(max_record_bytes, "lz4")  # LZ4 sizes, like GZIP/ZLIB records'
    size = size_of(fd)
    header = _read_header(fd, path, size)
    _check_index_extent(path, header, size)
    _check_flags(path, header)
    damage = _metadata_extent_damage(path, header, size)
    sound = header.flags & FILE_METADATA and damage is None
    end = header.metadata_offset if sound else size
    return Layout(path, size, header, end, damage, cap)


def _read_header(fd: Handle, path: str, size: int) -> Header:
    """The header of a file of ``size`` bytes that is whole, is TBL v2 and matches its CRC."""
    if size < HEADER_SIZE:
        raise _fatal(
            path,
            KIND_TRUNCATED_HEADER,
            0,
            "magic",
            f"the file holds {size} bytes, fewer than the {HEADER_SIZE}-byte header",
        )
    raw = pread(fd, HEADER_SIZE, 0)
    header = Header.unpack(raw)
    if header.magic != MAGIC or header.version != VERSION:
        raise _fatal(
            path,
            TBL_KIND_BAD_MAGIC,
            0,
            "magic",
            f"it starts with {header.magic!r} version {header.version}, not {MAGIC!r} version "
            f"{VERSION}: this is not a TBL v2 file",
        )
    computed = header_crc(raw)
    if computed != header.checksum:
        raise _fatal(
            path,
            KIND_HEADER_CRC,
            44,
            "checksum",
            f"the stored CRC-32 is {header.checksum:#010x} but the header's bytes give "
            f"{computed:#010x}",
            stored_crc=header.checksum,
            computed_crc=computed,
        )
    return header


def _check_index_extent(path: str, header: Header, size: int) -> None:
    """The index the sample count implies is where ``header_size`` says, inside the file."""
    if header.header_size != header.index_end:
        raise _fatal(
            path,
            TBL_KIND_HEADER_FIELD,
            16,
            "header_size",
            f"it is {header.header_size}, but {header.num_samples} samples need "
            f"{HEADER_SIZE} + {ENTRY_SIZE} * {header.num_samples} = {header.index_end}",
        )
    if header.index_end > size:
        raise _fatal(
            path,
            KIND_TRUNCATED_HEADER,
            8,
            "num_samples",
            f"the index of {header.num_samples} samples ends at byte {header.index_end}, but "
            f"the file holds only {size} bytes",
        )


def _check_flags(path: str, header: Header) -> None:
    """Only known file flags are set, and a file without metadata names no section."""
    if header.flags & ~_KNOWN_FILE_FLAGS:
        raise _fatal(
            path,
            TBL_KIND_HEADER_FIELD,
            40,
            "flags",
            f"flags {header.flags:#x} set bits other than 0 (compressed), 1 (metadata) and "
            "2 (checksums)",
        )
    if not header.flags & FILE_METADATA and (header.metadata_offset or header.metadata_size):
        raise _fatal(
            path,
            TBL_KIND_HEADER_FIELD,
            24,
            "metadata_offset",
            f"the file has no metadata (flag bit 1 clear) but names a section of "
            f"{header.metadata_size} bytes at offset {header.metadata_offset}",
        )


def _metadata_extent_damage(path: str, header: Header, size: int) -> CorruptTblError | None:
    """Why the metadata section of a file that has one cannot be read, or None."""
    start, length = header.metadata_offset, header.metadata_size
    if not header.flags & FILE_METADATA:
        return None
    if start < header.index_end:
        return _fatal(
            path,
            TBL_KIND_METADATA_OVERRUN,
            24,
            "metadata_offset",
            f"the metadata section starts at {start}, inside the header and index (which end "
            f"at {header.index_end})",
        )
    if start + length > size:
        return _fatal(
            path,
            KIND_TRUNCATED_DATA,
            size,
            "metadata_size",
            f"the metadata section [{start}, {start + length}) runs past the end of the file "
            f"({size} bytes): the file is truncated",
        )
    return None


def entry_kinds(layout: Layout, index: bytes) -> U8Array:
    """Per sample, the code (into :data:`ENTRY_KINDS`) of its first index problem, or 0."""
    table = np.frombuffer(index, dtype=ENTRY_DTYPE)
    size = np.uint64(layout.file_size)
    offset = np.minimum(table["offset"], size + np.uint64(1))  # no overflow below
    stored = table["size"].astype(np.uint64)
    end = offset + stored
    compressed = (table["flags"] & SAMPLE_COMPRESSED).astype(bool)
    file_compressed = bool(layout.header.flags & FILE_COMPRESSED)
    field = (
        (table["format"] >= len(FORMATS))
        | (table["flags"] & ~np.uint8(_KNOWN_SAMPLE_FLAGS)).astype(bool)
        | (~compressed & (table["uncompressed_size"] != table["size"]))
        | (compressed & (table["uncompressed_size"].astype(np.uint64) > stored * LZ4_MAX_RATIO))
        | (compressed & (table["uncompressed_size"] > layout.max_record_bytes))
        | (compressed & (not file_compressed))
    )
    kinds = np.zeros(len(table), dtype=np.uint8)
    tests = [
        end > size,
        (offset < np.uint64(layout.index_end)) | (end > np.uint64(layout.payload_end)),
        field,
        _out_of_order(offset, end, layout),
    ]
    for code, failed in reversed(list(enumerate(tests, start=1))):
        kinds[failed] = code
    order_code = ENTRY_KINDS.index(TBL_KIND_INDEX_ORDER)
    misplaced = kinds == order_code
    disputed = _disputed(offset, end, misplaced) | _passed_over(offset, end, misplaced, layout)
    kinds[(kinds == 0) & disputed] = order_code
    # A misplaced entry that names bytes of another sample's payload is an overlap.
    misplaced = kinds == ENTRY_KINDS.index(TBL_KIND_INDEX_ORDER)
    placed = misplaced | (kinds == 0) | (kinds == ENTRY_KINDS.index(TBL_KIND_INDEX_FIELD))
    kinds[misplaced & _overlapping(offset, end, placed)] = ENTRY_KINDS.index(TBL_KIND_INDEX_OVERLAP)
    kinds.flags.writeable = False
    return kinds


def _out_of_order(
    start: npt.NDArray[np.uint64], end: npt.NDArray[np.uint64], layout: Layout
) -> npt.NDArray[np.bool_]:
    """The entries on either side of each place where payloads are not back to back in
    index order.

    The writer puts sample ``i + 1``'s payload where sample ``i``'s ends (tbl.md §1.3). At
    a broken boundary either neighbour may be the moved, swapped or copied entry (an empty
    sample makes both look right on one side), so both are damage: an entry that could
    name another sample's bytes is never read as its own. Bytes between the last payload
    and the end of the payload area are the tail's damage, not the last sample's.

    A run of entries can chain with each other and still be displaced (one entry copied
    over its predecessor shifts the rest by a sample), so each entry must also sit where
    the payloads before it put it: at the index's end plus their sizes, or, when the last
    payload ends the payload area, at that end less its own and the later sizes.
    """
    if len(start) == 0:
        return np.zeros(0, dtype=bool)
    left = start == np.concatenate([[np.uint64(layout.index_end)], end[:-1]])
    right = np.concatenate([left[1:], [True]])
    sizes = (end - start).astype(np.float64)  # float: sums of u64 sizes may not fit in u64
    before = np.concatenate([[0.0], np.cumsum(sizes)[:-1]])
    from_start = start.astype(np.float64) == layout.index_end + before
    after = np.cumsum(sizes[::-1])[::-1]
    from_end = (start.astype(np.float64) == layout.payload_end - after) & bool(
        end[-1] == layout.payload_end
    )
    blamed: npt.NDArray[np.bool_] = ~left | ~right | ~(from_start | from_end)
    return blamed


def _passed_over(
    start: npt.NDArray[np.uint64],
    end: npt.NDArray[np.uint64],
    misplaced: npt.NDArray[np.bool_],
    layout: Layout,
) -> npt.NDArray[np.bool_]:
    """The entries between each misplaced empty entry and the entries where its offset
    would sit in the chain of payloads: a moved empty payload touches no other payload, yet
    whatever it was swapped with lies between where it is and where it points (a misplaced
    payload of some bytes touches its partner's: :func:`_disputed`)."""
    chosen = np.flatnonzero(misplaced & (end == start))
    found = np.zeros(len(start), dtype=bool)
    if len(chosen) == 0:
        return found
    sizes = (end - start).astype(np.float64)  # float: sums of u64 sizes may not fit in u64
    expected = layout.index_end + np.concatenate([[0.0], np.cumsum(sizes)[:-1]])
    at = start[chosen].astype(np.float64)
    low = np.maximum(np.searchsorted(expected, at, side="left") - 1, 0)
    high = np.minimum(np.searchsorted(expected, at, side="right"), len(start) - 1)
    first, last = np.minimum(chosen, low), np.maximum(chosen, high)
    marks = np.zeros(len(start) + 1, dtype=np.int64)
    np.add.at(marks, first, 1)
    np.add.at(marks, last + 1, -1)
    found[:] = np.cumsum(marks[:-1]) > 0
    return found


def _disputed(
    start: npt.NDArray[np.uint64], end: npt.NDArray[np.uint64], misplaced: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    """The entries whose payload a misplaced entry's payload touches: either may hold the
    other's place (entries of empty samples chain at one offset, so a swap among them can
    look right on both sides of a sound-looking entry). An empty payload counts as the
    point where it sits, which touches the payload that ends there and the one that starts
    there (either may be its partner): coordinates are doubled, ``[s, e)`` is ``[2s, 2e)``
    and ``[s, s)`` is ``[2s - 1, 2s + 1)``."""
    doubled = start.astype(np.float64) * 2  # float: 2 * a u64 offset may not fit in u64
    empty = end == start
    low = np.where(empty, doubled - 1, doubled)
    high = np.where(empty, doubled + 1, end.astype(np.float64) * 2)
    chosen = np.flatnonzero(misplaced)
    if len(chosen) == 0:
        return np.zeros(len(start), dtype=bool)
    order = chosen[np.argsort(low[chosen], kind="stable")]
    starts, reach = low[order], np.maximum.accumulate(high[order])
    # The misplaced payloads starting before each one's end: does one reach past its start?
    before = np.searchsorted(starts, high, side="left")
    found = np.zeros(len(start), dtype=bool)
    some = before > 0
    found[some] = reach[before[some] - 1] > low[some]
    return found


def _overlapping(
    start: npt.NDArray[np.uint64], end: npt.NDArray[np.uint64], among: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    """Whether each entry's payload (of those ``among``) shares bytes with another's."""
    found = np.zeros(len(start), dtype=bool)
    chosen = np.flatnonzero(among & (end > start))
    order = chosen[np.argsort(start[chosen], kind="stable")]
    first, last = start[order], end[order]
    reach = np.maximum.accumulate(last)
    earlier = np.concatenate([[np.uint64(0)], reach[:-1]]) > first
    later = np.concatenate([first[1:], [np.iinfo(np.uint64).max]]) < last
    found[order] = earlier | later
    return found


def tail_damage(layout: Layout, index: bytes, kinds: U8Array) -> CorruptTblError | None:
    """Bytes after the last payload (or after the metadata section) that no sample or
    block accounts for, as one ``trailing_garbage`` damage: a file ends with its last
    payload, or with its metadata section (tbl.md §1)."""
    table = np.frombuffer(index, dtype=ENTRY_DTYPE)
    if len(table) and kinds[-1]:
        return None  # the last entry is damaged: where the payloads end is unknown
    last = int(table["offset"][-1]) + int(table["size"][-1]) if len(table) else layout.index_end
    if last < layout.payload_end:
        start, stop, after = last, layout.payload_end, "the last sample's payload"
    elif layout.has_metadata and layout.metadata_damage is None:
        start = layout.header.metadata_offset + layout.header.metadata_size
        stop, after = layout.file_size, "the metadata section"
    else:
        return None
    if start >= stop:
        return None
    return CorruptTblError(
        f"{layout.path}: {stop - start} bytes at offset {start} follow {after} and belong to "
        f"no sample ({KIND_TRAILING_GARBAGE}); a TBL file ends with its last payload or its "
        "metadata section, so the file has bytes appended (another file?) or a damaged "
        "index",
        path=layout.path,
        offset=start,
        record_index=len(table),
        kind=KIND_TRAILING_GARBAGE,
        field="size" if len(table) else "num_samples",
    )


def entry_error(layout: Layout, index: bytes, i: int, code: int) -> CorruptTblError:
    """The error for sample ``i``, whose index entry failed test ``code``."""
    offset, size, usize, _, _, fmt, flags, _ = ENTRY.unpack_from(index, ENTRY_SIZE * i)
    kind = ENTRY_KINDS[code]
    field = "offset"
    if kind == KIND_TRUNCATED_DATA:
        why = (
            f"its payload [{offset}, {offset + size}) runs past the end of the file "
            f"({layout.file_size} bytes): the file is truncated"
        )
    elif kind == TBL_KIND_INDEX_BOUNDS:
        why = (
            f"its payload [{offset}, {offset + size}) lies outside the payload area "
            f"[{layout.index_end}, {layout.payload_end})"
        )
    elif kind == TBL_KIND_INDEX_OVERLAP:
        why = f"its payload [{offset}, {offset + size}) overlaps another sample's"
    elif kind == TBL_KIND_INDEX_ORDER:
        why = (
            f"its payload [{offset}, {offset + size}) is not where the payloads back to back "
            "in index order put it (after the previous sample's, before the next one's): the "
            "entry was moved, swapped or copied, so it may name another sample's bytes"
        )
    else:
        field, why = _field_problem(layout, size, usize, fmt, flags)
    entry_offset = HEADER_SIZE + ENTRY_SIZE * i
    return CorruptTblError(
        f"{layout.path}: sample {i} (index entry at offset {entry_offset}) is damaged "
        f"({kind}, field {field!r}): {why}",
        path=layout.path,
        offset=entry_offset,
        record_index=i,
        kind=kind,
        field=field,
    )


def _field_problem(layout: Layout, size: int, usize: int, fmt: int, flags: int) -> tuple[str, str]:
    if fmt >= len(FORMATS):
        return "format", f"format code {fmt} is not one of 0..{len(FORMATS) - 1}"
    if flags & ~_KNOWN_SAMPLE_FLAGS:
        return "flags", f"flags {flags:#x} set bits other than 0, 1 and 2"
    if not flags & SAMPLE_COMPRESSED:
        return "uncompressed_size", (
            f"an uncompressed sample of {size} bytes claims {usize} uncompressed bytes"
        )
    if not layout.header.flags & FILE_COMPRESSED:
        return "flags", "the sample is compressed but the header's compressed flag is clear"
    if usize > layout.max_record_bytes:
        return "uncompressed_size", (
            f"its LZ4 block claims {usize} uncompressed bytes, more than "
            f"max_record_bytes={layout.max_record_bytes}; pass a larger max_record_bytes if "
            "the file is genuine"
        )
    return "uncompressed_size", (
        f"an LZ4 block of {size} bytes cannot expand to {usize} bytes (at most "
        f"{LZ4_MAX_RATIO} times its size)"
    )


@dataclass(frozen=True)
class MetadataBlocks:
    """Where each sample's first metadata block lies, and any damage that ended the scan."""

    blocks: dict[int, tuple[int, int, int]]  # sample -> (type code, data offset, size)
    damage: CorruptTblError | None


def scan_metadata(layout: Layout, view: FileView) -> MetadataBlocks:
    """Walk the metadata section's blocks in ``view`` (the whole file, of which the section
    is read once); a sample's first block is the one that counts."""
    if not layout.has_metadata:
        return MetadataBlocks({}, None)
    if layout.metadata_damage is not None:
        return MetadataBlocks({}, layout.metadata_damage)
    start = layout.header.metadata_offset
    end = start + layout.header.metadata_size  # checked against the file size at open
    section = view[start:end]
    blocks: dict[int, tuple[int, int, int]] = {}
    pos = start
    while pos < end:
        problem = _block_problem(layout, section, pos - start, end - start)
        if problem is not None:
            kind, field, why = problem
            return MetadataBlocks(
                blocks,
                CorruptTblError(
                    f"{layout.path}: the metadata block at offset {pos} is damaged ({kind}, "
                    f"field {field!r}): {why}",
                    path=layout.path,
                    offset=pos,
                    record_index=0,
                    kind=kind,
                    field=field,
                ),
            )
        sample, length, code, _ = METADATA_BLOCK.unpack_from(section, pos - start)
        blocks.setdefault(sample, (code, pos + METADATA_BLOCK.size, length))
        pos += METADATA_BLOCK.size + length
    return MetadataBlocks(blocks, None)


def _block_problem(
    layout: Layout, section: bytes, pos: int, end: int
) -> tuple[str, str, str] | None:
    """(kind, field, why) of the block at ``pos`` of the section of ``end`` bytes, or None
    when it is sound."""
    if end - pos < METADATA_BLOCK.size:
        return (
            TBL_KIND_METADATA_OVERRUN,
            "size",
            f"{end - pos} bytes remain, fewer than a {METADATA_BLOCK.size}-byte block header",
        )
    sample, length, code, _ = METADATA_BLOCK.unpack_from(section, pos)
    if length > end - pos - METADATA_BLOCK.size:
        return (
            TBL_KIND_METADATA_OVERRUN,
            "size",
            f"its {length} bytes run past the end of the section at "
            f"{layout.header.metadata_offset + end}",
        )
    if sample >= layout.num_samples:
        why = f"it names sample {sample}; the file has {layout.num_samples}"
        return TBL_KIND_METADATA_FIELD, "sample_index", why
    if code not in METADATA_TYPES:
        return (
            TBL_KIND_METADATA_FIELD,
            "type",
            f"type {code} is not one of {sorted(METADATA_TYPES)}",
        )
    return None


RAW_U8_CODE = FORMATS.index("raw_u8")


def raw_view_problem(table: npt.NDArray[np.void], kinds: U8Array) -> str | None:
    """Why the samples cannot be viewed as one (N, H, W, 3) array, or None (tbl.md §7)."""
    if len(table) == 0:
        return "the file has no samples"
    if kinds.any():
        return f"sample {int(np.flatnonzero(kinds)[0])} has a damaged index entry"
    if (table["format"] != RAW_U8_CODE).any():
        return f"sample {int(np.flatnonzero(table['format'] != RAW_U8_CODE)[0])} is not raw_u8"
    if (table["flags"] & SAMPLE_COMPRESSED).any():
        return "some samples are LZ4-compressed"
    width, height = table["width"], table["height"]
    if (width != width[0]).any() or (height != height[0]).any():
        return "the samples do not share one width and height"
    frame = int(width[0]) * int(height[0]) * 3
    if (table["size"] != frame).any():
        return f"some samples do not hold width * height * 3 = {frame} bytes"
    expected = table["offset"][0] + np.arange(len(table), dtype=np.uint64) * np.uint64(frame)
    if (table["offset"] != expected).any():
        return "the payloads are not back to back in index order"
    return None
