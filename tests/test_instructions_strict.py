"""Strict mode: the quirks and empty parts compatibility mode accepts are refused, clean
specs read as in compatibility mode.

``specs/splits.md`` §8.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from readplan.errors import EmptySplitError, SplitError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.planning.instructions import file_instructions
from tests.instruction_records import NOTES
from tests.strategies import dataset_infos


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("train[:50]+train[:25]", "overlaps"),
        ("train+train", "overlaps"),
        ("test+all", "overlaps"),
        ("train[10:5]", "inverted"),
        ("train[-5:-10]", "inverted"),
        ("train[:0shard]", "0shard"),
        ("train[:-0shard]", "0shard"),
        ("train[2shard:0shard]", "0shard"),
        ("train[:-6shard]", "outside [-5, 5]"),
        ("train[7shard:]", "outside [-5, 5]"),
        ("train[-6shard]", "outside [-5, 5]"),
        ("train[5shard]", "outside [-5, 5]"),
    ],
)
def test_strict_rejects_quirks(spec: str, fragment: str) -> None:
    file_instructions(NOTES, spec)  # compatibility mode accepts them
    with pytest.raises(SplitError) as info:
        file_instructions(NOTES, spec, strict=True)
    assert fragment in str(info.value)
    assert info.value.spec == spec


@pytest.mark.parametrize("spec", ["train[5:5]", "train[1shard]", "test+train[:0]"])
def test_strict_rejects_empty_parts(spec: str) -> None:
    file_instructions(NOTES, spec)  # compatibility mode accepts them
    with pytest.raises(EmptySplitError, match="selects no records"):
        file_instructions(NOTES, spec, strict=True)


def test_empty_result_is_an_empty_list_in_compat_mode() -> None:
    assert file_instructions(NOTES, "train[5:5]") == []


@pytest.mark.parametrize(
    "spec", ["train", "train[-1shard]", "train[:50%]+train[50%:]", "all", "test+train[:-1shard]"]
)
def test_strict_accepts_clean_specs(spec: str) -> None:
    assert file_instructions(NOTES, spec, strict=True) == file_instructions(NOTES, spec)


@given(dataset_infos(), st.data())
def test_strict_mode_accepts_disjoint_non_empty_parts(info: DatasetInfo, data: Any) -> None:
    parts = []
    for name, split in info.splits.items():
        cuts = sorted(data.draw(st.sets(st.integers(0, split.num_examples), max_size=6)))
        parts += [f"{name}[{a}:{b}]" for a, b in zip(cuts[::2], cuts[1::2]) if a < b]
    if not parts:
        return
    spec = "+".join(data.draw(st.permutations(parts)))
    assert file_instructions(info, spec, strict=True) == file_instructions(info, spec)
