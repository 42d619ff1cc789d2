"""GZIP/ZLIB TFRecord files deliver only records whose bytes the stream's own checksums
confirm (specs/tfrecord.md §5): gzip's CRC-32 and ISIZE, zlib's Adler-32.

The hostile files here are valid deflate streams of frames that were never written, ending
with the trailer of the stream that was: zlib finds the mismatch only at the end, after
every never-written frame has inflated (what a flipped bit in a deflate stream can do).
"""

from __future__ import annotations

import contextlib
import tracemalloc
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import tfrecord
from readplan.errors import CorruptRecordError
from readplan.tfrecord import KIND_INFLATE, CorruptionReport, RecordFile
from tests.reference_models import tfrecord_frame

# Large enough (8 MB of stream) that a reader delivers records long before the end.
WRITTEN = [b"written %d " % i * 200 for i in range(4_000)]
NEVER = [b"never written %d " % i * 150 for i in range(4_000)]


def _stream(records: list[bytes]) -> bytes:
    return b"".join(tfrecord_frame(record) for record in records)


def _gzip_with_trailer_of(records: list[bytes], trailer_of: list[bytes]) -> bytes:
    """A gzip member holding ``records``' frames with ``trailer_of``'s CRC-32 and size."""
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = deflate.compress(_stream(records)) + deflate.flush()
    wanted = _stream(trailer_of)
    trailer = zlib.crc32(wanted).to_bytes(4, "little") + len(wanted).to_bytes(4, "little")
    return bytes.fromhex("1f8b0800000000000003") + body + trailer


def _zlib_with_checksum_of(records: list[bytes], checksum_of: list[bytes]) -> bytes:
    compressed = zlib.compress(_stream(records))
    return compressed[:-4] + zlib.adler32(_stream(checksum_of)).to_bytes(4, "big")


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_records_no_checksum_confirms_are_never_delivered(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "f"
    if compression == "GZIP":
        path.write_bytes(_gzip_with_trailer_of(NEVER, WRITTEN))
    else:
        path.write_bytes(_zlib_with_checksum_of(NEVER, WRITTEN))
    delivered: list[bytes] = []
    with pytest.raises(CorruptRecordError) as err:
        delivered.extend(tfrecord.read(path, compression=compression))
    assert delivered == []
    assert err.value.kind == KIND_INFLATE
    assert "incorrect data check" in str(err.value)
    report = CorruptionReport()
    assert list(tfrecord.read(path, compression="auto", on_corruption="skip", report=report)) == []
    assert [event.kind for event in report] == [KIND_INFLATE]
    with pytest.raises(CorruptRecordError):
        tfrecord.count(path, compression=compression)
    with pytest.raises(CorruptRecordError):
        RecordFile(path, compression=compression)[0]


def test_a_sound_member_is_delivered_before_a_damaged_one(tmp_path: Path) -> None:
    sound = tmp_path / "sound.gz"
    tfrecord.write(sound, WRITTEN[:5], compression="GZIP")
    path = tmp_path / "f.gz"
    path.write_bytes(sound.read_bytes() + _gzip_with_trailer_of(NEVER, WRITTEN))
    delivered: list[bytes] = []
    with pytest.raises(CorruptRecordError) as err:
        delivered.extend(tfrecord.read(path, compression="GZIP"))
    assert delivered == WRITTEN[:5]
    assert (err.value.kind, err.value.record_index) == (KIND_INFLATE, 5)
    report = CorruptionReport()
    assert (
        list(tfrecord.read(path, compression="GZIP", on_corruption="skip", report=report))
        == (WRITTEN[:5])
    )
    (event,) = report.events
    assert event.compressed_offset is not None
    assert event.compressed_offset >= len(sound.read_bytes())


def test_a_wrong_size_in_the_trailer_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "f.gz"
    tfrecord.write(path, WRITTEN, compression="GZIP")
    raw = bytearray(path.read_bytes())
    raw[-4:] = (len(_stream(WRITTEN)) + 1).to_bytes(4, "little")  # ISIZE
    path.write_bytes(bytes(raw))
    delivered: list[bytes] = []
    with pytest.raises(CorruptRecordError, match="incorrect length check"):
        delivered.extend(tfrecord.read(path, compression="GZIP"))
    assert delivered == []


def test_confirming_costs_no_memory(tmp_path: Path) -> None:
    path = tmp_path / "big.gz"
    records = [bytes(1 << 16)] * 512  # 32 MiB of stream
    tfrecord.write(path, records, compression="GZIP")
    tracemalloc.start()
    try:
        total = sum(len(record) for record in tfrecord.read(path, compression="GZIP"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == 512 << 16
    assert peak < 8 << 20


@settings(max_examples=60, deadline=None)
@given(flips=st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 7)), min_size=1, max_size=3))
def test_a_flipped_bit_never_delivers_an_unconfirmed_record(
    tmp_path_factory: pytest.TempPathFactory, flips: list[tuple[int, int]]
) -> None:
    """Records whose payloads hold frames: a flip that re-aligns the parser onto them
    used to deliver those frames as records until the trailer's check failed."""
    inner = [tfrecord_frame(b"inner %d" % i) * 3 for i in range(300)]
    records = [b"payload %d " % i + inner[i] for i in range(300)]
    path = tmp_path_factory.mktemp("flip") / "f.gz"
    tfrecord.write(path, records, compression="GZIP")
    raw = bytearray(path.read_bytes())
    for position, bit in flips:
        raw[10 + position % (len(raw) - 10)] ^= 1 << bit
    path.write_bytes(bytes(raw))
    try:
        sound = zlib.decompress(bytes(raw), 31) == _stream(records)
    except zlib.error:
        sound = False
    for mode in ("raise", "skip"):
        delivered: list[bytes] = []
        with contextlib.suppress(CorruptRecordError):
            delivered.extend(tfrecord.read(path, compression="GZIP", on_corruption=mode))
        assert delivered == (records if sound else [])
