"""TBL files with hostile indexes and tails (specs/tbl.md §6): a moved, swapped or copied
index entry never gives another sample's bytes, bytes after a file's end are damage, and
an LZ4 size claim is capped before anything is allocated.

The property test mutates index fields of the reference's golden files in a child process
whose address space is capped: every sample read either is the one written or raises a
ReadplanError, and nothing else escapes.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readplan import tbl
from readplan.errors import CorruptTblError, ReadplanError
from readplan.records.tbl._layout import ENTRY, HEADER, MAGIC, header_crc
from readplan.tfrecord import CorruptionReport
from tests.cli_runs import run
from tests.memory_bound import GIB, run_bounded
from tests.tbl_samples import GOLDEN, GOLDEN_DIR

pytest.importorskip("lz4")
pytest.importorskip("fastcrc")

_ENTRY_AT = 64


def _golden(name: str) -> bytearray:
    return bytearray((GOLDEN_DIR / f"{name}.tbl").read_bytes())


def _entry(raw: bytearray, i: int) -> bytes:
    return bytes(raw[_ENTRY_AT + 24 * i : _ENTRY_AT + 24 * (i + 1)])


def _set_entry(raw: bytearray, i: int, entry: bytes) -> None:
    raw[_ENTRY_AT + 24 * i : _ENTRY_AT + 24 * (i + 1)] = entry


def _written(name: str) -> list[bytes]:
    return [spec.data for spec in GOLDEN[name][0]]


@pytest.mark.parametrize("name", ["mixed", "mixed_lz4", "raw_u8"])
def test_swapped_entries_are_refused_where_they_are(tmp_path: Path, name: str) -> None:
    raw = _golden(name)
    first, second = _entry(raw, 0), _entry(raw, 1)
    _set_entry(raw, 0, second)
    _set_entry(raw, 1, first)
    path = tmp_path / "x.tbl"
    path.write_bytes(raw)
    written = _written(name)
    with tbl.TblFile(path) as tf:
        # Sample 2's boundary with sample 1 is broken too: which side moved is not known.
        assert tf.damaged.tolist() == [0, 1, 2]
        for i in (0, 1, 2):
            with pytest.raises(CorruptTblError, match="index_order") as err:
                tf[i]
            assert (err.value.record_index, err.value.kind) == (i, "index_order")
            assert err.value.offset == 64 + 24 * i
        assert [tf[i] for i in range(3, len(tf))] == written[3:]
    report = CorruptionReport()
    with tbl.TblFile(path, on_corruption="skip", report=report) as tf:
        assert list(tf) == written[3:]
    assert [(e.record_index, e.kind) for e in report] == [(i, "index_order") for i in range(3)]


def test_a_copied_entry_is_refused_and_the_original_kept(tmp_path: Path) -> None:
    raw = _golden("mixed_lz4")
    _set_entry(raw, 0, _entry(raw, 2))
    path = tmp_path / "x.tbl"
    path.write_bytes(raw)
    with tbl.TblFile(path) as tf:
        with pytest.raises(CorruptTblError) as err:
            tf[0]
        assert (err.value.record_index, err.value.kind) == (0, "index_overlap")
        with pytest.raises(CorruptTblError, match="index_order"):
            tf[1]  # its boundary with the copy is broken
        with pytest.raises(CorruptTblError, match="index_overlap"):
            tf[2]  # the copy's original: which of the two is genuine is not known
        assert tf.damaged.tolist() == [0, 1, 2]
        assert [tf[i] for i in range(3, len(tf))] == _written("mixed_lz4")[3:]


def test_a_resized_entry_blames_both_sides_of_the_broken_boundary(tmp_path: Path) -> None:
    raw = _golden("mixed")
    fields = list(ENTRY.unpack(_entry(raw, 4)))
    fields[1] -= 1  # size
    fields[2] -= 1  # uncompressed_size (a stored sample's)
    _set_entry(raw, 4, ENTRY.pack(*fields))
    path = tmp_path / "x.tbl"
    path.write_bytes(raw)
    with tbl.TblFile(path, verify=False) as tf:
        assert tf.damaged.tolist() == [4, 5]  # which of the two is wrong cannot be known


def _appended(tmp_path: Path, name: str, tail: bytes) -> Path:
    path = tmp_path / f"{name}-tail.tbl"
    path.write_bytes(bytes(_golden(name)) + tail)
    return path


@pytest.mark.parametrize("name", ["mixed", "raw_u8", "empty"])
def test_bytes_after_the_end_are_trailing_garbage(tmp_path: Path, name: str) -> None:
    second = (GOLDEN_DIR / "raw_u8.tbl").read_bytes()  # cat a.tbl b.tbl > c.tbl
    path = _appended(tmp_path, name, second)
    written = _written(name)
    with tbl.TblFile(path) as tf:
        reader = iter(tf)
        assert [next(reader) for _ in written] == written
        with pytest.raises(CorruptTblError, match="trailing_garbage") as err:
            next(reader)
        assert err.value.kind == "trailing_garbage"
        assert err.value.offset == len(_golden(name))
        assert [tf[i] for i in range(len(tf))] == written  # the samples themselves are sound
    report = CorruptionReport()
    assert list(tbl.read(path, on_corruption="skip", report=report)) == written
    assert [(e.kind, e.offset) for e in report] == [("trailing_garbage", len(_golden(name)))]


def test_inspect_reports_a_tail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _appended(tmp_path, "mixed_lz4", b"\0" * 10)
    status, out, _ = run(capsys, "inspect", str(path))
    assert status == 1
    assert "damage: none" not in out
    assert "trailing_garbage" in out


def _compressed_file(payload: bytes, uncompressed_size: int) -> bytes:
    """One LZ4-compressed sample of ``payload`` claiming ``uncompressed_size`` bytes."""
    fields = [MAGIC, 2, 1, 64 + 24, 0, 0, 0, 1 | 4, 0, bytes(16)]
    header = bytearray(HEADER.pack(*fields))
    fields[8] = header_crc(bytes(header))
    entry = ENTRY.pack(64 + 24, len(payload), uncompressed_size, 0, 0, 0, 1, 0)
    return HEADER.pack(*fields) + entry + payload


@pytest.mark.parametrize("claim", [2**31, 2**31 - 1])
def test_lz4_size_claims_are_capped_before_decoding(tmp_path: Path, claim: int) -> None:
    path = tmp_path / "x.tbl"
    path.write_bytes(_compressed_file(bytes(8_500_000), claim))  # 255x holds any claim
    with tbl.TblFile(path) as tf:
        with pytest.raises(CorruptTblError, match="max_record_bytes=268435456") as err:
            tf[0]
        assert (err.value.kind, err.value.field) == ("index_field", "uncompressed_size")
    with tbl.TblFile(path, max_record_bytes=2**33) as tf:
        assert tf.damaged.tolist() == []
    with pytest.raises(ReadplanError, match="max_record_bytes"):
        tbl.TblFile(path, max_record_bytes=-1)


def test_a_claim_within_the_cap_decodes_or_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "x.tbl"
    path.write_bytes(_compressed_file(bytes(100_000), 10_000_000))
    with tbl.TblFile(path) as tf, pytest.raises(CorruptTblError, match="lz4"):
        tf[0]


# --- the property ----------------------------------------------------------------------------

_FIELDS = ("offset", "size", "uncompressed_size", "width", "height", "format", "flags", "checksum")
_LIMITS = (2**64 - 1, 2**32 - 1, 2**32 - 1, 2**16 - 1, 2**16 - 1, 255, 255, 2**16 - 1)


_Mutation = tuple[str, int, int, int, int]


@st.composite
def _mutation(draw: st.DrawFn, count: int) -> _Mutation:
    """(kind, entry, other entry, field, value): a field set (or shifted by a little), two
    entries swapped, one copied over another, or bytes appended."""
    kind = draw(st.sampled_from(["field", "shift", "swap", "copy", "tail"]))
    field = draw(st.integers(0, len(_FIELDS) - 1))
    value = draw(
        st.one_of(
            st.integers(0, _LIMITS[field]),
            st.sampled_from([0, 1, 2**31 - 1, 2**31, _LIMITS[field]]),
        )
        if kind == "field"
        else st.integers(-300, 300)
    )
    return kind, draw(st.integers(0, count - 1)), draw(st.integers(0, count - 1)), field, value


def _apply(raw: bytearray, mutation: _Mutation) -> bytearray:
    kind, i, j, field, value = mutation
    if kind == "swap":
        first, second = _entry(raw, i), _entry(raw, j)
        _set_entry(raw, i, second)
        _set_entry(raw, j, first)
    elif kind == "copy":
        _set_entry(raw, i, _entry(raw, j))
    elif kind == "tail":
        raw += bytes(abs(value) + 1)
    else:
        fields = list(ENTRY.unpack(_entry(raw, i)))
        fields[field] = value if kind == "field" else fields[field] + value
        fields[field] = min(max(fields[field], 0), _LIMITS[field])
        _set_entry(raw, i, ENTRY.pack(*fields))
    return raw


@settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.sampled_from(["mixed", "mixed_lz4", "raw_u8"]), st.data())
def fuzz_tbl_index(name: str, data: st.DataObject) -> None:
    raw = _golden(name)
    written = _written(name)
    for mutation in data.draw(st.lists(_mutation(len(written)), min_size=1, max_size=3)):
        raw = _apply(raw, mutation)
    directory = Path(tempfile.mkdtemp())
    try:
        path = directory / "x.tbl"
        path.write_bytes(raw)
        with tbl.TblFile(path) as tf:
            for i in range(len(tf)):
                try:
                    got = tf[i]
                except ReadplanError:
                    continue
                assert got == written[i], f"sample {i} is another's bytes"
            for mode in ("raise", "skip"):
                try:
                    for sample in tbl.read(path, on_corruption=mode):
                        assert sample in written
                except ReadplanError:
                    pass
    finally:
        shutil.rmtree(directory)


def test_mutated_indexes_never_give_other_bytes_within_a_memory_bound() -> None:
    run_bounded(
        "from tests.test_tbl_hostile import fuzz_tbl_index; fuzz_tbl_index()",
        address_space=GIB,
        timeout=600,
    )


def test_a_last_entry_moved_onto_an_earlier_payload_is_not_read_as_a_tail(tmp_path: Path) -> None:
    """Entries 2-4 of five equal-size samples rotated (4, 2, 3): the last entry's payload ends
    before the payload area does, and the bytes after it are another entry's, not a tail."""
    raw = _golden("raw_u8")
    written = _written("raw_u8")
    for mutation in [("swap", 3, 4, 0, 0), ("swap", 2, 3, 0, 0)]:
        raw = _apply(raw, mutation)
    path = tmp_path / "x.tbl"
    path.write_bytes(raw)
    with tbl.TblFile(path) as tf:
        assert len(tf) == len(written) == 5
        assert tf.damaged.tolist() == [1, 2, 3, 4]
        assert tf[0] == written[0]
        with pytest.raises(CorruptTblError, match="index_order"):
            tf[4]


def test_entries_that_chain_after_a_copied_entry_are_still_displaced(tmp_path: Path) -> None:
    """Entries 3 and 4 swapped, then entry 2 copied over entry 3: entry 4 (sample 3's entry)
    starts where entry 3's payload ends, yet a sample later than the payloads before it put
    it; the unreferenced last payload is not a tail to step over."""
    raw = _golden("raw_u8")
    written = _written("raw_u8")
    for mutation in [("swap", 3, 4, 0, 0), ("copy", 3, 2, 0, 0)]:
        raw = _apply(raw, mutation)
    path = tmp_path / "x.tbl"
    path.write_bytes(raw)
    with tbl.TblFile(path) as tf:
        assert tf[0] == written[0]
        assert tf[1] == written[1]
        assert tf.damaged.tolist() == [2, 3, 4]
        with pytest.raises(CorruptTblError, match="index_o"):
            tf[4]


def test_an_entry_beside_a_moved_empty_sample_is_disputed(tmp_path: Path) -> None:
    """Entries 5-7 rotated (7, 5, 6) where sample 7 is empty: entries 6 and 7 chain and sit
    where the payloads before them put them; only the empty sample's misplaced point, where
    entry 7's payload ends, shows that entry 7 may hold another sample's bytes."""
    raw = _golden("mixed")
    written = _written("mixed")
    assert written[7] == b""
    for mutation in [("swap", 5, 6, 0, 0), ("swap", 5, 7, 0, 0)]:
        raw = _apply(raw, mutation)
    path = tmp_path / "x.tbl"
    path.write_bytes(raw)
    with tbl.TblFile(path) as tf:
        assert 7 in tf.damaged.tolist()
        with pytest.raises(CorruptTblError, match="index_o"):
            tf[7]


def test_entries_between_a_moved_empty_sample_and_its_place_are_damage(tmp_path: Path) -> None:
    """Empty sample 7's offset moved back a byte, then entries 7-9 rotated (8, 9, 7): entry 7
    (sample 8's) chains where sample 7 belongs, and only the empty entry, now last of the
    three, is misplaced; everything between it and where it points is damage."""
    raw = _golden("mixed")
    written = _written("mixed")
    for mutation in [("shift", 7, 0, 0, -1), ("swap", 7, 9, 0, 0), ("swap", 7, 8, 0, 0)]:
        raw = _apply(raw, mutation)
    path = tmp_path / "x.tbl"
    path.write_bytes(raw)
    with tbl.TblFile(path) as tf:
        assert {7, 8, 9} <= set(tf.damaged.tolist())
        assert tf[0] == written[0]
        with pytest.raises(CorruptTblError, match="index_o"):
            tf[7]
