"""Errors raised for closed objects and wrong argument types are readplan's own classes
(still the built-ins callers catch) and carry the offending value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import readplan
from readplan import storage, tfrecord
from readplan.errors import (
    ClosedError,
    ConfigError,
    ConfigTypeError,
    ReadplanError,
    ReadplanTypeError,
)
from readplan.reading.salvage import Salvage


def test_a_closed_salvaged_shard_names_its_file(tmp_path: Path) -> None:
    path = str(tmp_path / "data.tfrecord")
    tfrecord.write(path, [b"a", b"bc", b"def"])
    salvaged = Salvage(path, planned=3)
    assert salvaged.read(1) == b"bc"
    salvaged.close()
    with pytest.raises(ClosedError, match="closed") as closed:
        salvaged.read(1)
    assert isinstance(closed.value, ValueError)
    assert closed.value.path == path


def test_a_bytes_path_is_a_config_type_error() -> None:
    with pytest.raises(ConfigTypeError, match="must be str") as raised:
        storage.to_str(b"data.tfrecord")  # type: ignore[arg-type]
    assert isinstance(raised.value, TypeError)
    assert isinstance(raised.value, ReadplanError)
    assert (raised.value.field, raised.value.value) == ("path", b"data.tfrecord")


def _open(tmp_path: Path, reader: str, on_corruption: Any, report: Any) -> object:
    if reader == "tbl":
        pytest.importorskip("lz4")
        from readplan import tbl

        tbl.write(tmp_path / "x.tbl", [b"x"])
        return tbl.TblFile(tmp_path / "x.tbl", on_corruption=on_corruption, report=report)
    tfrecord.write(tmp_path / "x.tfrecord", [b"x"])
    return tfrecord.read(tmp_path / "x.tfrecord", on_corruption=on_corruption, report=report)


@pytest.mark.parametrize("reader", ["tfrecord", "tbl"])
@pytest.mark.parametrize(
    ("on_corruption", "report", "field"),
    [("ignore", None, "on_corruption"), ("skip", [], "report"), ("raise", "report", "report")],
)
def test_every_reader_checks_damage_options_alike(
    tmp_path: Path, reader: str, on_corruption: str, report: object, field: str
) -> None:
    with pytest.raises(ConfigError, match=field) as raised:
        _open(tmp_path, reader, on_corruption, report)
    offending = on_corruption if field == "on_corruption" else report
    assert (raised.value.field, raised.value.value) == (field, offending)


@pytest.mark.parametrize(
    ("call", "field", "value"),
    [
        (lambda: readplan.parse_split(b"train"), "spec", b"train"),
        (lambda: readplan.ReadInstruction(3), "split_name", 3),
        (lambda: readplan.SplitSpec.of(3.5), "split", 3.5),
        (lambda: readplan.SplitSpec(()), "parts", ()),
        (lambda: readplan.parse_split("train") + 1, "other", 1),
        (lambda: readplan.even_splits("train", 2)[0] + 1, "other", 1),
    ],
)
def test_type_errors_carry_the_offending_value(call: Any, field: str, value: object) -> None:
    with pytest.raises(ReadplanTypeError) as raised:
        call()
    assert isinstance(raised.value, TypeError)
    assert (raised.value.field, raised.value.value) == (field, value)


def test_a_type_error_rebuilt_from_its_message_has_no_value() -> None:
    rebuilt = ReadplanTypeError("boom")
    assert (str(rebuilt), rebuilt.field, rebuilt.value) == ("boom", None, None)
