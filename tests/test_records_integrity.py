"""Stale indexes, records that were never written, and decompression bombs.

Each test here reproduces a way an earlier reader returned a wrong result or ran out of
memory without a word (specs/tfrecord.md, sections 5, 6 and 8).
"""

from __future__ import annotations

import struct
import tracemalloc
import zlib
from pathlib import Path

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import tfrecord
from readplan.errors import ConfigError, CorruptRecordError, IndexFileError, ReadplanError
from readplan.index import build_index
from readplan.records._crc import mask
from readplan.tfrecord import (
    KIND_ABSURD_LENGTH,
    KIND_DATA_CRC,
    KIND_HEADER_CRC,
    CorruptionReport,
    RecordFile,
)
from tests.assertions import is_subsequence
from tests.reference_models import tfrecord_frame

# More than the 64 KiB at each end of a data file that an index's binding covers.
_PAD = bytes(70_000)


# -------------------------------------------------------------------- stale indexes
def _split_record(records: list[bytes], k: int, cut: int) -> list[bytes]:
    """``records`` with record ``k`` replaced by two records whose frames fill its frame."""
    whole = records[k]
    first = whole[:cut]
    second = whole[cut + 16 :]
    return [*records[:k], first, second, *records[k + 1 :]]


def _same_size_rewrite(path: Path, records: list[bytes], k: int, cut: int) -> list[bytes]:
    """Index ``records`` at ``path``, then rewrite the file with record ``k`` split in two."""
    path.write_bytes(b"".join(tfrecord_frame(r) for r in records))
    build_index(path)
    size = path.stat().st_size
    rewritten = _split_record(records, k, cut)
    path.write_bytes(b"".join(tfrecord_frame(r) for r in rewritten))
    assert path.stat().st_size == size
    return rewritten


@pytest.fixture
def stale(tmp_path: Path) -> tuple[Path, list[bytes]]:
    """300 records indexed, then 301 records of the same size with both ends unchanged."""
    records = [_PAD, *(bytes([i % 251]) * 1000 for i in range(298)), _PAD]
    path = tmp_path / "f.tfrecord"
    return path, _same_size_rewrite(path, records, 150, 500)


def test_count_refuses_an_index_stale_after_a_same_size_rewrite(
    stale: tuple[Path, list[bytes]],
) -> None:
    path, _ = stale
    with pytest.raises(IndexFileError) as raised:
        tfrecord.count(path)
    assert raised.value.field == "offsets"
    assert "record 150" in str(raised.value)
    assert tfrecord.count(path, use_index=False) == 301


def test_record_file_refuses_a_stale_index(stale: tuple[Path, list[bytes]]) -> None:
    path, records = stale
    with RecordFile(path) as rf:
        assert rf.indexed
        with pytest.raises(IndexFileError):
            list(rf.read())
        with pytest.raises(IndexFileError):
            list(rf.read(100, 100))
        with pytest.raises(IndexFileError):
            rf[150]
        # Runs that do not touch the rewritten frame are what the index says they are.
        assert list(rf.read(0, 150)) == records[:150]
        assert list(rf.read(152, 148)) == records[153:]


@settings(max_examples=40, deadline=None)
@given(
    # Small frames have their indexed headers read in windows, large ones one by one.
    lengths=st.lists(
        st.one_of(st.integers(min_value=40, max_value=300), st.integers(5_000, 20_000)),
        min_size=2,
        max_size=12,
    ),
    pick=st.integers(min_value=0),
    cut=st.integers(min_value=0, max_value=24),
    compression=st.sampled_from([None, "GZIP"]),
)
def test_every_indexed_read_sees_a_same_size_rewrite(
    tmp_path_factory: pytest.TempPathFactory,
    lengths: list[int],
    pick: int,
    cut: int,
    compression: str | None,
) -> None:
    path = tmp_path_factory.mktemp("stale") / "f.tfrecord"
    records = [bytes([i]) * n for i, n in enumerate(lengths)]
    k = pick % len(records)
    rewritten = _split_record(records, k, cut)
    tfrecord.write(path, records, compression=compression)
    build_index(path, compression=compression)
    index = path.with_name(path.name + ".index").read_bytes()
    tfrecord.write(path, rewritten, compression=compression)
    # Put the old index back as if the rewrite had kept the binding (same size and ends).
    path.with_name(path.name + ".index").write_bytes(_rebind(index, path))
    with pytest.raises(IndexFileError):
        tfrecord.count(path, compression=compression)
    with RecordFile(path, compression=compression) as rf:
        for skip in range(len(records)):
            for take in range(len(records) - skip + 1):
                try:
                    got = list(rf.read(skip, take))
                except IndexFileError:
                    assert skip <= k < skip + take
                    continue
                assert got == records[skip : skip + take]
                assert not skip <= k < skip + take


def _rebind(index: bytes, data: Path) -> bytes:
    """``index`` with its binding fields recomputed for ``data`` (a forged, stale sidecar)."""
    raw = data.read_bytes()
    span = min(len(raw), 1 << 16)
    binding = crc32c(raw[len(raw) - span :], crc32c(raw[:span]))
    fields = list(struct.unpack("<8sIIQQQIIII", index[:56]))
    fields[4] = len(raw)
    if fields[2] == 0:
        fields[5] = len(raw)
    fields[6] = binding
    header = struct.pack("<8sIIQQQIIII", *fields[:8], 0, 0)
    fields[8] = crc32c(header[:48])
    return struct.pack("<8sIIQQQIIII", *fields) + index[56:]


# ------------------------------------------------------------ never-written records
def _flipped(raw: bytes, position: int, bit: int) -> bytes:
    damaged = bytearray(raw)
    damaged[position] ^= bit
    return bytes(damaged)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_skip_mode_never_returns_inflated_copies(tmp_path: Path, compression: str) -> None:
    """Repetitive records: a flipped bit in the deflate stream can inflate to copies of
    earlier frames whose CRCs verify; skip mode must stop at the damage instead."""
    records = [b"record-%03d-" % (i % 7) * 8 for i in range(200)]
    path = tmp_path / "f.tfrecord"
    tfrecord.write(path, records, compression=compression)
    raw = path.read_bytes()
    for position in range(len(raw)):
        for bit in (1, 8, 64):
            path.write_bytes(_flipped(raw, position, bit))
            report = CorruptionReport()
            try:
                got = list(
                    tfrecord.read(
                        path, compression=compression, on_corruption="skip", report=report
                    )
                )
            except ReadplanError:
                continue
            assert is_subsequence(got, records), (position, bit)
            for event in report:
                assert event.resume_offset is None


def test_compressed_skip_mode_stops_at_a_bad_data_crc(tmp_path: Path) -> None:
    stream = b"".join(tfrecord_frame(r) for r in (b"one", b"two", b"three"))
    stream = stream.replace(b"two", b"twO")
    path = tmp_path / "f.tfrecord.zz"
    path.write_bytes(zlib.compress(stream))
    report = CorruptionReport()
    got = list(tfrecord.read(path, compression="ZLIB", on_corruption="skip", report=report))
    assert got == [b"one"]
    (event,) = report.events
    assert event.kind == KIND_DATA_CRC
    assert event.resume_offset is None
    assert "reading stops here" in event.message


def test_frame_embedded_in_a_damaged_payload_is_not_a_record(tmp_path: Path) -> None:
    inner = tfrecord_frame(b"never written as a record")
    records = [b"first", b"x" * 10 + inner + b"y" * 10, b"after", b"last"]
    raw = bytearray(b"".join(tfrecord_frame(r) for r in records))
    raw[len(tfrecord_frame(b"first"))] ^= 0x40  # the length field of record 1
    path = tmp_path / "f.tfrecord"
    path.write_bytes(bytes(raw))
    report = CorruptionReport()
    got = list(tfrecord.read(path, on_corruption="skip", report=report))
    assert got == [b"first", b"after", b"last"]
    (event,) = report.events
    assert event.kind == KIND_HEADER_CRC
    assert event.resume_offset == len(tfrecord_frame(b"first")) + len(tfrecord_frame(records[1]))


def test_embedded_frames_ending_a_damaged_payload_are_not_records(tmp_path: Path) -> None:
    """A payload that is itself a TFRecord stream: its frames chain up to its own end."""
    nested = b"".join(tfrecord_frame(b"nested %d" % i) for i in range(5))
    records = [b"first", nested, b"after", b"last"]
    raw = bytearray(b"".join(tfrecord_frame(r) for r in records))
    raw[len(tfrecord_frame(b"first")) + 8] ^= 0x01  # the length CRC of record 1
    path = tmp_path / "f.tfrecord"
    path.write_bytes(bytes(raw))
    assert list(tfrecord.read(path, on_corruption="skip")) == [b"first", b"after", b"last"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.binary(max_size=40), min_size=1, max_size=8),
    st.data(),
)
def test_skip_mode_delivers_a_subsequence_with_nested_frames(
    tmp_path_factory: pytest.TempPathFactory, plain: list[bytes], data: st.DataObject
) -> None:
    """Records that hold whole frames, any one byte damaged: only written records come out."""
    records = [tfrecord_frame(r) if i % 2 else r for i, r in enumerate(plain)]
    raw = bytearray(b"".join(tfrecord_frame(r) for r in records))
    position = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
    raw[position] ^= data.draw(st.integers(min_value=1, max_value=255))
    path = tmp_path_factory.mktemp("nested") / "f.tfrecord"
    path.write_bytes(bytes(raw))
    report = CorruptionReport()
    got = list(tfrecord.read(path, on_corruption="skip", report=report))
    assert is_subsequence(got, records)


# -------------------------------------------------------------- decompression bombs
def _gzip_bomb(
    path: Path, declared: int, zeros_mib: int, *, crc: int = 0, trailer: bool = False
) -> None:
    """A GZIP stream: one frame header declaring ``declared`` bytes, then zeros.

    Built from one 16 MiB block of zeros compressed once and repeated (each block ends in
    a full flush, so it stands alone), so that writing it costs milliseconds.  With
    ``trailer`` the member ends with its CRC-32 and size, as a sound file does.
    """
    head = struct.pack("<Q", declared)
    start = zlib.compressobj(6, zlib.DEFLATED, -15)
    opening = start.compress(head + struct.pack("<I", mask(crc32c(head))))
    opening += start.flush(zlib.Z_FULL_FLUSH)
    block = zlib.compressobj(6, zlib.DEFLATED, -15)
    zeros = block.compress(bytes(16 << 20)) + block.flush(zlib.Z_FULL_FLUSH)
    end = zlib.compressobj(6, zlib.DEFLATED, -15)
    closing = end.compress(struct.pack("<I", crc)) + end.flush(zlib.Z_FINISH)
    with open(path, "wb") as out:
        out.write(bytes.fromhex("1f8b0800000000000003") + opening)
        for _ in range(zeros_mib // 16):
            out.write(zeros)
        out.write(closing)
        if trailer:
            whole = head + struct.pack("<I", mask(crc32c(head)))
            check = zlib.crc32(whole)
            for _ in range(zeros_mib // 16):
                check = zlib.crc32(bytes(16 << 20), check)
            check = zlib.crc32(struct.pack("<I", crc), check)
            total = len(whole) + (zeros_mib << 20) + 4
            out.write(struct.pack("<II", check, total & 0xFFFFFFFF))


def _peak_bytes(action: object) -> tuple[int, BaseException | None]:
    tracemalloc.start()
    raised: BaseException | None = None
    try:
        action()  # type: ignore[operator]
    except ReadplanError as err:
        raised = err
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak, raised


def test_gzip_bomb_is_refused_by_the_default_cap(tmp_path: Path) -> None:
    path = tmp_path / "bomb.tfrecord.gz"
    _gzip_bomb(path, 2_000_000_000, 1904, trailer=True)  # a sound stream, checksums right
    assert 1_500_000 < path.stat().st_size < 2_500_000
    for action in (
        lambda: list(tfrecord.read(path, compression="GZIP")),
        lambda: list(tfrecord.read(path, compression="auto", on_corruption="skip")),
        lambda: tfrecord.count(path, compression="GZIP"),
        lambda: list(RecordFile(path, compression="GZIP").read()),
    ):
        peak, raised = _peak_bytes(action)
        assert peak < 8 << 20
        if raised is not None:
            assert isinstance(raised, CorruptRecordError)
            assert raised.kind == KIND_ABSURD_LENGTH
            assert "max_record_bytes" in str(raised)


def test_large_compressed_record_is_verified_before_it_is_built(tmp_path: Path) -> None:
    """Within a raised cap, a record whose data CRC is wrong costs no memory."""
    path = tmp_path / "bomb.tfrecord.gz"
    _gzip_bomb(path, 128 << 20, 128, crc=12345, trailer=True)
    peak, raised = _peak_bytes(
        lambda: list(tfrecord.read(path, compression="GZIP", max_record_bytes=1 << 30))
    )
    assert isinstance(raised, CorruptRecordError)
    assert raised.kind == KIND_DATA_CRC
    assert peak < 8 << 20


def test_large_compressed_record_is_held_once(tmp_path: Path) -> None:
    size = 48 << 20
    path = tmp_path / "big.tfrecord.gz"
    _gzip_bomb(path, size, 48, crc=mask(crc32c(bytes(size))), trailer=True)
    records: list[bytes] = []
    peak, raised = _peak_bytes(
        lambda: records.extend(tfrecord.read(path, compression="GZIP", on_corruption="raise"))
    )
    assert raised is None
    assert [len(r) for r in records] == [size]
    assert records[0] == bytes(size)
    assert peak < size + (8 << 20)


# --------------------------------------------------------------- partial header walks
@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(min_value=0, max_value=40_000), max_size=30),
    stop=st.one_of(st.none(), st.integers(min_value=0, max_value=35)),
    compression=st.sampled_from([None, "GZIP", "ZLIB"]),
)
def test_frame_offsets_walks_to_stop(
    tmp_path_factory: pytest.TempPathFactory,
    lengths: list[int],
    stop: int | None,
    compression: str | None,
) -> None:
    path = tmp_path_factory.mktemp("walk") / "f.tfrecord"
    records = [bytes([i % 256]) * n for i, n in enumerate(lengths)]
    tfrecord.write(path, records, compression=compression)
    starts = [sum(n + 16 for n in lengths[:i]) for i in range(len(lengths) + 1)]
    offsets, end = tfrecord.frame_offsets(path, stop=stop, compression=compression)
    kept = len(lengths) if stop is None else min(stop, len(lengths))
    assert offsets.tolist() == starts[:kept]
    assert end == starts[kept]


def test_walks_stop_before_later_damage(tmp_path: Path) -> None:
    """Random access without an index walks only as far as the records asked for."""
    records = [bytes([i]) * (100 + i) for i in range(10)]
    raw = bytearray(b"".join(tfrecord_frame(r) for r in records))
    raw[len(b"".join(tfrecord_frame(r) for r in records[:6])) + 3] ^= 0xFF  # record 6's length
    path = tmp_path / "f.tfrecord"
    path.write_bytes(bytes(raw))
    offsets, end = tfrecord.frame_offsets(path, stop=4)
    assert len(offsets) == 4
    assert end == len(b"".join(tfrecord_frame(r) for r in records[:4]))
    with RecordFile(path) as rf:
        assert list(rf.read(1, 3)) == records[1:4]
        assert rf[5] == records[5]
        with pytest.raises(CorruptRecordError):
            len(rf)
    with pytest.raises(CorruptRecordError):
        tfrecord.frame_offsets(path)


@pytest.mark.parametrize("stop", [-1, True, 1.5, "3"])
def test_frame_offsets_refuses_a_bad_stop(tmp_path: Path, stop: object) -> None:
    path = tmp_path / "f.tfrecord"
    tfrecord.write(path, [b"a"])
    with pytest.raises(ConfigError):
        tfrecord.frame_offsets(path, stop=stop)  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(min_value=0, max_value=40_000), min_size=1, max_size=20),
    requests=st.lists(st.tuples(st.integers(0, 25), st.integers(0, 25)), max_size=6),
    compression=st.sampled_from([None, "GZIP"]),
)
def test_partial_walks_read_what_a_full_walk_reads(
    tmp_path_factory: pytest.TempPathFactory,
    lengths: list[int],
    requests: list[tuple[int, int]],
    compression: str | None,
) -> None:
    path = tmp_path_factory.mktemp("partial") / "f.tfrecord"
    records = [bytes([i % 256]) * n for i, n in enumerate(lengths)]
    tfrecord.write(path, records, compression=compression)
    with RecordFile(path, compression=compression) as rf:
        for skip, take in requests:
            if skip + take <= len(records):
                assert list(rf.read(skip, take)) == records[skip : skip + take]
                if skip < len(records):
                    assert rf[skip] == records[skip]
            else:
                with pytest.raises(IndexError):
                    rf.read(skip, take)
        assert len(rf) == len(records)
        assert list(rf.read()) == records
