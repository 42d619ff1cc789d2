"""TBL v2 containers: golden files written by the reference, damage, writer guarantees.

The golden files in tests/data/tbl were written by TurboLoader 2.39.0 (recipes in
``tbl_samples.py``); the expected header and index values below are parsed with ``struct``
here, independently of readplan.
"""

from __future__ import annotations

import json
import struct
import sys
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from readplan import tbl
from readplan.errors import (
    ClosedError,
    ConfigError,
    CorruptTblError,
    MissingExtraError,
    ReadplanError,
)
from readplan.records.tbl import _writer as _tbl_writer
from readplan.tfrecord import CorruptionReport
from tests.strategies import tbl_sample_specs
from tests.tbl_samples import GOLDEN, GOLDEN_DIR, Spec, write_spec

pytest.importorskip("lz4")
pytest.importorskip("fastcrc")

HEADER = struct.Struct("<4sIQIIQQII16s")
ENTRY = struct.Struct("<QIIHHBBH")


def crc16_modbus(data: bytes) -> int:
    """Bitwise CRC-16/MODBUS, straight from its definition."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def test_crc16_definition_check_value() -> None:
    assert crc16_modbus(b"123456789") == 0x4B37


# ------------------------------------------------------------------- golden files
@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_writer_reproduces_reference_bytes(name: str, tmp_path: Path) -> None:
    specs, compression = GOLDEN[name]
    written = write_spec(tmp_path / "out.tbl", specs, compression)
    assert written == (GOLDEN_DIR / f"{name}.tbl").read_bytes()


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_reader_reads_reference_files(name: str) -> None:
    specs, _ = GOLDEN[name]
    with tbl.TblFile(GOLDEN_DIR / f"{name}.tbl") as tf:
        assert len(tf) == len(specs)
        assert list(tf) == [s.data for s in specs]
        for i, spec in enumerate(specs):
            assert tf[i] == spec.data
            info = tf.info(i)
            assert (info.format, info.width, info.height) == (spec.format, spec.width, spec.height)
            assert info.uncompressed_size == len(spec.data)
            meta = tf.metadata(i)
            if spec.metadata is None:
                assert meta is None
            else:
                assert meta == tbl.Metadata("json", spec.metadata.encode())
                assert json.loads(meta.text)["label"] == i


def test_golden_layout_matches_the_spec() -> None:
    """Header and index fields of a reference file, parsed independently."""
    specs, _ = GOLDEN["mixed_lz4"]
    raw = (GOLDEN_DIR / "mixed_lz4.tbl").read_bytes()
    magic, version, n, header_size, pad, meta_off, meta_size, flags, crc, reserved = (
        HEADER.unpack_from(raw)
    )
    assert (magic, version, n, header_size, pad) == (b"TBL\x02", 2, 14, 64 + 24 * 14, 0)
    assert flags == 0b111
    assert reserved == bytes(16)
    assert crc == zlib.crc32(raw[:44] + bytes(4) + raw[48:64])
    assert meta_off + meta_size == len(raw)
    position = header_size
    with tbl.TblFile(GOLDEN_DIR / "mixed_lz4.tbl") as tf:
        for i, spec in enumerate(specs):
            off, size, usize, w, h, fmt, eflags, ecrc = ENTRY.unpack_from(raw, 64 + 24 * i)
            assert off == position
            position += size
            assert ecrc == crc16_modbus(spec.data)
            assert usize == len(spec.data)
            assert bool(eflags & 1) == (size < len(spec.data))
            assert bool(eflags & 2) == (spec.metadata is not None)
            assert tf.info(i) == tbl.SampleInfo(
                i,
                off,
                size,
                usize,
                w,
                h,
                tbl.FORMATS[fmt],
                bool(eflags & 1),
                bool(eflags & 2),
                ecrc,
            )
    assert position == meta_off


def test_raw_view_is_zero_copy_and_matches_samples() -> None:
    specs, _ = GOLDEN["raw_u8"]
    with tbl.TblFile(GOLDEN_DIR / "raw_u8.tbl") as tf:
        view = tf.raw_view()
        one_by_one = np.stack(
            [np.frombuffer(tf[i], np.uint8).reshape(4, 6, 3) for i in range(len(tf))]
        )
    assert isinstance(view, np.memmap)
    assert view.shape == (5, 4, 6, 3)
    assert not view.flags.writeable
    np.testing.assert_array_equal(view, one_by_one)
    assert view.tobytes() == b"".join(s.data for s in specs)


def test_a_copy_on_write_view_is_writable_and_never_writes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "raw_u8.tbl"
    path.write_bytes((GOLDEN_DIR / "raw_u8.tbl").read_bytes())
    before = path.read_bytes()
    with tbl.TblFile(path) as tf:
        view = tf.raw_view(copy_on_write=True)
        original = np.array(tf.raw_view())
        with pytest.raises(ConfigError, match="copy_on_write"):
            tf.raw_view(copy_on_write=1)  # type: ignore[arg-type]
    assert view.flags.writeable
    np.testing.assert_array_equal(view, original)
    view[2] = 255
    assert (view[2] == 255).all()
    assert path.read_bytes() == before
    with tbl.TblFile(path) as tf:
        np.testing.assert_array_equal(tf.raw_view(), original)


@pytest.mark.parametrize("name", ["mixed", "mixed_lz4", "empty"])
def test_raw_view_refuses_other_files(name: str) -> None:
    with tbl.TblFile(GOLDEN_DIR / f"{name}.tbl") as tf, pytest.raises(ConfigError, match="view"):
        tf.raw_view()


# -------------------------------------------------------------------- round trips
@given(specs=st.lists(tbl_sample_specs, max_size=20), compression=st.booleans())
def test_round_trip(
    tmp_path_factory: pytest.TempPathFactory, specs: list[Spec], compression: bool
) -> None:
    path = tmp_path_factory.mktemp("rt") / "x.tbl"
    raw = write_spec(path, specs, compression)
    with tbl.TblFile(path) as tf:
        assert [tf[i] for i in range(len(tf))] == [s.data for s in specs]
        assert [tf.metadata(i) for i in range(len(tf))] == [
            None if s.metadata is None else tbl.Metadata("json", s.metadata.encode()) for s in specs
        ]
        skip = len(specs) // 3
        assert list(tf.read(skip, len(specs) - skip)) == [s.data for s in specs[skip:]]
    n = HEADER.unpack_from(raw)[2]
    assert n == len(specs) == tbl.count(path)
    for i, spec in enumerate(specs):
        assert ENTRY.unpack_from(raw, 64 + 24 * i)[7] == crc16_modbus(spec.data)


# ------------------------------------------------------------------------- writer
def test_writer_refuses_out_of_range_fields(tmp_path: Path) -> None:
    with tbl.TblWriter(tmp_path / "x.tbl") as writer:
        with pytest.raises(ConfigError, match="width=70000") as err:
            writer.add(b"x", width=70000)
        assert err.value.field == "width"
        assert err.value.value == 70000
        with pytest.raises(ConfigError, match="height"):
            writer.add(b"x", height=-1)
        with pytest.raises(ConfigError, match="format"):
            writer.add(b"x", format="gif")  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="width \\* height \\* 3"):
            writer.add(b"xx", format="raw_u8", width=1, height=1)
        with pytest.raises(ConfigError, match="metadata type"):
            writer.add(b"x", metadata="{}", metadata_type="yaml")  # type: ignore[arg-type]
        writer.add(b"ok")
    with pytest.raises(ClosedError, match="closed") as closed:
        writer.add(b"late")
    assert closed.value.path == str(tmp_path / "x.tbl")
    assert list(tbl.read(tmp_path / "x.tbl")) == [b"ok"]


def test_writer_refuses_what_the_u32_fields_cannot_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real limits (4 GiB a sample, some 179 million samples) are lowered so that the test
    # reaches them without writing gigabytes; the checks compare against the same names.
    monkeypatch.setattr(_tbl_writer, "_U32", 3)
    monkeypatch.setattr(_tbl_writer, "MAX_SAMPLES", 2)
    with tbl.TblWriter(tmp_path / "x.tbl") as writer:
        with pytest.raises(ConfigError, match="at most 3 bytes") as big:
            writer.add(b"four")
        assert (big.value.field, big.value.value) == ("data", 4)
        writer.add(b"one")
        writer.add(b"two")
        with pytest.raises(ConfigError, match="at most 2 samples") as many:
            writer.add(b"3")
        assert (many.value.field, many.value.value) == ("num_samples", 3)
    assert list(tbl.read(tmp_path / "x.tbl")) == [b"one", b"two"]


def test_failed_write_leaves_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "x.tbl"
    target.write_bytes(b"previous")

    def fail_midway() -> None:
        with tbl.TblWriter(target) as writer:
            writer.add(b"new")
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        fail_midway()
    assert target.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.tbl"]


def test_writer_streams_payloads_to_disk(tmp_path: Path) -> None:
    """Only the 24-byte entries stay in memory: 64 samples of 1 MiB grow it by far less."""
    payload = bytes(range(256)) * 4096
    tracemalloc.start()
    try:
        with tbl.TblWriter(tmp_path / "big.tbl") as writer:
            baseline = tracemalloc.get_traced_memory()[0]
            for _ in range(64):
                writer.add(payload)
            grown = tracemalloc.get_traced_memory()[0] - baseline
            spooled = sum(p.stat().st_size for p in tmp_path.iterdir())
    finally:
        tracemalloc.stop()
    assert spooled >= 64 * len(payload)
    assert grown < 64 * 1024
    assert (tmp_path / "big.tbl").stat().st_size == 64 + 64 * (24 + len(payload))


def test_missing_lz4_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from readplan.records.tbl import _layout as _tbl_layout

    monkeypatch.setattr(_tbl_layout, "_lz4", None)
    monkeypatch.setitem(sys.modules, "lz4.block", None)
    with pytest.raises(MissingExtraError, match=r"readplan\[tbl\]") as err:
        tbl.TblWriter(tmp_path / "x.tbl", compression=True)
    assert err.value.package == "lz4"
    assert err.value.extra == "tbl"
    assert isinstance(err.value, ImportError)
    with tbl.TblFile(GOLDEN_DIR / "mixed_lz4.tbl") as tf:
        assert tf[0] == GOLDEN["mixed_lz4"][0][0].data  # stored, not compressed
        compressed = next(i for i in range(len(tf)) if tf.info(i).compressed)
        with pytest.raises(MissingExtraError):
            tf[compressed]


# ------------------------------------------------------------------------- damage
def reheader(raw: bytearray, **fields: int) -> bytearray:
    """Change header fields and fix the header CRC, as a buggy or hostile writer would."""
    names = [
        "magic",
        "version",
        "num_samples",
        "header_size",
        "padding",
        "metadata_offset",
        "metadata_size",
        "flags",
        "checksum",
        "reserved",
    ]
    values = dict(zip(names, HEADER.unpack_from(raw)))
    values.update(fields)
    values["checksum"] = 0
    head = HEADER.pack(*values.values())
    head = head[:44] + struct.pack("<I", zlib.crc32(head)) + head[48:]
    return bytearray(head) + raw[64:]


def read_everything(path: Path) -> None:
    with tbl.TblFile(path) as tf:
        list(tf)
        [tf.metadata(i) for i in range(len(tf))]


def damage_of(path: Path, raw: bytes) -> CorruptTblError:
    path.write_bytes(raw)
    with pytest.raises(CorruptTblError) as err:
        read_everything(path)
    return err.value


def golden() -> bytearray:
    return bytearray((GOLDEN_DIR / "mixed_lz4.tbl").read_bytes())


def test_huge_sample_count_is_refused_without_allocating(tmp_path: Path) -> None:
    raw = reheader(golden(), num_samples=2**60, header_size=(64 + 24 * 2**60) & 0xFFFFFFFF)
    err = damage_of(tmp_path / "x.tbl", raw)
    assert err.kind in {"header_field", "truncated_header"}
    raw = reheader(golden(), num_samples=10**8, header_size=64 + 24 * 10**8)
    err = damage_of(tmp_path / "x.tbl", raw)
    assert (err.kind, err.field, err.offset) == ("truncated_header", "num_samples", 8)
    assert "2400000064" in str(err)
    assert str(tmp_path) in str(err)


@pytest.mark.parametrize(
    ("mutate", "kind", "field"),
    [
        (lambda raw: raw.__setitem__(slice(0, 4), b"TBL\x01"), "bad_magic", "magic"),
        (lambda raw: raw.__setitem__(50, 1), "header_crc", "checksum"),
        (
            lambda raw: raw.__setitem__(slice(None), reheader(raw, flags=0x17)),
            "header_field",
            "flags",
        ),
        (
            lambda raw: raw.__setitem__(slice(None), reheader(raw, header_size=7)),
            "header_field",
            "header_size",
        ),
        (  # metadata flag cleared, section still named
            lambda raw: raw.__setitem__(slice(None), reheader(raw, flags=0x5)),
            "header_field",
            "metadata_offset",
        ),
        (lambda raw: raw.__setitem__(slice(None), raw[:40]), "truncated_header", "magic"),
    ],
)
def test_header_damage(tmp_path: Path, mutate, kind: str, field: str) -> None:  # type: ignore[no-untyped-def]
    raw = golden()
    mutate(raw)
    report = CorruptionReport()
    path = tmp_path / "x.tbl"
    path.write_bytes(raw)
    with pytest.raises(CorruptTblError) as err:
        tbl.TblFile(path, on_corruption="skip", report=report)
    assert (err.value.kind, err.value.field, err.value.path) == (kind, field, str(path))
    assert isinstance(err.value, ReadplanError)
    assert isinstance(err.value, ValueError)
    assert [e.kind for e in report] == [kind]


def entry_field(raw: bytearray, i: int, name: str, value: int) -> None:
    fields = list(ENTRY.unpack_from(raw, 64 + 24 * i))
    names = [
        "offset",
        "size",
        "uncompressed_size",
        "width",
        "height",
        "format",
        "flags",
        "checksum",
    ]
    fields[names.index(name)] = value
    ENTRY.pack_into(raw, 64 + 24 * i, *fields)


def test_sample_damage_kinds_and_skip_mode(tmp_path: Path) -> None:
    specs, _ = GOLDEN["mixed_lz4"]
    raw = golden()
    assert ENTRY.unpack_from(raw, 64 + 24 * 6)[:2] == (568, 70000)
    entry_field(raw, 1, "offset", 10)  # inside the header
    entry_field(raw, 3, "offset", 600)  # inside sample 6
    entry_field(raw, 2, "format", 9)
    entry_field(raw, 8, "checksum", ENTRY.unpack_from(raw, 64 + 24 * 8)[7] ^ 1)
    entry_field(raw, 9, "offset", len(raw) - 2)  # runs past the end
    off, size, _, _, _, _, flags, _ = ENTRY.unpack_from(raw, 64 + 24 * 11)
    assert flags & 1
    raw[off : off + size] = bytes([0xFF]) * size  # not an LZ4 block any more
    path = tmp_path / "x.tbl"
    path.write_bytes(raw)
    # A moved entry's neighbours are damage too (index_order): either side of a broken
    # boundary may be the entry that moved, and so may the entry whose payload it points
    # into (6, holding 3's claim) and an empty one beside that.
    expected = {
        0: "index_order",
        1: "index_bounds",
        2: "index_field",
        3: "index_overlap",
        4: "index_order",
        6: "index_overlap",
        7: "index_order",
        8: "index_order",
        9: "truncated_data",
        10: "index_order",
        11: "lz4",
    }
    report = CorruptionReport()
    with tbl.TblFile(path, on_corruption="skip", report=report) as tf:
        got = list(tf)
        assert tf.damaged.tolist() == [0, 1, 2, 3, 4, 6, 7, 8, 9, 10]
        for i, kind in expected.items():
            with pytest.raises(CorruptTblError) as err:
                tf[i]
            assert (err.value.kind, err.value.record_index) == (kind, i)
    assert got == [s.data for i, s in enumerate(specs) if i not in expected]
    assert [(e.record_index, e.kind) for e in report] == sorted(expected.items())
    assert report.records_skipped == len(expected)
    # raise mode: every sample before the first damage, then the error
    with tbl.TblFile(path) as tf:
        reader = iter(tf)
        with pytest.raises(CorruptTblError, match=r"sample 0 .*index_order"):
            next(reader)
        assert tf[5] == specs[5].data


def test_metadata_damage(tmp_path: Path) -> None:
    raw = golden()
    meta_off, _meta_size = HEADER.unpack_from(raw)[5:7]
    length_at = meta_off + 16 + len(GOLDEN["mixed_lz4"][0][0].metadata or "") + 8
    raw[length_at : length_at + 4] = struct.pack("<I", 10**9)  # second block's size
    err = damage_of(tmp_path / "x.tbl", bytes(raw))
    assert (err.kind, err.field) == ("metadata_overrun", "size")
    report = CorruptionReport()
    with tbl.TblFile(tmp_path / "x.tbl", on_corruption="skip", report=report) as tf:
        assert tf.metadata(0) is not None
        assert tf.metadata(2) is None
        assert list(tf) == [s.data for s in GOLDEN["mixed_lz4"][0]]
    assert [e.kind for e in report] == ["metadata_overrun"]


@given(cut=st.integers(0, 10**6))
def test_any_truncation_is_found(tmp_path_factory: pytest.TempPathFactory, cut: int) -> None:
    raw = (GOLDEN_DIR / "mixed_lz4.tbl").read_bytes()
    path = tmp_path_factory.mktemp("cut") / "x.tbl"
    err = damage_of(path, raw[: cut % len(raw)])
    assert err.kind in tbl.KINDS


def test_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="on_corruption"):
        tbl.TblFile(GOLDEN_DIR / "empty.tbl", on_corruption="ignore")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="verify"):
        tbl.TblFile(GOLDEN_DIR / "empty.tbl", verify=1)  # type: ignore[arg-type]
    with tbl.TblFile(GOLDEN_DIR / "mixed.tbl") as tf:
        with pytest.raises(IndexError, match="out of range"):
            tf[14]
        assert tf[-1] == GOLDEN["mixed"][0][-1].data
        with pytest.raises(IndexError, match="14 samples"):
            tf.read(5, 10)
    with pytest.raises(ClosedError, match="closed") as closed:
        tf[0]
    assert closed.value.path == str(GOLDEN_DIR / "mixed.tbl")
