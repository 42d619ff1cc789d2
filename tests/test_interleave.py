"""The closed-form interleave against tf.data's vectors and an element-by-element model."""

from __future__ import annotations

import heapq
import json

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from readplan import DatasetInfo, ReadConfig, ReadPlan
from readplan.errors import ConfigError
from readplan.planning.interleave import InterleaveSchedule, _window_minima, interleave_order
from tests.conftest import DATA
from tests.reference_models import ReferenceInterleave, reference_interleave

VECTORS = [
    case
    for case in json.loads((DATA / "vectors" / "tfdata.json").read_text())
    if case["kind"] == "interleave"
]


def _pairs(order: tuple[np.ndarray, np.ndarray]) -> list[tuple[int, int]]:
    return list(zip(order[0].tolist(), order[1].tolist()))


def _schedule(lengths: list[int], cycle: int, block: int) -> InterleaveSchedule:
    return InterleaveSchedule(
        lengths=np.array(lengths, dtype=np.int64), cycle_length=cycle, block_length=block
    )


@pytest.mark.parametrize(
    "case",
    VECTORS,
    ids=[f"{c['lengths'][:6]}-c{c['cycle_length']}-b{c['block_length']}" for c in VECTORS],
)
def test_tfdata_interleave_vectors(case: dict) -> None:
    got = interleave_order(
        case["lengths"], cycle_length=case["cycle_length"], block_length=case["block_length"]
    )
    assert _pairs(got) == [tuple(x) for x in case["expect"]]


# specs/order.md worked example: inputs [5, 1, 7, 0, 3], input i yields 100*i + j.
WORKED = {
    (1, 1): "0 1 2 3 4 100 200 201 202 203 204 205 206 400 401 402",
    (2, 1): "0 100 1 2 200 3 201 4 202 203 204 400 205 401 206 402",
    (2, 2): "0 1 100 2 3 200 201 4 202 203 204 205 400 401 206 402",
    (2, 4): "0 1 2 3 100 4 200 201 202 203 204 205 206 400 401 402",
    (3, 1): "0 100 200 1 201 2 202 3 400 203 4 401 204 402 205 206",
    (3, 2): "0 1 100 200 201 2 3 202 203 4 400 401 204 205 402 206",
    (3, 4): "0 1 2 3 100 200 201 202 203 4 204 205 206 400 401 402",
    (4, 1): "0 100 200 1 201 400 2 202 401 3 203 402 4 204 205 206",
    (7, 1): "0 100 200 400 1 201 401 2 202 402 3 203 4 204 205 206",
    (10, 1): "0 100 200 400 1 201 401 2 202 402 3 203 4 204 205 206",
    (7, 2): "0 1 100 200 201 400 401 2 3 202 203 402 4 204 205 206",
    (10, 2): "0 1 100 200 201 400 401 2 3 202 203 402 4 204 205 206",
}


@pytest.mark.parametrize(("cycle", "block"), sorted(WORKED))
def test_worked_example(cycle: int, block: int) -> None:
    inputs, within = interleave_order([5, 1, 7, 0, 3], cycle_length=cycle, block_length=block)
    assert (inputs * 100 + within).tolist() == [int(x) for x in WORKED[cycle, block].split()]


def test_block_length_none_means_one() -> None:
    a = interleave_order([3, 2], cycle_length=2, block_length=None)
    b = interleave_order([3, 2], cycle_length=2, block_length=1)
    assert _pairs(a) == _pairs(b)


layouts = st.lists(st.sampled_from([0, 0, 1, 2, 3, 4, 5, 7, 8, 9, 16]), max_size=8)
cycles = st.integers(1, 10)
blocks = st.integers(1, 6)


@given(layouts, cycles, blocks)
@example([5, 1, 7, 0, 3], 2, 2)  # exhaustion discovered a visit late, empty input
@example([4, 4], 1, 2)  # last record completes a block exactly
@example([0, 0, 0], 3, 1)  # nothing but empty inputs
@example([], 4, 4)
@example([2, 3], 16, 16)  # more slots than inputs
def test_order_equals_reference_model(lengths: list[int], cycle: int, block: int) -> None:
    assert _pairs(_schedule(lengths, cycle, block).order()) == reference_interleave(
        lengths, cycle, block
    )


def _list_scheduling(
    lengths: np.ndarray, cycle: int, block: int
) -> tuple[list[int], list[int], int]:
    """Slots and start rounds by stepping the request heap of specs/order.md, one input each."""
    heap = [(0, slot) for slot in range(min(cycle, len(lengths) + 1))]
    slots, starts = [], []
    for length in lengths.tolist():
        round_, slot = heapq.heappop(heap)
        slots.append(slot)
        starts.append(round_)
        heapq.heappush(heap, (round_ + length // block + 1, slot))
    return slots, starts, heap[0][0] * cycle + heap[0][1]


@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 4000),
    st.lists(st.integers(0, 40), min_size=1, max_size=3),
    st.integers(1, 20),
    st.integers(1, 17),
)
@example(0, 3000, [31, 32], 16, 1)  # occupancies one round apart: slots keep swapping
@example(0, 3000, [255, 256], 16, 16)  # all slots in step for good
def test_slot_assignment_equals_list_scheduling(
    seed: int, count: int, values: list[int], cycle: int, block: int
) -> None:
    lengths = np.random.default_rng(seed).choice(values, count)
    schedule = _schedule(lengths.tolist(), cycle, block)
    slots, starts, first_failed = _list_scheduling(lengths, cycle, block)
    assert schedule.slot.tolist() == slots
    assert schedule.start_round.tolist() == starts
    assert schedule.first_failed_pull == first_failed


@given(st.integers(0, 2**32 - 1), st.integers(0, 300), cycles, blocks, st.data())
def test_records_before_a_visit_sum_over_every_input(
    seed: int, count: int, cycle: int, block: int, data: st.DataObject
) -> None:
    lengths = np.random.default_rng(seed).choice([0, 1, 2, 5, 16, 17, 40], count)
    schedule = _schedule(lengths.tolist(), cycle, block)
    round_ = data.draw(st.integers(-3, schedule.num_rounds + 3))
    slot = data.draw(st.integers(0, cycle))
    # Each input has produced one block per round since it started, up to its length.
    for rounds, query in (
        (round_ - schedule.start_round, schedule.records_before_round(round_)),
        (round_ - schedule.start_round + (schedule.slot < slot), None),
    ):
        expected = int(np.minimum(lengths, np.clip(rounds, 0, None) * block).sum())
        got = query if query is not None else schedule.records_before_visit(round_, slot)
        assert got == expected


@given(st.integers(0, 2**32 - 1), st.integers(0, 300), cycles, blocks)
def test_long_orders_equal_reference_model(seed: int, count: int, cycle: int, block: int) -> None:
    lengths = np.random.default_rng(seed).choice([0, 1, 2, 3, 5, 8, 16, 17], count).tolist()
    assert _pairs(_schedule(lengths, cycle, block).order()) == reference_interleave(
        lengths, cycle, block
    )


@given(layouts, cycles, blocks)
@example([5, 1, 7, 0, 3], 3, 2)
def test_locate_and_position_of_round_trip(lengths: list[int], cycle: int, block: int) -> None:
    schedule = _schedule(lengths, cycle, block)
    expected = reference_interleave(lengths, cycle, block)
    for position, location in enumerate(expected):
        assert schedule.locate(position) == location
        assert schedule.position_of(*location) == position


@given(layouts, cycles, blocks)
@example([5, 1, 7, 0, 3], 2, 2)
@example([4, 4, 1], 2, 2)
@example([1, 2], 5, 1)  # the first failed pull happens in a surplus slot
def test_state_at_every_position_equals_stepped_model(
    lengths: list[int], cycle: int, block: int
) -> None:
    schedule = _schedule(lengths, cycle, block)
    model = ReferenceInterleave(lengths, cycle, block)
    position = 0
    while True:
        state = schedule.state_at(position)
        assert {
            "slots": [(s.input_index, s.consumed) for s in state.slots],
            "cursor": state.cursor,
            "block_counter": state.block_counter,
            "next_input": state.next_input,
            "inputs_done": state.inputs_done,
            "consumed": list(state.consumed),
        } == model.snapshot()
        if model.next() is None:
            break
        position += 1


@given(layouts, cycles, blocks, st.integers(1, 9), st.data())
def test_chunks_from_any_start_concatenate_to_the_suffix(
    lengths: list[int], cycle: int, block: int, chunk: int, data: st.DataObject
) -> None:
    schedule = _schedule(lengths, cycle, block)
    full = reference_interleave(lengths, cycle, block)
    start = data.draw(st.integers(0, len(full)))
    chunks = list(schedule.iter_chunks(start=start, chunk_size=chunk))
    assert all(len(c[0]) == chunk for c in chunks[:-1])
    got = [pair for c in chunks for pair in _pairs(c)]
    assert got == full[start:]


def test_records_of_one_input_come_in_increasing_order() -> None:
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 300, size=200)
    inputs, within = interleave_order(lengths, cycle_length=13, block_length=5)
    for i in range(lengths.size):
        assert within[inputs == i].tolist() == list(range(lengths[i]))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"cycle_length": 0, "block_length": 1}, "cycle_length"),
        ({"cycle_length": 2, "block_length": 0}, "block_length"),
        ({"cycle_length": -1, "block_length": 1}, "cycle_length"),
    ],
)
def test_non_positive_lengths_are_refused(kwargs: dict, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        interleave_order([1, 2], **kwargs)
    assert info.value.field == field


def test_negative_input_length_is_refused() -> None:
    with pytest.raises(ConfigError, match="negative length -3"):
        interleave_order([1, -3], cycle_length=2, block_length=1)


def test_out_of_range_queries_name_the_valid_range() -> None:
    schedule = _schedule([2, 3], 2, 1)
    with pytest.raises(ConfigError, match=r"valid: 0\.\.4"):
        schedule.locate(5)
    with pytest.raises(ConfigError, match="holds 2 records"):
        schedule.position_of(0, 2)


# -- cycles as long as the inputs (issue: planning was quadratic in the cycle) -------------


@given(
    st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=400),
    st.integers(1, 300),
    st.data(),
)
@example([3, 1, 2], 1, None)
@example(list(range(200, 0, -1)), 130, None)  # windows spanning a block boundary
def test_window_minima_equal_the_minimum_of_each_window(
    values: list[int], width: int, data: st.DataObject
) -> None:
    count = max(0, len(values) - width + 1)
    if count == 0:
        values = values + [0] * width
        count = 1
    array = np.array(values, dtype=np.int64)
    got = _window_minima(array, width, count)
    assert got.tolist() == [min(values[k : k + width]) for k in range(count)]


@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 400),
    st.lists(st.integers(0, 9), min_size=1, max_size=3),
    st.integers(60, 500),
    st.integers(1, 4),
)
@example(0, 300, [3], 300, 1)  # a slot per input, all in step
@example(0, 300, [2, 3], 299, 2)
@example(0, 120, [0, 5], 500, 3)  # more slots than inputs
def test_long_cycles_equal_list_scheduling_and_the_reference_model(
    seed: int, count: int, values: list[int], cycle: int, block: int
) -> None:
    lengths = np.random.default_rng(seed).choice(values, count)
    schedule = _schedule(lengths.tolist(), cycle, block)
    slots, starts, first_failed = _list_scheduling(lengths, cycle, block)
    assert schedule.slot.tolist() == slots
    assert schedule.start_round.tolist() == starts
    assert schedule.first_failed_pull == first_failed
    expected = reference_interleave(lengths.tolist(), cycle, block)
    assert _pairs(schedule.order()) == expected
    for position in range(0, len(expected), max(1, len(expected) // 7)):
        assert schedule.locate(position) == expected[position]


def test_a_cycle_as_long_as_100k_shards_plans_and_locates() -> None:
    # Every shard opens in its own slot in round 0 and yields one block per round
    # (specs/order.md §3.2), so position k of round r is record 16 r + k % 16 of input k // 16.
    shards = 100_000
    info = DatasetInfo(name="wide", splits={"train": [40] * shards})
    config = ReadConfig(
        shuffle_files=True,
        shuffle_seed=5,
        interleave_cycle_length=shards,
        interleave_block_length=16,
    )
    plan = ReadPlan(info, "train", config)
    files = plan.file_order(0)
    assert plan.locate(0, 5) == (int(files[0]), 5)
    assert plan.locate(0, 16 * shards + 16 * 7 + 3) == (int(files[7]), 19)
    assert plan.locate(0, 32 * shards + 8 * 9) == (int(files[9]), 32)
    assert plan.position_of(0, int(files[99_999]), 39) == 40 * shards - 1
    state = plan.schedule(0).state_at(16 * shards + 5)
    assert (state.cursor, state.block_counter) == (0, 5)
