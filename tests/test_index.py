"""readplan.index: the sidecar format, its binding to the data file, refusal, text form."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from crc32c import crc32c
from hypothesis import example, given
from hypothesis import strategies as st

from readplan import tfrecord
from readplan.errors import ConfigError, CorruptRecordError, IndexFileError
from readplan.index import (
    HEADER_SIZE,
    MAGIC,
    RecordIndex,
    build_index,
    export_text,
    import_text,
    index_path_for,
    load_index,
)
from readplan.records.index import _sidecar as records_index
from readplan.records.tfrecord import _whole_file as whole_file
from readplan.tfrecord import RecordFile
from tests.tfrecord_fixtures import FILES, FIXTURES

SIZES = FILES["examples.tfrecord"]["record_sizes"]
# Record offsets of examples.tfrecord, from the sizes TensorFlow reported.
OFFSETS = [sum(size + 16 for size in SIZES[:i]) for i in range(len(SIZES))]


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "examples.tfrecord"
    shutil.copy(FIXTURES / "examples.tfrecord", path)
    return path


def sidecar(path: Path) -> Path:
    return Path(index_path_for(path))


def header_fields(path: Path) -> list[int | bytes]:
    return list(struct.unpack("<8sIIQQQIIII", sidecar(path).read_bytes()[:HEADER_SIZE]))


def test_layout_of_a_sidecar(data_file: Path) -> None:
    written = build_index(data_file)
    assert written == str(data_file) + ".index"
    raw = Path(written).read_bytes()
    magic, version, code, count, data_size, stream_size, binding, body_crc, header_crc, zero = (
        struct.unpack("<8sIIQQQIIII", raw[:HEADER_SIZE])
    )
    data = data_file.read_bytes()
    body = raw[HEADER_SIZE:]
    assert (magic, version, code, count) == (b"RPTFRIDX", 1, 0, 40)
    assert (data_size, stream_size, zero) == (len(data), len(data), 0)
    assert binding == crc32c(data[-65536:], crc32c(data[:65536]))
    assert body == struct.pack(f"<{len(OFFSETS)}Q", *OFFSETS)
    assert body_crc == crc32c(body)
    assert header_crc == crc32c(raw[: HEADER_SIZE - 8])
    assert len(raw) == HEADER_SIZE + 8 * 40


@pytest.mark.parametrize(("name", "code"), [("examples.tfrecord.gz", 2), ("empty.tfrecord.zz", 1)])
def test_compressed_sidecars_hold_stream_offsets(tmp_path: Path, name: str, code: int) -> None:
    path = tmp_path / name
    shutil.copy(FIXTURES / name, path)
    build_index(path, compression="auto")
    fields = header_fields(path)
    records = FILES[name]["record_sizes"]
    assert fields[2] == code
    assert fields[3] == len(records)
    assert fields[5] == sum(size + 16 for size in records)
    loaded = load_index(path, compression="auto")
    assert loaded.offsets.tolist() == [
        sum(s + 16 for s in records[:i]) for i in range(len(records))
    ]


def test_count_uses_the_sidecar_without_walking(
    data_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_index(data_file)

    def no_walk(*args: object, **kwargs: object) -> None:
        raise AssertionError("walked the headers although an index exists")

    monkeypatch.setattr(whole_file, "walk_offsets", no_walk)
    assert tfrecord.count(data_file) == 40
    with RecordFile(data_file) as rf:
        assert rf.indexed
        assert rf.offsets.tolist() == OFFSETS
        assert rf[39] == (FIXTURES / "examples.tfrecord").read_bytes()[OFFSETS[39] + 12 : -4]


def test_use_index_false_ignores_the_sidecar(data_file: Path) -> None:
    build_index(data_file)
    sidecar(data_file).write_bytes(b"junk")
    assert tfrecord.count(data_file, use_index=False) == 40
    with RecordFile(data_file, use_index=False) as rf:
        assert not rf.indexed
        assert len(rf) == 40


def test_progress_reports_every_byte(data_file: Path) -> None:
    steps: list[int] = []
    build_index(data_file, progress=steps.append)
    assert sum(steps) == data_file.stat().st_size
    assert all(step >= 0 for step in steps)


def test_build_index_refuses_damaged_files_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "d.tfrecord"
    shutil.copy(FIXTURES / "damaged_flip_length_bit.tfrecord", path)
    with pytest.raises(CorruptRecordError):
        build_index(path)
    assert sorted(os.listdir(tmp_path)) == ["d.tfrecord"]


def test_rebuilding_leaves_one_sidecar_and_no_temporary(data_file: Path) -> None:
    build_index(data_file)
    build_index(data_file)
    assert sorted(os.listdir(data_file.parent)) == ["examples.tfrecord", "examples.tfrecord.index"]


def test_a_failed_rebuild_keeps_the_previous_sidecar(
    data_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sidecar = Path(build_index(data_file))
    before = sidecar.read_bytes()

    def crash(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        build_index(data_file)
    assert sidecar.read_bytes() == before
    assert sorted(os.listdir(data_file.parent)) == ["examples.tfrecord", "examples.tfrecord.index"]


# ------------------------------------------------------------------------------ refusal
def patch_index(path: Path, offset: int, data: bytes) -> None:
    raw = bytearray(sidecar(path).read_bytes())
    raw[offset : offset + len(data)] = data
    sidecar(path).write_bytes(bytes(raw))


def reseal(path: Path) -> None:
    """Recompute the header CRC after a deliberate edit of a header field."""
    raw = bytearray(sidecar(path).read_bytes())
    raw[48:52] = struct.pack("<I", crc32c(bytes(raw[:48])))
    sidecar(path).write_bytes(bytes(raw))


def write_offsets(path: Path, offsets: list[int]) -> None:
    """Build the sidecar of ``path``, then give it ``offsets`` with every CRC matching: what
    a writer with a bug would leave."""
    build_index(path)
    body = struct.pack(f"<{len(offsets)}Q", *offsets)
    raw = bytearray(sidecar(path).read_bytes()[:HEADER_SIZE])
    raw[16:24] = struct.pack("<Q", len(offsets))
    raw[44:48] = struct.pack("<I", crc32c(body))
    sidecar(path).write_bytes(bytes(raw) + body)
    reseal(path)


def refusal_field(path: Path, **options: object) -> str | None:
    with pytest.raises(IndexFileError) as info:
        tfrecord.count(path, **options)  # type: ignore[arg-type]
    with pytest.raises(IndexFileError) as info_rf:
        RecordFile(path, **options)  # type: ignore[arg-type]
    assert info.value.path == str(sidecar(path)) == info_rf.value.path
    assert str(sidecar(path)) in str(info_rf.value)
    return info_rf.value.field


def test_refuses_a_truncated_header(data_file: Path) -> None:
    build_index(data_file)
    sidecar(data_file).write_bytes(sidecar(data_file).read_bytes()[:30])
    assert refusal_field(data_file) == "header"


def test_refuses_a_truncated_body(data_file: Path) -> None:
    build_index(data_file)
    sidecar(data_file).write_bytes(sidecar(data_file).read_bytes()[:-8])
    assert refusal_field(data_file) == "record_count"


def test_refuses_bad_magic(data_file: Path) -> None:
    build_index(data_file)
    patch_index(data_file, 0, b"NOTINDEX")
    assert refusal_field(data_file) == "magic"


@pytest.mark.parametrize("version", [0, 3, 2**32 - 1])
def test_refuses_another_version(data_file: Path, version: int) -> None:
    build_index(data_file)
    patch_index(data_file, 8, struct.pack("<I", version))
    assert refusal_field(data_file) == "version"


def test_refuses_a_damaged_header(data_file: Path) -> None:
    build_index(data_file)
    patch_index(data_file, 16, struct.pack("<Q", 39))
    assert refusal_field(data_file) == "header_crc"


def test_refuses_a_stale_index_of_another_size(data_file: Path) -> None:
    build_index(data_file)
    tfrecord.write(data_file, [b"other", b"records"])
    assert refusal_field(data_file) == "data_size"


def test_refuses_a_foreign_index_of_the_same_size(data_file: Path) -> None:
    build_index(data_file)
    data = bytearray(data_file.read_bytes())
    data[100] ^= 1
    data_file.write_bytes(bytes(data))
    assert refusal_field(data_file) == "binding_crc"


def test_refuses_an_index_of_another_compression(tmp_path: Path) -> None:
    path = tmp_path / "f.gz"
    shutil.copy(FIXTURES / "examples.tfrecord.gz", path)
    build_index(path, compression="GZIP")
    assert refusal_field(path, compression="ZLIB") == "compression"


def test_refuses_damaged_offsets(data_file: Path) -> None:
    build_index(data_file)
    patch_index(data_file, HEADER_SIZE + 8, struct.pack("<Q", 5))
    with pytest.raises(IndexFileError) as info:
        RecordFile(data_file)
    assert info.value.field == "offsets_crc"


@pytest.mark.parametrize(
    "offsets",
    [
        [0, 233, 200],  # not increasing
        [0, 233, 240],  # a span shorter than a frame
        [8, 233, 524],  # not starting at 0
        [0, 233, 20_470],  # the last frame runs past the end
    ],
)
def test_refuses_offsets_that_cannot_frame_the_file(data_file: Path, offsets: list[int]) -> None:
    write_offsets(data_file, offsets)
    with pytest.raises(IndexFileError) as info:
        RecordFile(data_file)
    assert info.value.field == "offsets"


def test_record_file_refuses_an_index_whose_lengths_disagree(data_file: Path) -> None:
    # Offsets that tile the file but split records wrongly pass every header check;
    # reading the record then shows the disagreement.
    write_offsets(data_file, [0, OFFSETS[2], *OFFSETS[3:]])
    with RecordFile(data_file) as rf, pytest.raises(IndexFileError) as info:
        rf[0]
    assert info.value.field == "offsets"


def test_record_index_validates_itself() -> None:
    with pytest.raises(IndexFileError, match="16 framing bytes") as info:
        RecordIndex("f", None, np.array([0, 10]), 40, 40, 0)
    assert info.value.field == "offsets"
    with pytest.raises(IndexFileError, match="must equal"):
        RecordIndex("f", None, np.array([0]), 40, 41, 0)
    with pytest.raises(IndexFileError, match="compression"):
        RecordIndex("f", "gzip", np.array([0]), 40, 40, 0)
    built = RecordIndex("f", "GZIP", np.array([0, 20]), 40, 12, 0)
    assert built.frame_sizes().tolist() == [20, 20]
    assert not built.offsets.flags.writeable


# --------------------------------------------------------- sources (version 2 sidecars)
SOURCE = "gs://bucket/examples.tfrecord generation=1700000000000001"


def write_with_source(path: Path, source: str = SOURCE) -> bytes:
    """The sidecar of ``path`` as one built from a stored object would be; its bytes."""
    build_index(path)
    loaded = load_index(path)
    index = RecordIndex(
        str(path), None, loaded.offsets, loaded.stream_size, loaded.data_size,
        loaded.binding_crc, source,
    )  # fmt: skip
    records_index.write_index(index, sidecar(path))
    return sidecar(path).read_bytes()


def test_layout_of_a_sidecar_with_a_source(data_file: Path) -> None:
    raw = write_with_source(data_file)
    fields = struct.unpack("<8sIIQQQIIII", raw[:HEADER_SIZE])
    magic, version, code, count, _, _, _, body_crc, header_crc, source_size = fields
    source = SOURCE.encode()
    assert (magic, version, code, count, source_size) == (b"RPTFRIDX", 2, 0, 40, len(source))
    # The header CRC covers every header byte but its own four, the body CRC the offsets
    # and the source after them.
    assert header_crc == crc32c(raw[52:56], crc32c(raw[:48]))
    assert raw[HEADER_SIZE:] == struct.pack(f"<{len(OFFSETS)}Q", *OFFSETS) + source
    assert body_crc == crc32c(raw[HEADER_SIZE:])
    loaded = load_index(data_file)
    assert loaded.source == SOURCE
    assert loaded.offsets.tolist() == OFFSETS


def test_a_source_naming_another_object_binds_by_the_checksums(data_file: Path) -> None:
    # A local file has no content version: the source cannot vouch for it.
    write_with_source(data_file)
    with RecordFile(data_file) as rf:
        assert rf.indexed
    data = bytearray(data_file.read_bytes())
    data[100] ^= 1
    data_file.write_bytes(bytes(data))
    assert refusal_field(data_file) == "binding_crc"


@given(bit=st.integers(0, 8 * (HEADER_SIZE + 8 * 40 + len(SOURCE)) - 1))
def test_every_flipped_bit_of_a_sidecar_is_refused(bit: int) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "examples.tfrecord"
        shutil.copy(FIXTURES / "examples.tfrecord", path)
        raw = bytearray(write_with_source(path))
        raw[bit // 8] ^= 1 << (bit % 8)
        sidecar(path).write_bytes(bytes(raw))
        with pytest.raises(IndexFileError) as caught:
            load_index(path)
        assert caught.value.path == str(sidecar(path))


@given(cut=st.integers(-40, 40).filter(bool))
def test_a_sidecar_of_another_length_is_refused(cut: int) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "examples.tfrecord"
        shutil.copy(FIXTURES / "examples.tfrecord", path)
        raw = write_with_source(path)
        changed = raw[:cut] if cut < 0 else raw + bytes(cut)
        sidecar(path).write_bytes(changed)
        with pytest.raises(IndexFileError) as caught:
            load_index(path)
        assert caught.value.field == "record_count"


def _resealed(raw: bytes, source_size: int, tail: bytes) -> bytes:
    """A version 2 sidecar with another source, both CRCs made to match."""
    head = bytearray(raw[:HEADER_SIZE])
    body = raw[HEADER_SIZE : HEADER_SIZE + 8 * 40] + tail
    head[44:48] = struct.pack("<I", crc32c(body))
    head[52:56] = struct.pack("<I", source_size)
    head[48:52] = struct.pack("<I", crc32c(bytes(head[52:56]), crc32c(bytes(head[:48]))))
    return bytes(head) + body


def test_a_source_too_long_or_not_utf8_is_refused(data_file: Path) -> None:
    raw = write_with_source(data_file)
    huge = 1 << 20
    sidecar(data_file).write_bytes(_resealed(raw, huge, b"x" * huge))
    assert refusal_field(data_file) == "source"
    sidecar(data_file).write_bytes(_resealed(raw, 2, b"\xff\xfe"))
    assert refusal_field(data_file) == "source"


def test_a_pickled_index_is_the_same_and_read_only(data_file: Path) -> None:
    import pickle

    build_index(data_file)
    original = load_index(data_file)
    copy = pickle.loads(pickle.dumps(original))
    assert copy.offsets.tolist() == OFFSETS
    assert not copy.offsets.flags.writeable
    fields = ("data_path", "compression", "stream_size", "data_size", "binding_crc", "source")
    assert [getattr(copy, name) for name in fields] == [getattr(original, name) for name in fields]


def test_a_record_file_binds_an_index_it_is_given(data_file: Path, tmp_path: Path) -> None:
    build_index(data_file)
    loaded = load_index(data_file)
    os.unlink(sidecar(data_file))
    with RecordFile(data_file, index=loaded) as rf:
        assert rf.indexed
        assert rf.offsets is loaded.offsets
    other = tmp_path / "other.tfrecord"
    data = bytearray(data_file.read_bytes())
    data[-10] ^= 1
    other.write_bytes(bytes(data))
    with pytest.raises(IndexFileError) as caught:
        RecordFile(other, index=loaded)
    assert caught.value.field == "binding_crc"
    # No sidecar file holds these offsets: the error names memory and the file, not a path.
    assert caught.value.path is None
    assert str(caught.value).startswith(f"offsets held in memory for {other} ")
    assert not sidecar(other).exists()
    with pytest.raises(IndexFileError) as caught:
        RecordFile(data_file, index=loaded, compression="GZIP")
    assert caught.value.field == "compression"


def test_offsets_held_in_memory_that_miss_a_frame_are_refused_naming_memory(
    data_file: Path,
) -> None:
    size = data_file.stat().st_size
    fd = os.open(data_file, os.O_RDONLY)
    try:
        real = records_index.index_open_file(fd, str(data_file))
    finally:
        os.close(fd)
    # Records 0 and 1 taken for one: bound to the file (its size and ends), wrong inside.
    merged = [OFFSETS[0], *OFFSETS[2:]]
    index = RecordIndex(str(data_file), None, merged, size, size, real.binding_crc)
    for read in (lambda rf: rf[0], lambda rf: list(rf.read(0, 2))):
        with RecordFile(data_file, index=index) as rf, pytest.raises(IndexFileError) as caught:
            read(rf)
        assert caught.value.field == "offsets"
        assert caught.value.path is None
        assert str(caught.value).startswith(f"offsets held in memory for {data_file} ")


def test_a_large_sidecar_is_read_in_two_requests(
    data_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("fsspec")
    from tests.remote_stores import wrapped_copy

    build_index(data_file)
    url, options, fs = wrapped_copy(data_file.parent, "files")
    monkeypatch.setattr(records_index, "_FIRST_READ", 64)  # the sidecar has 376 bytes
    target = f"{url}/examples.tfrecord.index"
    fs.requests.clear()
    with RecordFile(f"{url}/examples.tfrecord", storage_options=options) as rf:
        assert rf.offsets.tolist() == OFFSETS
    path = target.removeprefix("wrapped://")
    sidecar_reads = [(start, end) for name, start, end in fs.ranges if name == path]
    assert sidecar_reads == [(0, 64), (0, HEADER_SIZE + 8 * 40 + 1)]
    # One byte more than its header says: refused, however it was read.
    fs.target.pipe_file(path, sidecar(data_file).read_bytes() + b"\0")
    with pytest.raises(IndexFileError) as caught:
        RecordFile(f"{url}/examples.tfrecord", storage_options=options)
    assert caught.value.field == "record_count"
    assert "at least 377 bytes" in str(caught.value)


# ---------------------------------------------------------------------------- text form
def dali_text(path: Path) -> str:
    """The text NVIDIA DALI's tfrecord2idx writes, re-expressed from its documented walk."""
    lines = []
    data = path.read_bytes()
    position = 0
    while position < len(data):
        (length,) = struct.unpack_from("<q", data, position)
        end = position + 8 + 4 + length + 4
        lines.append(f"{position} {end - position}\n")
        position = end
    return "".join(lines)


def test_export_matches_dali(data_file: Path, tmp_path: Path) -> None:
    build_index(data_file)
    out = export_text(load_index(data_file), tmp_path / "examples.idx")
    text = Path(out).read_text()
    assert text == dali_text(data_file)
    assert text.splitlines()[:2] == [f"0 {SIZES[0] + 16}", f"{SIZES[0] + 16} {SIZES[1] + 16}"]


def test_import_round_trip(data_file: Path, tmp_path: Path) -> None:
    text = tmp_path / "examples.idx"
    text.write_text(dali_text(data_file))
    written = import_text(text, data_file)
    assert written == str(sidecar(data_file))
    assert load_index(data_file).offsets.tolist() == OFFSETS
    assert tfrecord.count(data_file) == 40


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda lines: lines[:-1], "offsets"),  # records end before the file does
        (lambda lines: [lines[1], lines[0], *lines[2:]], "offsets"),  # out of order
        (lambda lines: [*lines[:3], "12 x\n", *lines[3:]], "line"),
        (lambda lines: ["0 249\n", *lines[2:]], "offsets"),  # does not tile
    ],
)
def test_import_refuses_text_that_does_not_frame_the_file(
    data_file: Path, tmp_path: Path, edit: object, field: str
) -> None:
    text = tmp_path / "examples.idx"
    text.write_text("".join(edit(dali_text(data_file).splitlines(keepends=True))))  # type: ignore[operator]
    with pytest.raises(IndexFileError) as info:
        import_text(text, data_file)
    assert (info.value.field, info.value.path) == (field, str(text))
    assert not sidecar(data_file).exists()


def test_import_spot_checks_record_headers(data_file: Path, tmp_path: Path) -> None:
    lines = dali_text(data_file).splitlines(keepends=True)
    first, second = (int(x) for x in lines[0].split()), (int(x) for x in lines[1].split())
    (offset, size), (_, size2) = first, second
    merged = [f"{offset} {size + size2}\n", *lines[2:]]
    text = tmp_path / "examples.idx"
    text.write_text("".join(merged))
    with pytest.raises(IndexFileError, match="record 0"):
        import_text(text, data_file)


def test_import_refuses_compressed_files(tmp_path: Path) -> None:
    path = tmp_path / "f.gz"
    shutil.copy(FIXTURES / "examples.tfrecord.gz", path)
    text = tmp_path / "f.idx"
    text.write_text("0 20\n")
    with pytest.raises(ConfigError):
        import_text(text, path)


@given(st.lists(st.binary(max_size=40), max_size=20))
@example([])
@example([b""])
def test_index_round_trip(records: list[bytes]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f"
        tfrecord.write(path, records)
        build_index(path)
        loaded = load_index(path)
        expected = np.cumsum([0] + [len(r) + 16 for r in records])
        assert loaded.offsets.tolist() == expected[:-1].tolist()
        assert loaded.stream_size == int(expected[-1])
        text = Path(tmp) / "f.idx"
        export_text(loaded, text)
        os.unlink(index_path_for(path))
        import_text(text, path)
        assert load_index(path).offsets.tolist() == loaded.offsets.tolist()
        with RecordFile(path) as rf:
            assert list(rf.read()) == records


def test_magic_constant() -> None:
    assert MAGIC == b"RPTFRIDX"
    assert HEADER_SIZE == 56


@pytest.mark.parametrize("line", [b"0 \xff\n", b"0 99999999999999999999999\n", b"\xd9\xa3 16\n"])
def test_text_index_with_foreign_numbers_is_refused(tmp_path: Path, line: bytes) -> None:
    data = tmp_path / "d.tfrecord"
    tfrecord.write(data, [b"x"])
    text = tmp_path / "d.idx"
    text.write_bytes(line)
    with pytest.raises(IndexFileError) as raised:
        import_text(text, data)
    assert raised.value.field == "line"
