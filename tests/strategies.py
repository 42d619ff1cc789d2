"""Hypothesis strategies shared by the test modules, one section per layer."""

from __future__ import annotations

from hypothesis import strategies as st

from readplan.metadata.dataset_info import DatasetInfo
from readplan.planning.splits import ReadInstruction

# ---------------------------------------------------------------------------------------------
# Splits, shard layouts and dataset metadata (dataset_info.py, splits.py, instructions.py)

SPLIT_NAMES = ("train", "test", "validation")


def shard_length_lists(
    *, min_shards: int = 1, max_shards: int = 12, max_length: int = 30
) -> st.SearchStrategy[list[int]]:
    """Shard lengths as a writer may record them, empty shards included.

    About one shard in six is empty: enough to exercise the empty-shard rules without
    making most drawn splits empty.
    """
    length = st.one_of(*[st.integers(min_value=1, max_value=max_length)] * 5, st.just(0))
    return st.lists(length, min_size=min_shards, max_size=max_shards)


@st.composite
def dataset_infos(
    draw: st.DrawFn, *, min_splits: int = 1, max_shards: int = 12, max_length: int = 30
) -> DatasetInfo:
    """A DatasetInfo with 1-3 of the usual splits, in a random order."""
    names = draw(
        st.lists(st.sampled_from(SPLIT_NAMES), min_size=min_splits, max_size=3, unique=True)
    )
    lengths = shard_length_lists(max_shards=max_shards, max_length=max_length)
    return DatasetInfo("ds", {name: draw(lengths) for name in names})


def percent_bounds() -> st.SearchStrategy[float]:
    """Percentages as split strings write them: few decimals, within [-100, 100]."""
    return st.decimals(min_value=-100, max_value=100, places=2).map(float)


@st.composite
def read_instructions(draw: st.DrawFn, split_name: str = "train") -> ReadInstruction:
    """Valid 'closest' instructions in any unit, each bound possibly open."""
    unit = draw(st.sampled_from(["abs", "%", "shard"]))
    bound = percent_bounds() if unit == "%" else st.integers(min_value=-10_000, max_value=10_000)
    from_ = draw(st.none() | bound)
    to = draw(st.none() | bound)
    return ReadInstruction(split_name, from_=from_, to=to, unit=unit)
