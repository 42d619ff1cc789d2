"""The TFDS data-source fixture, and the checks every container format's data source passes.

``tests/data/tfds_data_source`` holds a real TFDS dataset and, for 41 split strings, ``len``
and the ``id`` of every key as TFDS's own ArrayRecord data source returned them. The layout
checks write shards whose records name their own split, shard and index, and derive the
expected record of each key from the split's bounds, not from readplan.
"""

from __future__ import annotations

import base64
import json
import pickle
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

from readplan import tbl, tfrecord
from readplan.errors import RecordKeyError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.reading.data_source import data_source
from tests.conftest import DATA

_FIXTURE = DATA / "tfds_data_source"
CASES = json.loads((_FIXTURE / "data_source_cases.json").read_text(encoding="utf-8"))
TFDS_DIR = _FIXTURE / CASES["tfrecord_dir"]
TFDS_INFO = DatasetInfo.load(TFDS_DIR)
_PAYLOADS = {int(k): base64.b64decode(v) for k, v in CASES["payloads"].items()}


def record_id(record: Any) -> int:
    """The ``id`` feature of a record decoded as an Example."""
    return int(record["id"][0])


def check_case(directory: Path, case: dict[str, Any], index_dir: Path) -> None:
    """The dataset in ``directory`` gives the ids TFDS's data source gave for ``case``."""
    source = data_source(directory, case["spec"], decode="tfds", index_dir=index_dir)
    if "data_source" in case:
        # TFDS's ArrayRecord backend raises for a split without records; readplan gives an
        # empty source (specs/data_source.md, "Empty splits").
        assert case["data_source"]["message"] == "Paths sequence can not be of 0 length"
        assert len(source) == 0
        assert list(source) == []
        return
    assert len(source) == case["len"]
    assert [source[k]["id"] for k in range(len(source))] == case["ids"]
    assert [r["id"] for r in source] == case["ids"]
    backwards = source.__getitems__(list(range(len(source)))[::-1])
    assert [r["id"] for r in backwards] == case["ids"][::-1]
    keys, ids = case["getitems"]["keys"], case["getitems"]["ids"]
    got = source.__getitems__(keys)
    assert [r["id"] for r in got] == ids
    assert [r["id"] for r in source._getitems(np.array(keys))] == ids
    # TFDS's data source yields plain Python scalars (probes.item_types).
    assert {name: type(v).__name__ for name, v in got[0].items()} == CASES["probes"]["item_types"]
    assert all(r["payload"] == _PAYLOADS[r["id"]] for r in got)
    examples = data_source(directory, case["spec"], decode=True, index_dir=index_dir)
    assert [record_id(r) for r in examples.__getitems__(keys)] == ids


_WRITERS = {"tfrecord": tfrecord.write, "tbl": tbl.write}


def write_layout(
    directory: Path, lengths: dict[str, list[int]], file_format: str = "tfrecord"
) -> DatasetInfo:
    """Shards of these lengths per split whose records are ``b"<split>/<shard>/<index>"``."""
    directory.mkdir(parents=True, exist_ok=True)
    info = DatasetInfo("made", lengths, data_dir=str(directory), file_format=file_format)
    for name, shards in lengths.items():
        for k, count in enumerate(shards):
            _WRITERS[file_format](
                info.shard_path(name, k), [f"{name}/{k}/{i}".encode() for i in range(count)]
            )
    return info


def _expected(lengths: dict[str, list[int]], parts: list[tuple[str, int, int]]) -> list[bytes]:
    """Records ``a .. b-1`` of each split, in order, named by shard and index."""
    out = []
    for name, a, b in parts:
        shard_of = [(k, i) for k, count in enumerate(lengths[name]) for i in range(count)]
        out.extend(f"{name}/{k}/{i}".encode() for k, i in shard_of[a:b])
    return out


def check_access_paths(
    layout: tuple[dict[str, list[int]], list[tuple[str, int, int]]],
    file_format: str,
    data: st.DataObject,
) -> None:
    """Every access path of a source over shards of ``file_format`` gives the split's records."""
    lengths, parts = layout
    spec = "+".join(f"{name}[{a}:{b}]" for name, a, b in parts)
    with tempfile.TemporaryDirectory() as folder:
        source = data_source(write_layout(Path(folder), lengths, file_format), spec)
        expected = _expected(lengths, parts)
        assert len(source) == len(expected)
        assert [source[k] for k in range(len(source))] == expected
        assert list(source) == expected
        keys = (
            data.draw(st.lists(st.integers(0, len(expected) - 1), max_size=30)) if expected else []
        )
        assert source.__getitems__(keys) == [expected[k] for k in keys]
        bad = data.draw(st.one_of(st.integers(max_value=-1), st.integers(min_value=len(expected))))
        with pytest.raises(RecordKeyError):
            source[bad]
        with pytest.raises(RecordKeyError):
            source.__getitems__([*keys, bad])
        assert pickle.loads(pickle.dumps(source)).__getitems__(keys) == source.__getitems__(keys)
        source.close()
