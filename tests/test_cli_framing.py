"""``readplan inspect`` and ``readplan index`` through readplan.cli.main."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest

from readplan import tfrecord
from readplan.cli.main import build_parser
from readplan.errors import CorruptRecordError
from readplan.index import load_index
from tests.cli_runs import run
from tests.conftest import DATA
from tests.tfrecord_fixtures import FILES, FIXTURES

KIND_NAMES = {"int64_list": "int64", "float_list": "float", "bytes_list": "bytes"}


def inspect_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict]]:  # type: ignore[type-arg]
    status, out, _ = run(capsys, "inspect", "--json", *argv)
    return status, json.loads(out)["files"]


@pytest.mark.parametrize("name", ["examples.tfrecord", "examples.tfrecord.gz"])
def test_inspect_json_summary(capsys: pytest.CaptureFixture[str], name: str) -> None:
    status, (summary,) = inspect_json(capsys, str(FIXTURES / name))
    info = FILES[name]
    sizes = info["record_sizes"]
    assert status == 0
    assert summary["records"] == len(sizes)
    assert summary["compression"] == (info["compression"] or None)
    assert summary["file_bytes"] == (FIXTURES / name).stat().st_size
    assert summary["record_bytes"] == {
        "total": sum(sizes),
        "min": min(sizes),
        "median": statistics.median(sizes),
        "max": max(sizes),
    }
    assert summary["damage"] == []
    examples = FILES["examples.tfrecord"]["examples"]
    features = summary["features"]
    assert set(features) == set(examples[0])
    for key, entry in features.items():
        counts = [len(example[key][1]) for example in examples]
        assert entry == {
            "kind": KIND_NAMES[examples[0][key][0]],
            "examples": len(examples),
            "min_values": min(counts),
            "max_values": max(counts),
        }


def test_inspect_limits_decoded_examples(capsys: pytest.CaptureFixture[str]) -> None:
    _, (summary,) = inspect_json(
        capsys, "--summary-records", "2", str(FIXTURES / "examples.tfrecord")
    )
    assert summary["records"] == 40
    assert summary["features"]["objects"]["examples"] == 2
    _, (summary,) = inspect_json(
        capsys, "--summary-records", "0", str(FIXTURES / "examples.tfrecord")
    )
    assert summary["features"] is None


def test_inspect_says_when_records_are_not_examples(capsys: pytest.CaptureFixture[str]) -> None:
    status, (summary,) = inspect_json(capsys, str(FIXTURES / "raw_sizes.tfrecord"))
    assert status == 0
    assert summary["features"] is None
    assert "not a tf.train.Example" in summary["features_note"]
    assert summary["record_bytes"]["max"] == 1_048_576


def test_inspect_lists_damage_and_keeps_reading(capsys: pytest.CaptureFixture[str]) -> None:
    damaged = str(FIXTURES / "damaged_flip_length_bit.tfrecord")
    status, summaries = inspect_json(capsys, damaged, str(FIXTURES / "empty.tfrecord"))
    assert status == 1
    (event,) = summaries[0]["damage"]
    assert (event["kind"], event["offset"], event["record_index"]) == ("header_crc", 1654, 5)
    assert summaries[0]["records"] == 39
    assert summaries[1]["records"] == 0
    assert summaries[1]["record_bytes"] is None


def test_inspect_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys, "inspect", str(FIXTURES / "damaged_flip_data_bit.tfrecord"), "--examples", "3"
    )
    assert status == 1
    assert "records:     39" in out
    assert "image/encoded" in out
    assert "data_crc at offset 1,654 (record 5), 443 bytes skipped" in out


def test_inspect_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.tfrecord")
    status, out, err = run(capsys, "inspect", missing, str(FIXTURES / "empty.tfrecord"))
    assert status == 2
    assert (out + err).count("No such file or directory") == 1
    assert f"{missing}\n  error: No such file or directory" in out
    assert "empty.tfrecord" in out
    status, out, err = run(capsys, "inspect", "--json", missing)
    assert status == 2
    assert json.loads(out)["files"][0]["error"] == "No such file or directory"
    assert err.count("No such file or directory") == 1
    assert missing in err


def test_index_builds_sidecars(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    copies = []
    for name in ("examples.tfrecord", "examples.tfrecord.zz"):
        shutil.copy(FIXTURES / name, tmp_path / name)
        copies.append(str(tmp_path / name))
    status, out, _ = run(capsys, "index", "--text", *copies)
    assert status == 0
    for copy in copies:
        assert f"{copy}: 40 records -> {copy}.index, {copy}.idx" in out
        assert len(load_index(copy, compression="auto")) == 40
        assert tfrecord.count(copy, compression="auto") == 40
    first_line = Path(copies[0] + ".idx").read_text().splitlines()[0]
    assert first_line == f"0 {FILES['examples.tfrecord']['record_sizes'][0] + 16}"


def test_index_refuses_damaged_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    damaged = tmp_path / "d.tfrecord"
    shutil.copy(FIXTURES / "damaged_truncated_in_data.tfrecord", damaged)
    good = tmp_path / "g.tfrecord"
    shutil.copy(FIXTURES / "examples.tfrecord", good)
    status, _out, err = run(capsys, "index", str(damaged), str(good))
    assert status == 1
    assert "no index written" in err
    assert str(damaged) in err
    assert not Path(str(damaged) + ".index").exists()
    assert Path(str(good) + ".index").exists()


def test_index_with_explicit_compression(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    copy = tmp_path / "e.gz"
    shutil.copy(FIXTURES / "examples.tfrecord.gz", copy)
    status, _, err = run(capsys, "index", "--compression", "ZLIB", str(copy))
    assert status == 1
    assert "damaged at compressed offset 0" in err
    status, _, _ = run(capsys, "index", "--compression", "GZIP", str(copy))
    assert status == 0


def test_index_refuses_a_file_whose_data_is_damaged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Headers intact, one data bit flipped: a header walk alone would index it."""
    damaged = tmp_path / "d.tfrecord"
    shutil.copy(FIXTURES / "damaged_flip_data_bit.tfrecord", damaged)
    status, out, err = run(capsys, "index", str(damaged))
    assert status == 1
    assert "data_crc" in err or "CRC of its" in err
    assert "no index written" in err
    assert out == ""
    assert not Path(str(damaged) + ".index").exists()


def test_inspect_says_when_a_file_is_not_a_tfrecord(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = tmp_path / "info.json"
    text.write_text('{"name": "not records", "values": [1, 2, 3]}')
    gz = tmp_path / "g.tfrecord"
    shutil.copy(FIXTURES / "examples.tfrecord.gz", gz)
    short = tmp_path / "short.tfrecord"
    short.write_bytes(b"12345")
    status, summaries = inspect_json(capsys, "--compression", "none", str(text), str(gz))
    assert status == 2
    for summary in summaries:
        assert "is not a TFRecord file" in summary["error"]
        assert "trailing_garbage" not in summary["error"]
    assert "--compression GZIP" in summaries[1]["error"]
    assert "--compression" not in summaries[0]["error"]
    status, out, err = run(capsys, "inspect", str(short))
    assert status == 2
    assert "5 bytes are fewer than one record header" in out
    assert "record -1" not in out + err


def test_short_file_message_names_no_record_before_the_first(tmp_path: Path) -> None:
    short = tmp_path / "short.tfrecord"
    short.write_bytes(b"12345")
    with pytest.raises(CorruptRecordError) as raised:
        list(tfrecord.read(short))
    assert "record -1" not in str(raised.value)
    assert "before any record" in str(raised.value)


def test_inspect_counts_values_per_example(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(
        capsys, "inspect", "--summary-records", "3", str(FIXTURES / "examples.tfrecord")
    )
    assert "height         int64            3  1 value per example" in out
    assert "empty_bytes    bytes            3  0 values per example" in out
    assert "..1" not in out


def test_index_json_and_text_sidecars(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    copy = tmp_path / "e.tfrecord"
    shutil.copy(FIXTURES / "examples.tfrecord", copy)
    status, out, _ = run(capsys, "index", "--json", "--text", str(copy))
    assert status == 0
    (result,) = json.loads(out)["files"]
    assert result == {
        "path": str(copy),
        "status": "indexed",
        "records": 40,
        "written": [f"{copy}.index", f"{copy}.idx"],
    }
    parser_help = _subcommand_help("index")
    assert "also write FILE.idx" in parser_help
    assert "FILE.index is written either way" in parser_help


def _subcommand_help(name: str) -> str:
    parser = build_parser()
    for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
        if name in action.choices:  # type: ignore[operator]
            return str(action.choices[name].format_help())  # type: ignore[index]
    raise AssertionError(name)


def test_errors_name_flags_not_keywords(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    copy = tmp_path / "e.gz"
    shutil.copy(FIXTURES / "examples.tfrecord.gz", copy)
    status, _, err = run(capsys, "index", "--compression", "ZLIB", str(copy))
    assert status == 1
    assert "--compression auto" in err
    assert "compression=" not in err
    assert "on_corruption" not in err
    big = tmp_path / "big.tfrecord"
    shutil.copy(FIXTURES / "examples.tfrecord", big)
    status, _, err = run(capsys, "index", "--max-record-bytes", "100", str(big))
    assert status == 1
    assert "--max-record-bytes 100" in err
    assert "max_record_bytes" not in err
    status, out, _ = run(capsys, "inspect", "--max-record-bytes", "100", str(big))
    assert status == 1
    assert "absurd_length" in out


def test_inspect_says_when_a_file_is_not_compressed_as_given(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plain = tmp_path / "p.tfrecord"
    shutil.copy(FIXTURES / "examples.tfrecord", plain)
    gz = tmp_path / "g.tfrecord"
    shutil.copy(FIXTURES / "examples.tfrecord.gz", gz)
    text = tmp_path / "t.json"
    text.write_text('{"not": "records at all"}')
    _, (as_gzip,) = inspect_json(capsys, "--compression", "GZIP", str(plain))
    assert "is not GZIP-compressed" in as_gzip["error"]
    assert "--compression none" in as_gzip["error"]
    _, (as_zlib,) = inspect_json(capsys, "--compression", "ZLIB", str(gz))
    assert "--compression GZIP" in as_zlib["error"]
    status, (foreign,) = inspect_json(capsys, "--compression", "GZIP", str(text))
    assert status == 2
    assert "nor a TFRecord record header" in foreign["error"]


# --------------------------------------------------------------------------- TBL v2
TBL_FIXTURES = DATA / "tbl"


def test_inspect_tbl_summary(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.tbl_samples import GOLDEN

    specs, _ = GOLDEN["mixed_lz4"]
    path = TBL_FIXTURES / "mixed_lz4.tbl"
    status, (summary,) = inspect_json(capsys, str(path))
    sizes = [len(s.data) for s in specs]
    assert status == 0
    assert summary["container"] == "tbl"
    assert summary["compression"] == "lz4"
    assert summary["records"] == len(specs)
    assert summary["file_bytes"] == path.stat().st_size
    assert summary["record_bytes"] == {
        "total": sum(sizes),
        "min": min(sizes),
        "median": statistics.median(sizes),
        "max": max(sizes),
    }
    payload_area = path.stat().st_size - 64 - 24 * len(specs)
    metadata_bytes = sum(16 + len(s.metadata.encode()) for s in specs if s.metadata is not None)
    assert summary["stored_bytes"] == payload_area - metadata_bytes
    assert summary["compression_ratio"] == pytest.approx(sum(sizes) / summary["stored_bytes"])
    assert summary["samples_with_metadata"] == sum(s.metadata is not None for s in specs)
    formats: dict[str, int] = {}
    for s in specs:
        formats[s.format] = formats.get(s.format, 0) + 1
    assert summary["formats"] == dict(sorted(formats.items()))
    assert len(summary["dimensions"]) == 5
    assert summary["damage"] == []


def test_inspect_tbl_text_and_damage(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    raw = bytearray((TBL_FIXTURES / "raw_u8.tbl").read_bytes())
    raw[-1] ^= 0xFF  # last payload byte: its CRC-16 no longer matches
    damaged = tmp_path / "damaged.tbl"
    damaged.write_bytes(raw)
    status, out, _ = run(capsys, "inspect", str(TBL_FIXTURES / "raw_u8.tbl"), str(damaged))
    assert status == 1
    assert "container:   TBL v2" in out
    assert "formats:     raw_u8 5" in out
    assert "dimensions:  6x4 (5)" in out
    assert "data_crc at offset 472 (record 4)" in out
    status, files = inspect_json(capsys, str(damaged))
    assert status == 1
    assert [(d["kind"], d["record_index"]) for d in files[0]["damage"]] == [("data_crc", 4)]
    raw[50] ^= 1  # header checksum
    damaged.write_bytes(raw)
    status, out, err = run(capsys, "inspect", str(damaged))
    assert status == 2
    assert "header_crc" in out + err
