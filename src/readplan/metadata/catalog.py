"""The embedded catalog: shard layouts readplan knows without the dataset's files
(``specs/splits.md`` §12)."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from readplan.errors import DatasetInfoError
from readplan.metadata.loader import _I, Build, ProtoFields
from readplan.metadata.naming import shard_lengths
from readplan.metadata.split_info import SplitInfo

__all__ = ["catalog", "catalog_names"]

_WHERE = "readplan/data/catalog.json"


def catalog_names() -> list[str]:
    """Names of the datasets whose shard layout readplan knows without their files."""
    return sorted(_datasets())


def catalog(build: Build[_I]) -> dict[str, _I]:
    """Every catalog entry, as DatasetInfo objects made by ``build``."""
    return {name: _catalog_entry(name, entry, build) for name, entry in _datasets().items()}


@functools.lru_cache(maxsize=1)
def _datasets() -> dict[str, Any]:
    resource = resources.files("readplan") / "data" / "catalog.json"
    raw = json.loads(resource.read_text(encoding="utf-8"))
    datasets = ProtoFields(raw, "", _WHERE).value("datasets")
    if not isinstance(datasets, dict):
        raise DatasetInfoError(f"{_WHERE}: 'datasets' must be an object", path=_WHERE)
    return datasets


def _catalog_entry(name: str, entry: Any, build: Build[_I]) -> _I:
    fields = ProtoFields(entry, f"datasets.{name}", _WHERE)
    raw_splits = fields.value("splits")
    if not isinstance(raw_splits, list) or not raw_splits:
        raise fields.fail("splits", "expected a non-empty list")
    splits = {}
    for index, raw in enumerate(raw_splits):
        split_fields = ProtoFields(raw, f"datasets.{name}.splits[{index}]", _WHERE)
        split_name = split_fields.required_string("name")
        split_fields.required_string("source")
        splits[split_name] = SplitInfo(split_name, _catalog_lengths(split_fields))
    return build(
        name,
        splits,
        file_format=fields.string("fileFormat") or "tfrecord",
        version=fields.string("version"),
    )


def _catalog_lengths(fields: ProtoFields) -> tuple[int, ...]:
    lengths = fields.value("shardLengths")
    if lengths == "formula":
        return tuple(
            shard_lengths(
                fields.int64("numExamples", fields.value("numExamples")),
                fields.int64("numShards", fields.value("numShards")),
            )
        )
    if not isinstance(lengths, list):
        raise fields.fail("shardLengths", 'expected a list of ints or "formula"')
    return tuple(fields.int64("shardLengths", value) for value in lengths)
