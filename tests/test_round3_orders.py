"""Seeds outside int64, TFDS's autocache and ``+`` on lazy even splits, against TF/TFDS.

``tests/data/tfds_round3/round3_orders.json`` was written by
``tests/data/tfds_round3/generate_round3.py`` with TensorFlow 2.21 and TFDS 4.9.10: shuffle
orders of ``Dataset.range(n).shuffle(...)`` for seeds and global seeds of any size, the seeds
TF refuses, TFDS read orders of the toy dataset (file shuffles with huge seeds; TFDS's
autocache decision with sort functions, dataset sizes and reshuffle settings; three epochs
each, one ``as_dataset`` object iterated three times) and what ``even_splits(...)[0] +
other`` gives or raises.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import readplan
from readplan import ExampleShuffle, ReadConfig, ReadPlan
from readplan.errors import ConfigError, SplitError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.planning.instructions import FileInstruction
from readplan.planning.shuffle import shuffle_order
from tests.conftest import DATA
from tests.tfds_toy import TOY_DIR

ORACLE = json.loads((DATA / "tfds_round3" / "round3_orders.json").read_text(encoding="utf-8"))


def _int(text: str | None) -> int | None:
    return None if text is None else int(text)


@pytest.mark.parametrize("case", ORACLE["seeds"], ids=lambda c: f"{c['seed']}-{c['global_seed']}")
def test_shuffle_orders_for_seeds_of_any_size(case: dict[str, Any]) -> None:
    orders = shuffle_order(
        case["n"],
        buffer_size=case["buffer_size"],
        seed=_int(case["seed"]),
        global_seed=_int(case["global_seed"]),
        epochs=len(case["epochs"]),
        reshuffle_each_iteration=case["reshuffle_each_iteration"],
    )
    assert [order.tolist() for order in orders] == case["epochs"]


def test_seeds_are_refused_only_where_tf_refuses_them() -> None:
    refused = {case["seed"]: case for case in ORACLE["refused"]}
    assert not refused["float 1.5"]["accepted"]
    assert not refused["str '3'"]["accepted"]
    for value in (1.5, 2.0, "3"):
        with pytest.raises(ConfigError, match="is not a seed") as err:
            ReadConfig(shuffle_files=True, shuffle_seed=value)  # type: ignore[arg-type]
        assert isinstance(err.value, TypeError)
        with pytest.raises(ConfigError, match="is not a seed"):
            ExampleShuffle(5, value)  # type: ignore[arg-type]
    import numpy as np

    # TF takes True as seed 1 and numpy integers of any width.
    for label, value in (
        ("bool True", True),
        ("numpy uint64 max", np.uint64(2**64 - 1)),
        ("numpy int64 min", np.int64(-(2**63))),
    ):
        assert refused[label]["accepted"]
        expected = refused[label]["epochs"][0]
        config = ReadConfig(example_shuffle=ExampleShuffle(5, value))
        assert config.example_shuffle is not None
        assert type(config.example_shuffle.seed) is int
        order = shuffle_order(5, buffer_size=5, seed=config.example_shuffle.seed)[0]
        assert order.tolist() == expected
        assert shuffle_order(5, buffer_size=5, seed=value)[0].tolist() == expected
    with pytest.raises(ConfigError, match="is not a seed"):
        shuffle_order(5, buffer_size=5, seed=1.5)  # type: ignore[arg-type]


def _toy_copy(tmp: Path, num_bytes: dict[str, int] | None) -> DatasetInfo:
    if num_bytes is None:
        return DatasetInfo.load(TOY_DIR)
    target = tmp / "readplan_toy" / "1.0.0"
    if not target.exists():
        shutil.copytree(TOY_DIR, target)
    info_file = target / "dataset_info.json"
    info = json.loads(info_file.read_text())
    for split in info["splits"]:
        if num_bytes[split["name"]]:
            split["numBytes"] = str(num_bytes[split["name"]])
        else:
            split.pop("numBytes", None)
    info_file.write_text(json.dumps(info))
    return DatasetInfo.load(target)


def _sort_fn(pieces: list[list[int]]) -> Any:
    def sort(instructions: list[FileInstruction]) -> list[FileInstruction]:
        by_shard = {fi.shard_index: fi for fi in instructions}
        return [
            dataclasses.replace(by_shard[shard], skip=skip, take=take)
            for shard, skip, take in pieces
        ]

    return sort


FILE_CASES = ORACLE["file_shuffles_and_autocache"]


@pytest.mark.parametrize(
    "case",
    FILE_CASES,
    ids=[
        f"{c['sizes']}-{c['split']}-{c['sort_pieces']}-{c['shuffle_seed']}-"
        f"{c['shuffle_reshuffle_each_iteration']}-{c['try_autocache']}"
        for c in FILE_CASES
    ],
)
def test_tfds_read_orders_with_huge_seeds_and_autocache(
    case: dict[str, Any], tmp_path: Path
) -> None:
    info = _toy_copy(tmp_path, case["num_bytes"])
    pieces = case["sort_pieces"]
    config = ReadConfig(
        interleave_cycle_length=case["interleave_cycle_length"],
        interleave_block_length=case["interleave_block_length"],
        shuffle_files=case["shuffle_files"],
        shuffle_seed=_int(case["shuffle_seed"]),
        global_seed=_int(case["global_seed"]),
        shuffle_reshuffle_each_iteration=case["shuffle_reshuffle_each_iteration"],
        try_autocache=case["try_autocache"],
        experimental_interleave_sort_fn=None if pieces is None else _sort_fn(pieces),
    )
    plan = ReadPlan(info, case["split"], config)
    assert plan.autocached == case["tfds_caches"]
    for epoch, expected in enumerate(case["epochs"]):
        order = plan.epoch(epoch)
        assert plan.tfds_ids(order.file_index, order.record_index) == expected, epoch


def test_the_autocache_cases_show_the_difference() -> None:
    # At least one case where TFDS's cache repeats epoch 0 while without it epochs differ.
    frozen = [c for c in FILE_CASES if c["tfds_caches"] and c["sort_pieces"] and c["shuffle_files"]]
    assert any(c["epochs"][1] == c["epochs"][0] for c in frozen)
    unfrozen = [c for c in FILE_CASES if not c["tfds_caches"] and c["sort_pieces"]]
    assert any(c["epochs"][1] != c["epochs"][0] for c in unfrozen)


def test_a_frozen_file_order_is_in_the_fingerprint(tmp_path: Path) -> None:
    sort = _sort_fn([[0, 0, 2], [0, 2, 3]])
    config = ReadConfig(shuffle_files=True, shuffle_seed=7, experimental_interleave_sort_fn=sort)
    frozen = ReadPlan(DatasetInfo.load(TOY_DIR), "train[:5]", config)
    assert frozen.autocached
    assert frozen.file_order_frozen
    free = ReadPlan(
        DatasetInfo.load(TOY_DIR), "train[:5]", dataclasses.replace(config, try_autocache=False)
    )
    assert not free.autocached
    assert frozen.summary["file_order"] == "epoch 0 (TFDS autocache)"
    assert "file_order" not in free.summary
    assert frozen.summary != free.summary
    # A plan TFDS caches but whose order nothing reshuffles keeps its old fingerprint.
    plain = ReadPlan(DatasetInfo.load(TOY_DIR), "train")
    assert plain.autocached
    assert "file_order" not in plain.summary


@functools.cache
def _even(split: str) -> Any:
    return readplan.even_splits(split, 2)[0]


@pytest.mark.parametrize(
    "case", ORACLE["even_split_add"], ids=lambda c: f"{c['even_split']}+{c['other']!r}"
)
def test_a_string_added_to_an_even_split_is_parsed_at_the_plus(case: dict[str, Any]) -> None:
    piece = _even(case["even_split"])
    other = case["other"]

    def join() -> Any:
        return other + piece if case["other_first"] else piece + other

    if case["raises"] == "ValueError":
        with pytest.raises(SplitError) as err:
            join()
        assert str(err.value).splitlines()[:2] == case["message"].splitlines()[:2]
    elif case["raises"] == "TypeError":
        # TFDS's even split has no reflected `+`; readplan's joins (a superset), but still
        # parses the string first, so a bad one fails at once.
        try:
            parsed_ok = readplan.parse_split(other) is not None
        except SplitError:
            parsed_ok = False
        if parsed_ok:
            assert isinstance(join(), readplan.LazySplit)
        else:
            with pytest.raises(SplitError):
                join()
    else:
        # The text is TFDS's: the string shows as the ReadInstructions TFDS parses it into.
        joined = join()
        assert isinstance(joined, readplan.LazySplit)
        assert str(joined) == case["text"]
