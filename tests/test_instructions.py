"""File instructions against TFDS 4.9.10's golden vectors and the reference notes: resolution
arithmetic, pct1_dropremainder, the FileInstruction value and its column form.

``specs/splits.md`` §4 (resolution), §5 (file instructions), §6 and §7 (compatibility mode).
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from readplan.errors import SplitError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.planning import instructions as instructions_module
from readplan.planning.instructions import (
    FileInstruction,
    InstructionTable,
    file_instructions,
    instruction_table,
)
from readplan.planning.splits import ReadInstruction
from tests.conftest import DATA
from tests.instruction_records import NOTES, records, rows
from tests.strategies import dataset_infos, percent_bounds
from tests.tfds_toy import TOY_DIR, TOY_INFO

VECTORS = json.loads((DATA / "vectors" / "splits.json").read_text())
ERROR_TYPES = {"ValueError": ValueError, "NotImplementedError": NotImplementedError}


# ---------------------------------------------------------------------------------------------
# Golden vectors


@pytest.mark.parametrize("case", VECTORS, ids=[f"{i}:{c['spec']!r}" for i, c in enumerate(VECTORS)])
def test_golden_vector(case: dict[str, Any]) -> None:
    info = DatasetInfo(case["dataset"], case["splits"])
    expect = case["expect"]
    if isinstance(expect, dict):
        with pytest.raises(ERROR_TYPES[expect["error"]]) as info_error:
            file_instructions(info, case["spec"])
        assert isinstance(info_error.value, SplitError)
        assert info_error.value.tfds_message == expect["message"]
        assert str(info_error.value).startswith(expect["message"] + "\n")
    else:
        assert rows(file_instructions(info, case["spec"])) == expect


# Computed by TFDS 4.9.10 (builder_from_directory) on the fixture directory.
TOY_EXPECT = {
    "test[1:5]+train[40%:60%]": [
        ["readplan_toy-test.tfrecord-00000-of-00003", 1, 3, 4],
        ["readplan_toy-test.tfrecord-00001-of-00003", 0, 1, 6],
        ["readplan_toy-train.tfrecord-00003-of-00008", 0, 5, 5],
        ["readplan_toy-train.tfrecord-00004-of-00008", 0, 4, 9],
    ],
    "train[-2shard:]": [
        ["readplan_toy-train.tfrecord-00006-of-00008", 0, 10, 10],
        ["readplan_toy-train.tfrecord-00007-of-00008", 0, 2, 2],
    ],
    "train[-5:-10]": [["readplan_toy-train.tfrecord-00006-of-00008", 7, -5, 10]],
    "test[-3:-5]": [],
    "all": [
        [f"readplan_toy-train.tfrecord-0000{k}-of-00008", 0, n, n]
        for k, n in enumerate([7, 1, 12, 5, 9, 3, 10, 2])
    ]
    + [[f"readplan_toy-test.tfrecord-0000{k}-of-00003", 0, n, n] for k, n in enumerate([4, 6, 3])],
}
TOY_EXPECT["train[:0shard]"] = TOY_EXPECT["all"][:8]


@pytest.mark.parametrize("spec", sorted(TOY_EXPECT))
def test_fixture_directory(spec: str) -> None:
    info = TOY_INFO
    instructions = file_instructions(info, spec)
    assert rows(instructions) == TOY_EXPECT[spec]
    for fi in instructions:
        assert os.path.dirname(fi.filename) == os.fspath(TOY_DIR)
        assert os.path.isfile(fi.filename)


def test_imagenet_44_45_percent() -> None:
    info = DatasetInfo.from_catalog("imagenet2012")
    got = file_instructions(info, "train[44%:45%]")
    assert len(got) == 11
    assert rows(got)[0] == ["imagenet2012-train.tfrecord-00450-of-01024", 700, 551, 1251]
    assert rows(got)[-1] == ["imagenet2012-train.tfrecord-00460-of-01024", 0, 1001, 1251]
    assert all(fi.skip == 0 and fi.takes_all for fi in got[1:-1])
    assert [fi.shard_index for fi in got] == list(range(450, 461))


def test_imagenet_67_84_percent() -> None:
    got = file_instructions(DatasetInfo.from_catalog("imagenet2012"), "train[67%:84%]")
    assert len(got) == 175
    assert rows(got)[0] == ["imagenet2012-train.tfrecord-00686-of-01024", 100, 1151, 1251]
    assert rows(got)[-1] == ["imagenet2012-train.tfrecord-00860-of-01024", 0, 200, 1251]


@pytest.mark.parametrize(
    ("percent", "boundary"),
    [("1", 12812), ("10", 128117), ("25", 320292), ("50", 640584), ("99", 1268355)],
)
def test_imagenet_percent_boundaries(percent: str, boundary: int) -> None:
    got = file_instructions(DatasetInfo.from_catalog("imagenet2012"), f"train[:{percent}%]")
    assert sum(fi.num_records for fi in got) == boundary


# ---------------------------------------------------------------------------------------------
# Resolution arithmetic


@pytest.mark.parametrize(
    ("spec", "n", "count"),
    [
        # binary64, multiply first, ties to even: decimal arithmetic would disagree.
        ("train[:1.1%]", 1500, 17),
        ("train[:0.68%]", 1250, 9),
        ("train[:0.34%]", 2500, 9),
        ("train[:0.06%]", 2500, 2),
        ("train[:50%]", 5, 2),
        ("train[:50%]", 7, 4),
        ("train[:50%]", 1, 0),
        ("train[:25%]", 10, 2),
        ("train[:35%]", 10, 4),
        ("train[:15%]", 10, 2),
        ("train[-2.5%:]", 100, 2),  # round(-2.5) == -2, so from = 98
        ("train[:-2.5%]", 100, 98),
        ("train[-25%:]", 10, 2),
        ("train[33.3%:66.6%]", 100, 34),
    ],
)
def test_percent_rounding(spec: str, n: int, count: int) -> None:
    info = DatasetInfo("ds", {"train": [n]})
    assert sum(fi.num_records for fi in file_instructions(info, spec)) == count


@pytest.mark.parametrize(
    ("spec", "selected"),
    [
        ("train[:2shard]", [(0, 10)]),
        ("train[1shard]", []),
        ("train[0shard]", [(0, 10)]),
        ("train[-0shard]", [(0, 10)]),
        ("train[-1shard]", [(50, 100)]),
        ("train[-2shard:]", [(35, 100)]),
        ("train[:0shard]", [(0, 100)]),
        ("train[:-0shard]", [(0, 100)]),
        ("train[:4shard]", [(0, 50)]),
        ("train[:9shard]", [(0, 100)]),
        ("train[-9shard:]", [(0, 100)]),
        ("train[7shard:]", []),
        ("train[5shard]", []),
        ("train[:-5shard]", []),
        ("train[-6shard]", []),
        ("train[:-6shard]", [(0, 50)]),
        ("train[1shard:-0shard]", [(10, 100)]),
        ("train[5shard:7]", []),
        ("train[10:5]", []),
        ("train[3shard:-4shard]", []),
        ("train[:-0]", []),
        ("train[0:0]", []),
        ("train[:-100%]", []),
        ("train[5:5]", []),
        ("train[-0%:]", [(0, 100)]),
        ("train[-10%:-5%]", [(90, 95)]),
        ("train[67%:84%]", [(67, 84)]),
        ("train[1_0:]", [(10, 100)]),
        ("train[-100:]", [(0, 100)]),
    ],
)
def test_notes_layout(spec: str, selected: list[tuple[int, int]]) -> None:
    expected = [("train", i) for a, b in selected for i in range(a, b)]
    assert records(NOTES, file_instructions(NOTES, spec)) == expected


def test_all_follows_dataset_info_order_and_duplicates_are_kept() -> None:
    legacy = DatasetInfo("mnist", {"test": [3], "train": [2, 2]})
    assert [fi.split for fi in file_instructions(legacy, "all")] == ["test", "train", "train"]
    twice = file_instructions(NOTES, "train[:50]+train[:25]")
    assert records(NOTES, twice)[50:] == [("train", i) for i in range(25)]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("Train", "Unknown split 'Train'. Should be one of ['train', 'test', 'validation']."),
        (
            "train+nosuch[:5]",
            "Unknown split 'nosuch'. Should be one of ['train', 'test', 'validation'].",
        ),
        ("train[:50%]+test[10:20]", "Requested slice [10:20] incompatible with 10 examples."),
        ("train[-101:]", "Requested slice [-101:100] incompatible with 100 examples."),
        ("train[:101]", "Requested slice [:101] incompatible with 100 examples."),
        ("test[0:11]", "Requested slice [:11] incompatible with 10 examples."),
    ],
)
def test_resolution_errors_are_not_prefixed(spec: str, message: str) -> None:
    with pytest.raises(SplitError) as info:
        file_instructions(NOTES, spec)
    assert info.value.tfds_message == message
    assert str(info.value).startswith(message + "\n")


def test_inverted_range_inside_one_shard_gives_a_negative_take() -> None:
    (fi,) = file_instructions(NOTES, "train[-5:-10]")
    assert (fi.skip, fi.take, fi.examples_in_shard, fi.num_records) == (45, -5, 50, 5)
    assert not fi.takes_all
    # A computed take of exactly -1 means "to the end" (TFDS's constructor rule).
    (fi,) = file_instructions(NOTES, "train[-5:-6]")
    assert (fi.skip, fi.take) == (45, 5)


def test_full_paths_with_data_dir() -> None:
    info = DatasetInfo("ds", {"train": [3, 4]}, data_dir="/data/ds/1.0.0")
    (first, second) = file_instructions(info, "train[2:5]")
    assert first.filename == os.path.join("/data/ds/1.0.0", "ds-train.tfrecord-00000-of-00002")
    assert (first.split, first.shard_index, second.shard_index) == ("train", 0, 1)


def test_read_instruction_and_split_spec_inputs() -> None:
    combined = ReadInstruction("train", to=10, unit="%") + "test"
    assert rows(file_instructions(NOTES, combined)) == rows(
        file_instructions(NOTES, "train[:10%]+test")
    )
    with pytest.raises(TypeError):
        file_instructions(NOTES, 5)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# pct1_dropremainder (API only)


def _pct1(from_: Any = None, to: Any = None) -> ReadInstruction:
    return ReadInstruction("train", from_=from_, to=to, unit="%", rounding="pct1_dropremainder")


def test_pct1_dropremainder() -> None:
    info = DatasetInfo("ds", {"train": [500, 505]})
    # TFDS 4.9.10 yields (333.0, 167.0) and (0, 166.0): the same whole numbers.
    assert rows(file_instructions(info, _pct1(33.3, 66.6))) == [
        ["ds-train.tfrecord-00000-of-00002", 333, 167, 500],
        ["ds-train.tfrecord-00001-of-00002", 0, 166, 505],
    ]
    assert rows(file_instructions(info, _pct1(-99.5)))[0] == [
        "ds-train.tfrecord-00000-of-00002",
        10,
        490,
        500,
    ]
    assert rows(file_instructions(info, _pct1(10, 20))) == [
        ["ds-train.tfrecord-00000-of-00002", 100, 100, 500]
    ]


def test_pct1_dropremainder_small_split() -> None:
    small = DatasetInfo("ds", {"train": [99]})
    with pytest.raises(SplitError) as info:
        file_instructions(small, _pct1(to=20))
    assert info.value.tfds_message == (
        'Using "pct1_dropremainder" rounding on a split with less than 100 elements is '
        "forbidden: it always results in an empty dataset."
    )
    assert sum(fi.num_records for fi in file_instructions(small, _pct1())) == 99


def test_pct1_dropremainder_fractions_are_refused() -> None:
    with pytest.raises(SplitError, match="not a whole number"):
        file_instructions(DatasetInfo("ds", {"train": [1005]}), _pct1(33.35))


# ---------------------------------------------------------------------------------------------
# FileInstruction


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0, 1, -1), "examples_in_shard should be >= 0! Was -1."),
        ((-1, 1, 5), "skip should be between 0 and 5! Was -1."),
        ((6, 0, 5), "skip should be between 0 and 5! Was 6."),
        ((2, 4, 5), "skip (2) + take (4) should be <= examples_in_shard (5)!"),
    ],
)
def test_file_instruction_invariants(args: tuple[int, int, int], message: str) -> None:
    with pytest.raises(SplitError) as info:
        FileInstruction("f", *args)
    assert info.value.tfds_message == message


def test_file_instruction_take_minus_one_means_rest() -> None:
    fi = FileInstruction("f", 2, -1, 5)
    assert (fi.take, fi.num_records, fi.takes_all) == (3, 3, True)
    kept = FileInstruction("f", 4, -3, 5)
    assert (kept.take, kept.num_records) == (-3, 1)


@pytest.mark.parametrize(
    "kwargs",
    [{"skip": 1.0}, {"take": True}, {"filename": 3}, {"split": 1}, {"shard_index": "0"}],
)
def test_file_instruction_types(kwargs: dict[str, Any]) -> None:
    arguments: dict[str, Any] = {
        "filename": "f",
        "skip": 0,
        "take": 1,
        "examples_in_shard": 2,
    } | kwargs
    with pytest.raises(TypeError):
        FileInstruction(**arguments)


def test_file_instruction_negative_shard_index() -> None:
    with pytest.raises(SplitError):
        FileInstruction("f", 0, 1, 2, shard_index=-1)


# ---------------------------------------------------------------------------------------------
# Properties


@given(dataset_infos(), st.integers(0, 10**6), st.integers(0, 10**6))
@example(NOTES, 0, 100)
@example(NOTES, 10, 35)  # exactly the empty shard's position
@example(NOTES, 99, 100)
def test_absolute_slices_cover_exactly_their_records(info: DatasetInfo, x: int, y: int) -> None:
    name = next(iter(info.splits))
    n = info.splits[name].num_examples
    a, b = sorted((x % (n + 1), y % (n + 1)))
    got = file_instructions(info, f"{name}[{a}:{b}]")
    assert records(info, got) == [(name, i) for i in range(a, b)]
    assert all(fi.examples_in_shard > 0 and fi.num_records > 0 for fi in got)
    shards = [fi.shard_index or 0 for fi in got]
    assert shards == sorted(set(shards))  # each shard once, in shard order


@given(st.integers(0, 5000), percent_bounds())
@example(1500, 1.1)
@example(1250, 0.68)
@example(2500, 0.06)
@example(1281167, 50.0)
@example(100, -2.5)
def test_percent_bound_equals_documented_absolute_bound(n: int, percent: float) -> None:
    info = DatasetInfo("ds", {"train": [n]})
    k = round(percent * n / 100.0)
    k = k + n if k < 0 else k
    assert file_instructions(info, f"train[{percent}%:]") == file_instructions(info, f"train[{k}:]")
    assert file_instructions(info, f"train[:{percent}%]") == file_instructions(info, f"train[:{k}]")


@given(dataset_infos(), st.data())
def test_single_shard_form_selects_that_shard(info: DatasetInfo, data: Any) -> None:
    name = next(iter(info.splits))
    split = info.splits[name]
    k = data.draw(st.integers(0, split.num_shards - 1))
    got = file_instructions(info, f"{name}[{k}shard]")
    assert [(fi.shard_index, fi.skip, fi.take) for fi in got] == (
        [(k, 0, split.shard_lengths[k])] if split.shard_lengths[k] else []
    )
    negative = file_instructions(info, f"{name}[{k - split.num_shards}shard]")
    assert negative == got


# -- the column form used by plans ---------------------------------------------------------


@given(dataset_infos(), st.data())
def test_instruction_table_columns_describe_its_instructions(info: DatasetInfo, data: Any) -> None:
    parts = []
    for name, split in info.splits.items():
        a, b = data.draw(st.tuples(*[st.integers(0, split.num_examples)] * 2))
        parts.append(f"{name}[{a}:{b}]")  # inverted ranges too: TFDS's quirk
    table = instruction_table(info, "+".join(parts))
    listed = list(table)
    assert [
        (fi.skip, fi.take, fi.num_records, fi.examples_in_shard, fi.shard_index, fi.split)
        for fi in listed
    ] == [
        (s, t, r, e, k, table.split_names[p])
        for s, t, r, e, k, p in zip(
            table.skip.tolist(),
            table.take.tolist(),
            table.num_records.tolist(),
            table.examples_in_shard.tolist(),
            table.shard_index.tolist(),
            table.split.tolist(),
        )
    ]
    assert [fi.filename for fi in listed] == [table.filename(k) for k in range(len(table))]
    assert table[1:3] == listed[1:3]
    again = InstructionTable.of(listed)
    assert list(again) == listed
    assert again.num_records.tolist() == table.num_records.tolist()


def test_instruction_table_names_files_as_their_dataset_does_past_its_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """File names are kept once formatted, a few at a time: names asked for again, and after
    the cache started over, are still the dataset's shard paths."""
    monkeypatch.setattr(instructions_module, "_NAMED", 3)
    info = DatasetInfo("names", {"train": [2] * 7, "test": [1] * 2}, data_dir="/data")
    table = instruction_table(info, "train+test")
    expected = info.shard_paths("train") + info.shard_paths("test")
    order = [0, 1, 0, 5, 6, 8, 2, 0, 7, 3, 3, 4, 8, 1]
    assert [table.filename(k) for k in order] == [expected[k] for k in order]


def test_instruction_table_needs_names_or_a_dataset() -> None:
    empty = np.zeros(0, dtype=np.int64)
    with pytest.raises(TypeError, match="either info or filenames"):
        InstructionTable(
            skip=empty,
            take=empty,
            examples_in_shard=empty,
            split=empty,
            shard_index=empty,
            split_names=(),
        )
