"""``readplan inspect`` and ``readplan index`` through readplan.cli.main."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest

from readplan import tfrecord
from readplan.cli import main
from readplan.index import load_index
from tests.conftest import DATA

FIXTURES = DATA / "tfrecord"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text(encoding="utf-8"))
KIND_NAMES = {"int64_list": "int64", "float_list": "float", "bytes_list": "bytes"}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def inspect_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict]]:  # type: ignore[type-arg]
    status, out, _ = run(capsys, "inspect", "--json", *argv)
    return status, json.loads(out)["files"]


@pytest.mark.parametrize("name", ["examples.tfrecord", "examples.tfrecord.gz"])
def test_inspect_json_summary(capsys: pytest.CaptureFixture[str], name: str) -> None:
    status, (summary,) = inspect_json(capsys, str(FIXTURES / name))
    info = MANIFEST["files"][name]
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
    examples = MANIFEST["files"]["examples.tfrecord"]["examples"]
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
    _, (summary,) = inspect_json(capsys, "--examples", "2", str(FIXTURES / "examples.tfrecord"))
    assert summary["records"] == 40
    assert summary["features"]["objects"]["examples"] == 2
    _, (summary,) = inspect_json(capsys, "--examples", "0", str(FIXTURES / "examples.tfrecord"))
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
    assert missing in err
    assert "empty.tfrecord" in out


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
    assert first_line == f"0 {MANIFEST['files']['examples.tfrecord']['record_sizes'][0] + 16}"


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
