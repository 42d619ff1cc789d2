"""Frames read in batches from a buffer (specs/tfrecord.md, sections 4, 5 and 10).

Files of at least eight frames take the batched path: frames found by a walk over the
buffer, then every length CRC and data CRC of the batch checked at once (one expected
length CRC for frames of one length, a table for lengths below 2**16, table lookups per
byte above).  Files are built here with the reference frame writer of test_tfrecord, and
expected results come from it and from the crc32c package, never from the reader.
"""

from __future__ import annotations

import random
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from crc32c import crc32c
from hypothesis import example, given, settings
from hypothesis import strategies as st

from readplan import tfrecord
from readplan.errors import CorruptRecordError
from readplan.records._crc import mask, masked_length_crcs
from readplan.tfrecord import CorruptionReport, RecordFile
from tests.reference_models import tfrecord_frame

# Sizes that stay in one buffer, that straddle the 512 KiB and 2 MiB reads, that reach the
# large-record path (32 KiB), and lengths on both sides of 2**16.
SIZE_KINDS = {
    "uniform": None,
    "small": (0, 300),
    "mid": (1_000, 10_000),
    "around_large": (30_000, 36_000),
    "around_2_16": (65_000, 66_000),
}


@st.composite
def record_lists(draw: st.DrawFn, *, min_count: int = 8, max_count: int = 40) -> list[bytes]:
    """Records whose sizes follow one of SIZE_KINDS; contents from a drawn seed."""
    kind = draw(st.sampled_from(sorted(SIZE_KINDS)))
    count = draw(st.integers(min_count, max_count))
    rng = random.Random(draw(st.integers(0, 2**32)))
    bounds = SIZE_KINDS[kind]
    if bounds is None:
        size = draw(st.integers(0, 2_000))
        sizes = [size] * count
    else:
        sizes = [rng.randint(*bounds) for _ in range(count)]
    return [rng.randbytes(size) for size in sizes]


def temp_file(data: bytes) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.tfrecord"
        path.write_bytes(data)
        yield path


def starts_of(records: list[bytes]) -> list[int]:
    """Offset of each frame, then the file size."""
    starts = [0]
    for record in records:
        starts.append(starts[-1] + len(record) + 16)
    return starts


@settings(max_examples=60)
@given(st.lists(st.integers(0, 2**63 - 1), min_size=1, max_size=20), st.integers(0, 2))
@example([65_535, 65_536], 1)
@example([2**16 - 1], 0)
@example([2**32 - 1, 2**32], 2)
def test_masked_length_crcs_match_crc32c(lengths: list[int], scale: int) -> None:
    # scale 0: all below 2**16 (table); 1: below 2**32 (four lookups); 2: any (eight).
    scaled = [length % (1 << (16, 32, 63)[scale]) for length in lengths]
    expected = [mask(crc32c(struct.pack("<Q", length))) for length in scaled]
    computed = masked_length_crcs(np.array(scaled, dtype=np.int64))
    assert computed.tolist() == expected


@settings(max_examples=40)
@given(record_lists(), st.booleans())
def test_round_trip_of_batches(records: list[bytes], verify: bool) -> None:
    for path in temp_file(b"".join(tfrecord_frame(r) for r in records)):
        assert list(tfrecord.read(path, verify=verify)) == records
        assert tfrecord.count(path, use_index=False) == len(records)


@settings(max_examples=8)
@given(st.integers(0, 2**32), st.sampled_from(["mid", "mixed", "wide"]))
def test_round_trip_across_read_boundaries(seed: int, sizes: str) -> None:
    """About 3 MiB of records: frames cut by the ends of 512 KiB and 2 MiB reads, and
    (mixed) frames of 2**16 bytes or more among smaller ones in one buffer."""
    rng = random.Random(seed)

    def size() -> int:
        if sizes == "mid" or (sizes == "mixed" and rng.random() < 0.9):
            return rng.randint(1_000, 10_000)
        return rng.randint(65_000, 70_000) if sizes == "mixed" else rng.randint(0, 40_000)

    records: list[bytes] = []
    while sum(map(len, records)) < 3 << 20:
        records.append(rng.randbytes(size()))
    for path in temp_file(b"".join(tfrecord_frame(r) for r in records)):
        assert list(tfrecord.read(path)) == records
        assert tfrecord.count(path, use_index=False) == len(records)
        skip = rng.randrange(len(records))
        take = rng.randrange(len(records) - skip + 1)
        with RecordFile(path) as rf:
            assert list(rf.read(skip, take)) == records[skip : skip + take]


@settings(max_examples=100)
@given(record_lists(max_count=24), st.data())
def test_damage_anywhere_is_reported_at_its_frame(
    records: list[bytes], data: st.DataObject
) -> None:
    encoded = bytearray(b"".join(tfrecord_frame(r) for r in records))
    starts = starts_of(records)
    damaged = data.draw(st.integers(0, len(records) - 1))
    # Half the draws hit the 12-byte header, which the data CRC does not cover.
    within = data.draw(st.integers(0, 11) | st.integers(0, len(records[damaged]) + 15))
    encoded[starts[damaged] + within] ^= 1 << data.draw(st.integers(0, 7))
    for path in temp_file(bytes(encoded)):
        delivered: list[bytes] = []
        with pytest.raises(CorruptRecordError) as raised:
            delivered.extend(tfrecord.read(path))
        assert delivered == records[:damaged]
        assert (raised.value.offset, raised.value.record_index) == (starts[damaged], damaged)
        assert raised.value.path == str(path)
        report = CorruptionReport()
        list(tfrecord.read(path, on_corruption="skip", report=report))
        assert report.events[0].offset == starts[damaged]
        if within < 12:
            with pytest.raises(CorruptRecordError) as counted:
                tfrecord.count(path)
            assert counted.value.offset == starts[damaged]
        else:
            assert tfrecord.count(path) == len(records)


@settings(max_examples=60)
@given(st.integers(0, 3_000), st.integers(9, 40), st.data(), st.booleans(), st.integers(0, 7))
def test_damage_among_frames_of_one_length(
    size: int, count: int, data: st.DataObject, in_header: bool, bit: int
) -> None:
    """Frames of one length share one expected length CRC, and their stored CRCs are read
    in place; each frame's length CRC and data CRC are still checked."""
    records = [bytes([k % 256]) * size for k in range(count)]
    damaged = data.draw(st.integers(0, count - 1))
    # The stored length CRC, or the data and its CRC.
    within = data.draw(st.integers(8, 11) if in_header else st.integers(12, size + 15))
    encoded = bytearray(b"".join(tfrecord_frame(r) for r in records))
    encoded[damaged * (size + 16) + within] ^= 1 << bit
    kind = tfrecord.KIND_HEADER_CRC if in_header else tfrecord.KIND_DATA_CRC
    for path in temp_file(bytes(encoded)):
        delivered: list[bytes] = []
        with pytest.raises(CorruptRecordError) as raised:
            delivered.extend(tfrecord.read(path))
        assert delivered == records[:damaged]
        assert (raised.value.offset, raised.value.kind) == (damaged * (size + 16), kind)
        if in_header:
            with pytest.raises(CorruptRecordError):
                tfrecord.count(path)
        else:
            assert tfrecord.count(path) == count


few_small_records = st.one_of(
    st.lists(st.binary(max_size=60), min_size=8, max_size=12),
    st.tuples(st.binary(max_size=60), st.integers(8, 12)).map(lambda pair: [pair[0]] * pair[1]),
)


@settings(max_examples=25)
@given(few_small_records)
def test_truncation_at_every_byte(records: list[bytes]) -> None:
    encoded = b"".join(tfrecord_frame(r) for r in records)
    starts = starts_of(records)
    for cut in range(len(encoded)):
        complete = max(i for i, start in enumerate(starts) if start <= cut)
        for path in temp_file(encoded[:cut]):
            delivered: list[bytes] = []
            if cut in starts:
                delivered.extend(tfrecord.read(path))
            else:
                with pytest.raises(CorruptRecordError) as raised:
                    delivered.extend(tfrecord.read(path))
                assert raised.value.offset == starts[complete]
                assert raised.value.record_index == complete
            assert delivered == records[:complete]
