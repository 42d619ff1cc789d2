"""readplan.tfrecord: framing, compression, TensorFlow's fixtures, damage, the writer.

Expected values come from TensorFlow-written fixtures (tests/data/tfrecord/manifest.json),
the hex vectors of the format notes, and independent references written here with zlib
and crc32c directly; never from the code under test.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import random
import struct
import tracemalloc
import zlib
from pathlib import Path

import pytest
from crc32c import crc32c
from hypothesis import example, given
from hypothesis import strategies as st

from readplan import tfrecord
from readplan.errors import (
    ConfigError,
    CorruptRecordError,
)
from readplan.records._crc import mask, unmask
from readplan.tfrecord import (
    KIND_ABSURD_LENGTH,
    KIND_DATA_CRC,
    KIND_HEADER_CRC,
    KIND_INFLATE,
    KIND_TRAILING_GARBAGE,
    KIND_TRUNCATED_DATA,
    KIND_TRUNCATED_HEADER,
    KIND_TRUNCATED_STREAM,
    CorruptionReport,
    RecordFile,
    TFRecordWriter,
)
from tests.reference_models import tfrecord_frame
from tests.tfrecord_fixtures import DAMAGED, FILES, FIXTURES, sha


def read_all(path: Path, **options: object) -> list[bytes]:
    return list(tfrecord.read(path, **options))  # type: ignore[arg-type]


def read_until_error(path: Path, **options: object) -> tuple[list[bytes], CorruptRecordError]:
    records: list[bytes] = []
    with pytest.raises(CorruptRecordError) as info:
        records.extend(tfrecord.read(path, **options))  # type: ignore[arg-type]
    return records, info.value


# ------------------------------------------------------------------------- checksums
def test_crc32c_check_values() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0
    assert mask(0) == 0xA282EAD8


@given(st.integers(min_value=0, max_value=2**32 - 1))
@example(0)
@example(0xFFFFFFFF)
def test_unmask_inverts_mask(value: int) -> None:
    rotated = ((value >> 15) | (value << 17)) & 0xFFFFFFFF
    assert mask(value) == (rotated + 0xA282EAD8) & 0xFFFFFFFF
    assert unmask(mask(value)) == value


# ---------------------------------------------------------------------- framing vectors
@pytest.mark.parametrize(
    ("records", "expected_hex"),
    [
        ([b""], "0000000000000000 29039807 d8ea82a2"),
        ([b"hello"], "0500000000000000 eab2043e 68656c6c6f bb1f1c19"),
        ([], ""),
    ],
)
def test_framing_vectors(tmp_path: Path, records: list[bytes], expected_hex: str) -> None:
    path = tmp_path / "f.tfrecord"
    assert tfrecord.write(path, records) == len(records)
    assert path.read_bytes() == bytes.fromhex(expected_hex.replace(" ", ""))
    assert read_all(path) == records


COMPRESSION_VECTORS = [
    ("GZIP", [], "1f8b0800000000000003 0300 00000000 00000000"),
    ("ZLIB", [], "789c030000000001"),
    ("ZLIB", [b"hello"], "789c63658080579b58ec32527372f277cbcb48020029610507"),
    (
        "GZIP",
        [b"hello"],
        "1f8b080000000000000363658080579b58ec32527372f277cbcb480200b781300e15000000",
    ),
]


@pytest.mark.parametrize(("compression", "records", "expected_hex"), COMPRESSION_VECTORS)
def test_compression_vectors(
    tmp_path: Path, compression: str, records: list[bytes], expected_hex: str
) -> None:
    path = tmp_path / "f.tfrecord"
    tfrecord.write(path, records, compression=compression)
    assert path.read_bytes() == bytes.fromhex(expected_hex.replace(" ", ""))
    assert read_all(path, compression=compression) == records
    assert read_all(path, compression="auto") == records


def mem_level_records() -> list[bytes]:
    r = random.Random(0)
    words = [b"alpha", b"beta", b"gamma", b"delta", b"eps", b"zeta", b"eta", b"theta"]
    records = []
    for i in range(500):
        k = r.randint(1, 400)
        records.append(b" ".join(r.choice(words) for _ in range(k)) + bytes([i % 256]))
    return records


@pytest.mark.parametrize(
    ("compression", "size", "digest"),
    [
        (None, 527_623, "214b7ea47594d2817cf7fb3d391d8faa50c84104ecd98a001cca29128a2c8622"),
        ("ZLIB", 74_428, "57fbeaa39022e036a579e06b9453f0a1b7434852dc185f872c42ca82f59ab91a"),
        ("GZIP", 74_440, "8e6788af5ba59e22c69661eaccb3ffe2c159fff8b5fbbcad5ceda03f17bc6392"),
    ],
)
def test_mem_level_vector(tmp_path: Path, compression: str | None, size: int, digest: str) -> None:
    path = tmp_path / "f.tfrecord"
    records = mem_level_records()
    tfrecord.write(path, records, compression=compression)
    data = path.read_bytes()
    assert (len(data), hashlib.sha256(data).hexdigest()) == (size, digest)
    assert read_all(path, compression=compression) == records


# ---------------------------------------------------------------- TensorFlow's fixtures
@pytest.mark.parametrize("name", sorted(FILES))
def test_fixture_records(name: str) -> None:
    info = FILES[name]
    path = FIXTURES / name
    records = read_all(path, compression=info["compression"] or None)
    assert sha(records) == info["records_sha256"]
    assert [len(r) for r in records] == info["record_sizes"]
    assert read_all(path, compression="auto") == records
    assert tfrecord.count(path, compression="auto") == len(records)


@pytest.mark.parametrize("name", sorted(FILES))
def test_writer_reproduces_fixture_bytes(tmp_path: Path, name: str) -> None:
    info = FILES[name]
    source = FIXTURES / name
    copy = tmp_path / name
    compression = info["compression"] or None
    tfrecord.write(copy, read_all(source, compression=compression), compression=compression)
    assert copy.read_bytes() == source.read_bytes()


# --------------------------------------------------------------------- damaged fixtures
# What each mutation of record 5 must be reported as, and which records of the source
# file skip mode can recover (all but the damaged one, unless the file was cut there).
EXPECTED_KIND = {
    "truncated_in_length": KIND_TRUNCATED_HEADER,
    "truncated_in_length_crc": KIND_TRUNCATED_HEADER,
    "truncated_in_data": KIND_TRUNCATED_DATA,
    "truncated_in_data_crc": KIND_TRUNCATED_DATA,
    "flip_length_bit": KIND_HEADER_CRC,
    "flip_length_crc_bit": KIND_HEADER_CRC,
    "flip_data_bit": KIND_DATA_CRC,
    "flip_data_crc_bit": KIND_DATA_CRC,
    "garbage_tail": KIND_TRUNCATED_HEADER,
    "huge_length": KIND_HEADER_CRC,
}
CUT_AT_DAMAGE = {"truncated_in_length", "truncated_in_length_crc", "truncated_in_data"}
CUT_AT_DAMAGE |= {"truncated_in_data_crc"}


def record_offset(source: str, index: int) -> int:
    return sum(size + 16 for size in FILES[source]["record_sizes"][:index])


def tf_text(tf_error: str) -> str:
    """The bare message inside TensorFlow's DataLossError text."""
    return tf_error.split("}} ", 1)[1].split(" [Op:", 1)[0]


def test_every_damaged_fixture_has_an_expectation() -> None:
    assert {info["mutation"] for info in DAMAGED.values()} == set(EXPECTED_KIND)


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_damaged_fixture_raise_mode(name: str) -> None:
    info = DAMAGED[name]
    source_hashes = FILES[info["source"]]["records_sha256"]
    report = CorruptionReport()
    records, err = read_until_error(FIXTURES / name, report=report)
    before = info["tf_records_before_error"]
    assert sha(records) == source_hashes[:before]
    assert err.kind == EXPECTED_KIND[info["mutation"]]
    assert err.record_index == before
    assert err.offset == record_offset(info["source"], before)
    assert err.path == str(FIXTURES / name)
    assert str(FIXTURES / name) in str(err)
    (event,) = report.events
    assert (event.kind, event.offset, event.record_index) == (err.kind, err.offset, before)
    assert event.resume_offset is None
    if info["tf_error"] is None:
        assert event.tf_message is None
    else:
        assert event.tf_message == tf_text(info["tf_error"])


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_damaged_fixture_skip_mode(name: str) -> None:
    info = DAMAGED[name]
    source_hashes = FILES[info["source"]]["records_sha256"]
    damaged = info["damaged_record"]
    if info["mutation"] in CUT_AT_DAMAGE:
        expected = source_hashes[:damaged]
    elif info["mutation"] == "garbage_tail":
        expected = source_hashes
    else:
        expected = source_hashes[:damaged] + source_hashes[damaged + 1 :]
    report = CorruptionReport()
    records = read_all(FIXTURES / name, on_corruption="skip", report=report)
    assert sha(records) == expected
    (event,) = report.events
    assert event.kind == EXPECTED_KIND[info["mutation"]]
    assert event.resume_offset is not None
    size = os.path.getsize(FIXTURES / name)
    if info["mutation"] in CUT_AT_DAMAGE or info["mutation"] == "garbage_tail":
        assert event.resume_offset == size
    else:
        assert event.resume_offset == record_offset(info["source"], damaged + 1)
    assert report.records_skipped == (1 if event.kind == KIND_DATA_CRC else 0)
    assert report.bytes_skipped == event.resume_offset - event.offset


def test_skip_mode_reports_through_callback() -> None:
    seen: list[tfrecord.CorruptionEvent] = []
    report = CorruptionReport(callback=seen.append)
    read_all(FIXTURES / "damaged_flip_data_bit.tfrecord", on_corruption="skip", report=report)
    assert seen == report.events
    assert report.kinds() == {KIND_DATA_CRC: 1}
    assert seen[0].stored_crc is not None
    assert seen[0].stored_crc != seen[0].computed_crc


def test_verify_false_skips_data_crcs_only() -> None:
    records = read_all(FIXTURES / "damaged_flip_data_bit.tfrecord", verify=False)
    source = FILES["examples.tfrecord"]["records_sha256"]
    assert len(records) == 40
    assert sha(records[:5] + records[6:]) == source[:5] + source[6:]
    assert sha(records[5:6]) != source[5:6]
    with pytest.raises(CorruptRecordError):
        read_all(FIXTURES / "damaged_flip_length_bit.tfrecord", verify=False)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("damaged_flip_length_bit.tfrecord", KIND_HEADER_CRC),
        ("damaged_truncated_in_data.tfrecord", KIND_TRUNCATED_DATA),
        ("damaged_garbage_tail.tfrecord", KIND_TRUNCATED_HEADER),
    ],
)
def test_count_refuses_damaged_headers(name: str, kind: str) -> None:
    with pytest.raises(CorruptRecordError) as info:
        tfrecord.count(FIXTURES / name)
    assert info.value.kind == kind


def test_count_checks_headers_not_data() -> None:
    assert tfrecord.count(FIXTURES / "damaged_flip_data_bit.tfrecord") == 40


# --------------------------------------------------------------- damage built here
def test_header_crc_at_offset_zero_hints_at_compression(tmp_path: Path) -> None:
    report = CorruptionReport()
    records, err = read_until_error(FIXTURES / "examples.tfrecord.gz", report=report)
    assert records == []
    assert (err.kind, err.offset) == (KIND_HEADER_CRC, 0)
    assert "compression" in str(err)
    assert report.events[0].tf_message == "corrupted record at 0 (Is this even a TFRecord file?)"


def test_garbage_tail_of_twelve_bytes_or_more(tmp_path: Path) -> None:
    path = tmp_path / "f.tfrecord"
    path.write_bytes(tfrecord_frame(b"hello") + bytes(range(20)))
    records, err = read_until_error(path)
    assert records == [b"hello"]
    assert (err.kind, err.offset) == (KIND_HEADER_CRC, 21)
    report = CorruptionReport()
    assert read_all(path, on_corruption="skip", report=report) == [b"hello"]
    assert [e.kind for e in report] == [KIND_TRAILING_GARBAGE]
    assert report.events[0].tf_message == "corrupted record at 21"
    assert report.bytes_skipped == 20


def test_skip_mode_resynchronises_after_inserted_garbage(tmp_path: Path) -> None:
    path = tmp_path / "f.tfrecord"
    good = [bytes([i]) * (10 + i) for i in range(6)]
    path.write_bytes(
        b"".join(tfrecord_frame(r) for r in good[:3]) + b"\x07" * 33 + tfrecord_frame(good[3])
    )
    report = CorruptionReport()
    assert read_all(path, on_corruption="skip", report=report) == good[:4]
    (event,) = report.events
    assert event.kind == KIND_HEADER_CRC
    assert event.bytes_skipped == 33


def test_resync_requires_a_verifying_data_crc(tmp_path: Path) -> None:
    # A valid header whose data CRC is wrong is not a place to resume at.
    fake = bytearray(tfrecord_frame(b"abcd"))
    fake[-1] ^= 0xFF
    path = tmp_path / "f.tfrecord"
    path.write_bytes(b"\x01" * 12 + bytes(fake) + tfrecord_frame(b"real"))
    report = CorruptionReport()
    assert read_all(path, on_corruption="skip", report=report) == [b"real"]
    assert report.events[0].resume_offset == 12 + len(fake)


def test_absurd_length_with_valid_crc_is_refused_before_allocation(tmp_path: Path) -> None:
    path = tmp_path / "f.tfrecord"
    head = struct.pack("<Q", 2**40)
    path.write_bytes(
        tfrecord_frame(b"ok") + head + struct.pack("<I", mask(crc32c(head))) + b"x" * 8
    )
    records, err = read_until_error(path)
    assert records == [b"ok"]
    assert (err.kind, err.offset) == (KIND_ABSURD_LENGTH, 18)
    records, err = read_until_error(path, max_record_bytes=2**41)
    assert (err.kind, err.offset) == (KIND_TRUNCATED_DATA, 18)


def test_length_of_uint64_max_matches_tensorflow_message(tmp_path: Path) -> None:
    path = tmp_path / "f.tfrecord"
    path.write_bytes(tfrecord_frame(b"", length=2**64 - 1)[:12])
    report = CorruptionReport()
    read_until_error(path, report=report)
    assert report.events[0].tf_message == "record size too large"


def test_record_longer_than_cap_in_compressed_stream(tmp_path: Path) -> None:
    path = tmp_path / "f.tfrecord.gz"
    tfrecord.write(path, [b"a" * 100, b"b" * 5000], compression="GZIP")
    records, err = read_until_error(path, compression="GZIP", max_record_bytes=1000)
    assert records == [b"a" * 100]
    assert (err.kind, err.record_index) == (KIND_ABSURD_LENGTH, 1)


def test_decompression_bomb_stays_bounded(tmp_path: Path) -> None:
    path = tmp_path / "bomb.tfrecord.gz"
    with gzip.open(path, "wb") as out:
        head = struct.pack("<Q", 64 << 20)
        out.write(head + struct.pack("<I", mask(crc32c(head))))
        for _ in range(64):
            out.write(bytes(1 << 20))
        out.write(struct.pack("<I", mask(crc32c(bytes(64 << 20)))))
    tracemalloc.start()
    try:
        assert tfrecord.count(path, compression="GZIP") == 1
        with pytest.raises(CorruptRecordError) as info:
            read_all(path, compression="GZIP", max_record_bytes=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.kind == KIND_ABSURD_LENGTH
    assert peak < 24 << 20


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compressed_stream_cut_inside_a_record(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "f"
    records = [bytes([i]) * 3000 for i in range(50)]
    tfrecord.write(path, records, compression=compression)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    # No checksum confirms the bytes of a stream without its end: none is delivered.
    got, err = read_until_error(path, compression=compression)
    assert got == []
    assert (err.kind, err.record_index) == (KIND_TRUNCATED_STREAM, 0)
    report = CorruptionReport()
    assert read_all(path, compression=compression, on_corruption="skip", report=report) == []
    assert [event.kind for event in report] == [KIND_TRUNCATED_STREAM]


@pytest.mark.parametrize(("compression", "trailer"), [("GZIP", 8), ("ZLIB", 4)])
def test_missing_trailer_delivers_no_unconfirmed_record(
    tmp_path: Path, compression: str, trailer: int
) -> None:
    path = tmp_path / "f"
    records = [b"r%d" % i for i in range(20)]
    tfrecord.write(path, records, compression=compression)
    path.write_bytes(path.read_bytes()[:-trailer])
    got, err = read_until_error(path, compression=compression)
    assert got == []  # TensorFlow yields all 20, then fails
    assert (err.kind, err.record_index) == (KIND_TRUNCATED_STREAM, 0)
    report = CorruptionReport()
    assert read_all(path, compression=compression, on_corruption="skip", report=report) == []
    assert report.events[0].tf_message is None


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_bytes_after_the_stream(tmp_path: Path, compression: str) -> None:
    path = tmp_path / "f"
    records = [b"x", b"yy"]
    tfrecord.write(path, records, compression=compression)
    with open(path, "ab") as out:
        out.write(b"garbage!")
    got, err = read_until_error(path, compression=compression)
    assert got == records
    assert err.kind == KIND_TRAILING_GARBAGE
    report = CorruptionReport()
    read_all(path, compression=compression, on_corruption="skip", report=report)
    expected_tf = (
        "inflate() failed with error -3: incorrect header check" if compression == "GZIP" else None
    )
    assert report.events[0].tf_message == expected_tf
    assert report.events[0].compressed_offset == path.stat().st_size - 8


def test_concatenated_gzip_members_are_one_stream(tmp_path: Path) -> None:
    first, second = tmp_path / "a.gz", tmp_path / "b.gz"
    tfrecord.write(first, [b"one", b"two"], compression="GZIP")
    tfrecord.write(second, [b"three"], compression="GZIP")
    joined = tmp_path / "joined.gz"
    joined.write_bytes(first.read_bytes() + second.read_bytes())
    assert read_all(joined, compression="GZIP") == [b"one", b"two", b"three"]
    assert tfrecord.count(joined, compression="auto") == 3


def test_corrupted_compressed_bytes(tmp_path: Path) -> None:
    path = tmp_path / "f.gz"
    records = [bytes(range(256)) * 40 for _ in range(30)]
    tfrecord.write(path, records, compression="GZIP")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    report = CorruptionReport()
    got = read_all(path, compression="GZIP", on_corruption="skip", report=report)
    assert got == records[: len(got)]
    assert report.events[0].kind in (KIND_INFLATE, KIND_DATA_CRC, KIND_HEADER_CRC)


def test_plain_file_read_as_gzip(tmp_path: Path) -> None:
    report = CorruptionReport()
    records, err = read_until_error(
        FIXTURES / "examples.tfrecord", compression="GZIP", report=report
    )
    assert (records, err.kind, err.offset) == ([], KIND_INFLATE, 0)
    assert report.events[0].tf_message == "inflate() failed with error -3: incorrect header check"


def test_empty_file_read_as_gzip_lacks_header(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    path.write_bytes(b"")
    _, err = read_until_error(path, compression="GZIP")
    assert err.kind == KIND_TRUNCATED_STREAM
    assert read_all(path, compression="auto") == []


# ----------------------------------------------------------------- options and errors
@pytest.mark.parametrize("bad", ["gzip", "zlib", "SNAPPY", "FOO", 1, b"GZIP"])
def test_unknown_compression_is_refused(tmp_path: Path, bad: object) -> None:
    path = tmp_path / "f"
    with pytest.raises(ConfigError) as info:
        TFRecordWriter(path, compression=bad)
    assert info.value.field == "compression"
    tfrecord.write(path, [b"a"])
    with pytest.raises(ConfigError):
        tfrecord.read(path, compression=bad)
    with pytest.raises(ConfigError):
        tfrecord.count(path, compression=bad)


def test_lowercase_compression_message_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'GZIP'"):
        TFRecordWriter(tmp_path / "f", compression="gzip")


def test_empty_string_means_uncompressed_as_in_tensorflow(tmp_path: Path) -> None:
    path = tmp_path / "f"
    tfrecord.write(path, [b"a"], compression="")
    assert path.read_bytes() == tfrecord_frame(b"a")
    assert read_all(path, compression="") == [b"a"]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("on_corruption", "ignore"),
        ("max_record_bytes", -1),
        ("max_record_bytes", True),
        ("report", []),
    ],
)
def test_bad_read_options(option: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        tfrecord.read(FIXTURES / "examples.tfrecord", **{option: value})  # type: ignore[arg-type]
    assert info.value.field == option


def test_missing_file_raises_once_at_call(tmp_path: Path) -> None:
    missing = tmp_path / "nope.tfrecord"
    for call in (tfrecord.read, tfrecord.count, RecordFile):
        with pytest.raises(FileNotFoundError) as info:
            call(missing)
        assert info.value.filename == str(missing)


# ---------------------------------------------------------------------------- writer
def test_writer_accepts_bytes_like(tmp_path: Path) -> None:
    path = tmp_path / "f"
    with TFRecordWriter(path) as writer:
        writer.write(bytearray(b"ab"))
        writer.write(memoryview(b"xcdx")[1:3])
    assert path.read_bytes() == tfrecord_frame(b"ab") + tfrecord_frame(b"cd")


def test_writer_refuses_writes_after_close(tmp_path: Path) -> None:
    writer = TFRecordWriter(tmp_path / "f")
    writer.close()
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.write(b"a")


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_flush_matches_a_partial_flush(tmp_path: Path, compression: str | None) -> None:
    path = tmp_path / "f"
    writer = TFRecordWriter(path, compression=compression)
    writer.write(b"first")
    writer.flush()
    flushed = path.read_bytes()
    writer.write(b"second")
    writer.close()
    if compression is None:
        assert flushed == tfrecord_frame(b"first")
        assert path.read_bytes() == tfrecord_frame(b"first") + tfrecord_frame(b"second")
        return
    wbits = 31 if compression == "GZIP" else 15
    reference = zlib.compressobj(6, zlib.DEFLATED, wbits, 9)
    expected = reference.compress(tfrecord_frame(b"first")) + reference.flush(zlib.Z_PARTIAL_FLUSH)
    assert flushed == expected
    expected += reference.compress(tfrecord_frame(b"second")) + reference.flush(zlib.Z_FINISH)
    assert path.read_bytes() == expected


def test_flushed_compressed_prefix_is_read_once_the_stream_ends(tmp_path: Path) -> None:
    path = tmp_path / "f"
    writer = TFRecordWriter(path, compression="GZIP")
    writer.write(b"first")
    writer.flush()
    got, err = read_until_error(path, compression="GZIP")
    writer.close()
    assert (got, err.kind) == ([], KIND_TRUNCATED_STREAM)  # not confirmed before close
    assert read_all(path, compression="GZIP") == [b"first"]


records_lists = st.lists(st.binary(max_size=300), max_size=12)


@given(records_lists, st.sampled_from([None, "GZIP", "ZLIB"]))
@example([], "GZIP")
@example([b""], None)
def test_write_read_round_trip(records: list[bytes], compression: str | None) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f"
        tfrecord.write(path, records, compression=compression)
        if compression is None:
            assert path.read_bytes() == b"".join(tfrecord_frame(r) for r in records)
        assert read_all(path, compression="auto") == records
        assert tfrecord.count(path, compression=compression) == len(records)
