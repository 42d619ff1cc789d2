"""Even splits and split_for_process: TFDS's sub-splits, eager or resolved lazily, partition a
split; their arguments are checked.

``specs/splits.md`` §9.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from readplan.errors import ConfigError, SplitError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.planning.instructions import (
    even_splits,
    file_instructions,
    split_for_process,
)
from readplan.planning.splits import ReadInstruction
from tests.instruction_records import records, rows
from tests.strategies import dataset_infos
from tests.tfds_toy import TOY_INFO

TOY_EVEN = [  # tfds.even_splits('train', 3) on the fixture: (shard, skip, take)
    [(0, 0, 7), (1, 0, 1), (2, 0, 9)],
    [(2, 9, 3), (3, 0, 5), (4, 0, 8)],
    [(4, 8, 1), (5, 0, 3), (6, 0, 10), (7, 0, 2)],
]


def test_fixture_even_splits() -> None:
    info = TOY_INFO
    got = [
        [(fi.shard_index, fi.skip, fi.take) for fi in file_instructions(info, sub)]
        for sub in even_splits("train", 3, info=info)
    ]
    assert got == TOY_EVEN


def test_even_splits_examples() -> None:
    eleven = DatasetInfo("ds", {"train": [4, 4, 3], "test": [6]})
    assert even_splits("train", 3, info=eleven) == ["train[0:4]", "train[4:8]", "train[8:11]"]
    assert even_splits("train", 3, info=eleven, drop_remainder=True) == [
        "train[0:3]",
        "train[3:6]",
        "train[6:9]",
    ]
    assert rows(
        file_instructions(eleven, even_splits("train", 3, info=eleven, drop_remainder=True)[1])
    ) == [
        ["ds-train.tfrecord-00000-of-00003", 3, 1, 4],
        ["ds-train.tfrecord-00001-of-00003", 0, 2, 4],
    ]
    assert split_for_process("train", 1, 4, info=eleven) == "train[3:6]"
    assert even_splits("train[2:]+test", 2, info=eleven) == [
        "train[2:7]+test[0:3]",
        "train[7:11]+test[3:6]",
    ]
    assert even_splits("train", 20, info=eleven)[15] == "train[11:11]"
    assert file_instructions(eleven, even_splits("train", 20, info=eleven)[15]) == []
    composed = even_splits("test", 2, info=eleven)[0] + "+train[:5]"
    assert rows(file_instructions(eleven, composed)) == [
        ["ds-test.tfrecord-00000-of-00001", 0, 3, 6],
        ["ds-train.tfrecord-00000-of-00003", 0, 4, 4],
        ["ds-train.tfrecord-00001-of-00003", 0, 1, 4],
    ]


def test_even_splits_of_an_inverted_range() -> None:
    with pytest.raises(SplitError) as info:
        even_splits("train[5:2]", 2, info=DatasetInfo("ds", {"train": [11]}))
    assert info.value.tfds_message == "start=5, end=2"


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda info: even_splits("train", 12, info=info, strict=True), "some would be empty"),
        (lambda info: even_splits("train+train[:5]", 2, info=info, strict=True), "overlaps"),
        (
            lambda info: even_splits("train", 3, info=info, strict=True, drop_remainder=True),
            "2 of its 11",
        ),
    ],
)
def test_even_splits_rejects(call: Any, fragment: str) -> None:
    with pytest.raises(SplitError, match=fragment.replace("[", r"\[").replace(")", r"\)")):
        call(DatasetInfo("ds", {"train": [11]}))


@pytest.mark.parametrize("info", [None, DatasetInfo("ds", {"train": [11]})])
@pytest.mark.parametrize(
    ("call", "field", "value", "fragment"),
    [
        (lambda info: even_splits("train", 0, info=info), "n", 0, "positive int"),
        (lambda info: even_splits("train", "2", info=info), "n", "2", "positive int"),
        (lambda info: split_for_process("train", 0, 0, info=info), "process_count", 0, "positive"),
        (lambda info: split_for_process("train", 4, 4, info=info), "process_index", 4, "[0, 4)"),
        (lambda info: split_for_process("train", -1, 4, info=info), "process_index", -1, "[0, 4)"),
    ],
)
def test_sub_split_counts_and_indices_are_config_errors(
    info: DatasetInfo | None, call: Any, field: str, value: object, fragment: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(fragment)) as raised:
        call(info)
    assert isinstance(raised.value, ValueError)
    assert (raised.value.field, raised.value.value) == (field, value)


@given(dataset_infos(min_splits=1), st.integers(1, 9), st.booleans())
def test_even_splits_partition_each_split(info: DatasetInfo, count: int, drop: bool) -> None:
    for name, split in info.splits.items():
        subs = even_splits(name, count, info=info, drop_remainder=drop)
        assert len(subs) == count
        pieces = [records(info, file_instructions(info, sub)) for sub in subs]
        sizes = [len(piece) for piece in pieces]
        n = split.num_examples
        kept = n - n % count if drop else n
        assert [r for piece in pieces for r in piece] == [(name, i) for i in range(kept)]
        assert max(sizes) - min(sizes) <= (0 if drop else 1)
        assert sizes == sorted(sizes, reverse=True)


@given(dataset_infos(), st.integers(1, 9), st.booleans())
def test_strict_even_splits_are_strict_clean(info: DatasetInfo, count: int, drop: bool) -> None:
    spec = "+".join(info.splits)
    sizes = [split.num_examples for split in info.splits.values()]
    clean = all(size >= count and not (drop and size % count) for size in sizes)
    if not clean:
        with pytest.raises(SplitError):
            even_splits(spec, count, info=info, drop_remainder=drop, strict=True)
        return
    subs = even_splits(spec, count, info=info, drop_remainder=drop, strict=True)
    assert subs == even_splits(spec, count, info=info, drop_remainder=drop)
    for sub in subs:
        assert file_instructions(info, sub, strict=True) == file_instructions(info, sub)


# -- even splits without the dataset (resolved lazily, as TFDS does) ----------------------


def test_lazy_even_splits_resolve_like_eager_ones() -> None:
    info = DatasetInfo(name="d", splits={"train": [4, 4, 3], "test": [6]})
    lazy = even_splits("train[2:]+test", 2)
    eager = even_splits("train[2:]+test", 2, info=info)
    assert [piece.resolve(info) for piece in lazy] == eager
    for piece, concrete in zip(lazy, eager):
        assert file_instructions(info, piece) == file_instructions(info, concrete)
    assert str(lazy[1]) == (
        "_EvenSplit(split='train[2:]+test', index=1, count=2, drop_remainder=False)"
    )


def test_lazy_even_splits_compose_with_plus() -> None:
    info = DatasetInfo(name="d", splits={"train": [4, 4, 3], "test": [6]})
    combined = even_splits("test", 2)[0] + "train[:5]"
    assert file_instructions(info, combined) == file_instructions(info, "test[0:3]+train[:5]")
    reversed_ = "train[:5]" + even_splits("test", 2)[1]
    assert file_instructions(info, reversed_) == file_instructions(info, "train[:5]+test[3:6]")


def test_split_for_process_without_info() -> None:
    info = DatasetInfo(name="d", splits={"train": [11]})
    piece = split_for_process("train", 1, 4)
    assert file_instructions(info, piece) == file_instructions(info, "train[3:6]")


def test_instructions_and_specs_compose_with_lazy_splits() -> None:
    info = DatasetInfo(name="d", splits={"train": [4, 4, 3], "test": [6]})
    combined = ReadInstruction("test") + even_splits("train", 2)[0]
    assert file_instructions(info, combined) == file_instructions(info, "test+train[0:6]")
