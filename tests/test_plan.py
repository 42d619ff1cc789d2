"""Read plans against real TFDS orders, and the plan's guarantees as properties."""

from __future__ import annotations

import json
import os
import re
import tracemalloc
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from readplan import ExampleShuffle, InputContext, ReadConfig, ReadPlan
from readplan.errors import ConfigError, EmptySplitError
from readplan.metadata.dataset_info import DatasetInfo, shard_lengths
from readplan.planning.instructions import file_instructions
from readplan.testing import assert_epoch_is_permutation, plans, read_configs
from tests.conftest import DATA
from tests.reference_models import reference_interleave
from tests.tfds_toy import TOY, TOY_INFO

ORDERS = json.loads((DATA / "vectors" / "orders.json").read_text())


def _config(rc: dict[str, Any], shuffle_files: bool | None = None) -> ReadConfig:
    """A ReadConfig from a vector's read_config (null cycle length: TFDS's default)."""
    kwargs = dict(rc)
    if kwargs.get("interleave_cycle_length", 0) is None:
        del kwargs["interleave_cycle_length"]
    if shuffle_files is not None:
        kwargs["shuffle_files"] = shuffle_files
    return ReadConfig(**kwargs)


def _triples(plan: ReadPlan, epoch: int) -> list[list[Any]]:
    order = plan.epoch(epoch)
    return [
        [plan.instructions[f].split, plan.instructions[f].shard_index, r]
        for f, r in zip(order.file_index.tolist(), order.record_index.tolist())
    ]


@pytest.mark.parametrize(
    "case",
    ORDERS,
    ids=[f"{c['dataset']}-{c['spec']}-{k}" for k, c in enumerate(ORDERS)],
)
def test_tfds_order_vectors(case: dict[str, Any]) -> None:
    info = DatasetInfo(name=case["dataset"], splits=case["splits"])
    if "error" in case:
        with pytest.raises(ValueError, match=re.escape(case["message"])):
            ReadPlan(info, case["spec"], _config(case["read_config"]))
        return
    plan = ReadPlan(info, case["spec"], _config(case["read_config"]))
    for epoch, expected in enumerate(case["epochs"]):
        assert _triples(plan, epoch) == expected


TOY_CASES = [(case, epoch) for case in TOY["cases"] for epoch in range(len(case["epochs"]))]


@pytest.mark.parametrize(
    ("case", "epoch"),
    TOY_CASES,
    ids=[f"{c['spec']}-{c['read_config']}-e{e}" for c, e in TOY_CASES],
)
def test_tfds_fixture_orders(case: dict[str, Any], epoch: int) -> None:
    info = TOY_INFO
    plan = ReadPlan(info, case["spec"], _config(case["read_config"], case["shuffle_files"]))
    assert _triples(plan, epoch) == [e[:3] for e in case["epochs"][epoch]]


@pytest.fixture(scope="module")
def imagenet() -> DatasetInfo:
    return DatasetInfo(name="imagenet2012", splits={"train": shard_lengths(1281167, 1024)})


GUIDE = [
    ("train", {}, 0, [*range(16), 1251, 1252, 1253, 1254]),
    (
        "train",
        {"interleave_cycle_length": 3, "interleave_block_length": 2},
        0,
        [
            0,
            1,
            1251,
            1252,
            2502,
            2503,
            2,
            3,
            1253,
            1254,
            2504,
            2505,
            4,
            5,
            1255,
            1256,
            2506,
            2507,
            6,
            7,
        ],
    ),
    ("train[67%:84%]", {}, 0, [*range(858382, 858398), 859533, 859534, 859535, 859536]),
    (
        "train",
        {"shuffle_files": True, "shuffle_seed": 32},
        0,
        [*range(176411, 176427), *range(710647, 710653)],
    ),
]


@pytest.mark.parametrize(("spec", "rc", "epoch", "expected"), GUIDE)
def test_tfds_guide_imagenet_examples(
    imagenet: DatasetInfo, spec: str, rc: dict[str, Any], epoch: int, expected: list[int]
) -> None:
    plan = ReadPlan(imagenet, spec, ReadConfig(**rc))
    first = next(plan.iter_epoch(epoch, chunk_size=len(expected)))
    assert first.global_ids().tolist() == expected


@pytest.mark.parametrize(
    ("reshuffle", "epoch", "shards"),
    [
        (None, 0, [141, 568, 582, 652]),
        (None, 1, [777, 46, 87, 451]),
        (None, 2, [445, 809, 568, 208]),
        (False, 0, [113, 163, 709, 305]),
        (False, 5, [113, 163, 709, 305]),
    ],
)
def test_imagenet_file_orders_per_epoch(
    imagenet: DatasetInfo, reshuffle: bool | None, epoch: int, shards: list[int]
) -> None:
    config = ReadConfig(
        shuffle_files=True, shuffle_seed=32, shuffle_reshuffle_each_iteration=reshuffle
    )
    plan = ReadPlan(imagenet, "train", config)
    assert plan.file_order(epoch)[:4].tolist() == shards


def test_full_imagenet_epoch_is_a_permutation_with_files_in_order(imagenet: DatasetInfo) -> None:
    plan = ReadPlan(imagenet, "train", ReadConfig(shuffle_files=True, shuffle_seed=32))
    order = plan.epoch(3)
    ids = order.global_ids()
    assert np.array_equal(np.sort(ids), np.arange(1281167))
    # Within each file, records appear in increasing order.
    by_file = np.lexsort((np.arange(ids.size), order.file_index))
    assert np.all(
        np.diff(order.record_index[by_file])[np.diff(order.file_index[by_file]) == 0] == 1
    )


def test_streamed_chunks_and_locate_agree_with_the_epoch(imagenet: DatasetInfo) -> None:
    plan = ReadPlan(imagenet, "train[10%:60%]", ReadConfig(shuffle_files=True, shuffle_seed=7))
    whole = plan.epoch(2)
    chunks = list(plan.iter_epoch(2, chunk_size=100_003))
    assert np.array_equal(np.concatenate([c.file_index for c in chunks]), whole.file_index)
    assert np.array_equal(np.concatenate([c.record_index for c in chunks]), whole.record_index)
    rng = np.random.default_rng(0)
    for position in rng.integers(0, len(whole), 50).tolist():
        location = plan.locate(2, position)
        assert location == (int(whole.file_index[position]), int(whole.record_index[position]))
        assert plan.position_of(2, *location) == position


def test_tfds_ids_use_file_basenames(imagenet: DatasetInfo) -> None:
    plan = ReadPlan(imagenet, "train[44%:45%]", ReadConfig(interleave_cycle_length=1))
    assert plan.epoch(0).tfds_ids()[:2] == [
        "imagenet2012-train.tfrecord-00450-of-01024__700",
        "imagenet2012-train.tfrecord-00450-of-01024__701",
    ]


# -- properties -------------------------------------------------------------------------

plain_plans = plans(configs=read_configs(example_shuffle=False))


@given(plans(), st.integers(0, 5))
def test_epoch_is_a_permutation_of_the_split(plan: ReadPlan, epoch: int) -> None:
    files = file_instructions(plan.info, plan.spec)
    context = plan.config.input_context
    if context is not None:
        files = files[context.input_pipeline_id :: context.num_input_pipelines]
    expected = [(fi.filename, r) for fi in files for r in range(fi.skip, fi.skip + fi.take)]
    order = plan.epoch(epoch)
    got = [
        (plan.instructions[f].filename, r)
        for f, r in zip(order.file_index.tolist(), order.record_index.tolist())
    ]
    # Overlapping union parts read a record twice, as TFDS does: compare as multisets.
    assert sorted(got) == sorted(expected)
    assert_epoch_is_permutation(plan, epoch)


@given(plain_plans, st.integers(0, 5))
def test_epoch_equals_reference_interleave_of_its_file_order(plan: ReadPlan, epoch: int) -> None:
    files = plan.file_order(epoch).tolist()
    lengths = [plan.instructions[f].num_records for f in files]
    expected = [
        (files[i], plan.instructions[files[i]].skip + j)
        for i, j in reference_interleave(lengths, plan.cycle_length, plan.block_length)
    ]
    order = plan.epoch(epoch)
    assert list(zip(order.file_index.tolist(), order.record_index.tolist())) == expected


@given(plans(), st.integers(0, 3), st.integers(1, 7))
def test_locate_position_of_and_chunks(plan: ReadPlan, epoch: int, chunk: int) -> None:
    order = plan.epoch(epoch)
    pairs = list(zip(order.file_index.tolist(), order.record_index.tolist()))
    for position, (f, r) in enumerate(pairs):
        assert plan.locate(epoch, position) == (f, r)
        assert plan.position_of(epoch, f, r) == position
    streamed = [
        p
        for c in plan.iter_epoch(epoch, chunk_size=chunk)
        for p in zip(c.file_index.tolist(), c.record_index.tolist())
    ]
    assert streamed == pairs


@given(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1))
@example(32, 33)
def test_different_seeds_give_different_file_orders(seed_a: int, seed_b: int) -> None:
    info = DatasetInfo(name="d", splits={"train": [3] * 64})
    a = ReadPlan(info, "train", ReadConfig(shuffle_files=True, shuffle_seed=seed_a))
    b = ReadPlan(info, "train", ReadConfig(shuffle_files=True, shuffle_seed=seed_b))
    same = np.array_equal(a.file_order(0), b.file_order(0))
    # 64! orders: equal file orders mean equal seeds (collisions are astronomically unlikely).
    assert same == (seed_a % (2**31 - 1) == seed_b % (2**31 - 1))
    again = ReadPlan(info, "train", ReadConfig(shuffle_files=True, shuffle_seed=seed_a))
    assert np.array_equal(a.file_order(4), again.file_order(4))


def test_epoch_1000_does_not_depend_on_earlier_epochs(imagenet: DatasetInfo) -> None:
    config = ReadConfig(shuffle_files=True, shuffle_seed=32)
    fresh = ReadPlan(imagenet, "train", config).file_order(1000)
    walked = ReadPlan(imagenet, "train", config)
    for epoch in range(0, 1001, 250):
        walked.file_order(epoch)
    assert np.array_equal(fresh, walked.file_order(1000))


def test_example_shuffle_reorders_records_within_the_epoch() -> None:
    info = DatasetInfo(name="d", splits={"train": [5, 7, 3]})
    plain = ReadPlan(info, "train", ReadConfig(interleave_cycle_length=2))
    shuffled = ReadPlan(
        info, "train", ReadConfig(interleave_cycle_length=2, example_shuffle=ExampleShuffle(4, 9))
    )
    a, b = plain.epoch(0), shuffled.epoch(0)
    assert sorted(zip(a.file_index.tolist(), a.record_index.tolist())) == sorted(
        zip(b.file_index.tolist(), b.record_index.tolist())
    )
    assert not np.array_equal(a.record_index, b.record_index)
    for position in range(len(b)):
        location = shuffled.locate(0, position)
        assert location == (int(b.file_index[position]), int(b.record_index[position]))
        assert shuffled.position_of(0, *location) == position


# -- errors -----------------------------------------------------------------------------


def test_empty_selection_is_refused_when_the_plan_is_built() -> None:
    info = DatasetInfo(name="d", splits={"train": [4, 4]})
    with pytest.raises(EmptySplitError, match=r"Instruction \[\] corresponds to no data!"):
        ReadPlan(info, "train[2shard:]")


def test_shuffled_files_need_a_seed() -> None:
    with pytest.raises(ConfigError, match="shuffle_seed") as raised:
        ReadConfig(shuffle_files=True)
    assert raised.value.field == "shuffle_seed"


def test_fewer_files_than_pipelines_is_refused_as_tfds_does() -> None:
    info = DatasetInfo(name="d", splits={"train": [4, 4]})
    with pytest.raises(ConfigError, match="Cannot shard the pipeline"):
        ReadPlan(info, "train", ReadConfig(input_context=InputContext(0, 3)))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"interleave_cycle_length": 0},
        {"interleave_block_length": -2},
        {"shuffle_seed": "32"},
        {"input_context": (0, 2)},
    ],
)
def test_invalid_config_fields_are_named(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as raised:
        ReadConfig(**kwargs)
    assert raised.value.field is not None
    assert raised.value.field.split(".")[0] in kwargs


def test_ordered_datasets_default_to_cycle_length_one_and_guard_order() -> None:
    info = DatasetInfo(name="d", splits={"train": [2, 2]}, disable_shuffling=True)
    assert ReadPlan(info, "train").cycle_length == 1
    assert ReadPlan(info, "train", ReadConfig()).cycle_length == 1
    with pytest.raises(ConfigError, match="ordered dataset"):
        ReadPlan(info, "train", ReadConfig(interleave_cycle_length=16))
    unguarded = ReadConfig(interleave_cycle_length=16, enable_ordering_guard=False)
    # Two files: the 16 slots read like two (slots beyond the files never hold one).
    assert ReadPlan(info, "train", unguarded).cycle_length == 2


def test_out_of_range_queries() -> None:
    info = DatasetInfo(name="d", splits={"train": [2, 2]})
    plan = ReadPlan(info, "train[1:]")
    with pytest.raises(ConfigError, match=r"valid: 0\.\.2"):
        plan.locate(0, 3)
    with pytest.raises(ConfigError, match=r"reads records 1\.\.1"):
        plan.position_of(0, 0, 0)
    with pytest.raises(ConfigError, match="epoch"):
        plan.epoch(-1)


# TFDS 4.9.10 on the fixture: 'train[45:40]' gives shard 6 skip=8 take=-5 and fails while
# reading with "Input dataset was expected to contain -5 elements but contained at least 1
# element."; 'train[45:40]+test' fails after 8 records; 'train[44:43]' (take -1, "to the
# end") reads records 7, 8, 9 of shard 6.
@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("train[45:40]", "expected to contain -5 elements but contained at least 1 element."),
        ("train[45:40]+test", "expected to contain 8 elements but contained at least 9 elements."),
    ],
)
def test_negative_takes_fail_like_tfds_reading_them(spec: str, message: str) -> None:
    info = TOY_INFO
    with pytest.raises(ValueError, match=re.escape(message)):
        ReadPlan(info, spec)


def test_take_minus_one_reads_to_the_end_of_the_shard() -> None:
    plan = ReadPlan(TOY_INFO, "train[44:43]")
    assert plan.epoch(0).tfds_ids() == [
        f"readplan_toy-train.tfrecord-00006-of-00008__{k}" for k in (7, 8, 9)
    ]


def test_input_context_skips_the_cardinality_check_as_tfds_does() -> None:
    plan = ReadPlan(
        TOY_INFO,
        "train[45:40]+test",
        ReadConfig(input_context=InputContext(0, 1)),
    )
    assert plan.num_examples == 2 + 13


# Orders computed by TensorFlow 2.21 / TFDS 4.9.10: the fixture read with as_dataset(...)
# followed by ds.shuffle(buffer, seed=seed) (after tf.random.set_seed(global_seed) when
# given), iterated three times.
EXAMPLE_SHUFFLE_TF = json.loads((DATA / "vectors" / "example_shuffle_tf.json").read_text())


@pytest.mark.parametrize(
    "case", EXAMPLE_SHUFFLE_TF, ids=[f"{c['spec']}-b{c['buffer']}" for c in EXAMPLE_SHUFFLE_TF]
)
def test_example_shuffle_matches_tfdata(case: dict[str, Any]) -> None:
    config = ReadConfig(
        shuffle_files=case["shuffle_files"],
        global_seed=case["global_seed"],
        example_shuffle=ExampleShuffle(case["buffer"], case["seed"]),
        **case["rc"],
    )
    plan = ReadPlan(TOY_INFO, case["spec"], config)
    for epoch, expected in enumerate(case["epochs"]):
        assert plan.epoch(epoch).tfds_ids() == expected


# Orders computed by TensorFlow 2.21 / TFDS 4.9.10 on the fixture for read configurations
# the shared vectors do not cover: input_context, experimental_interleave_sort_fn (by name
# below) and a global seed (tf.random.set_seed before building the dataset).
READ_CONFIG_TF = json.loads((DATA / "vectors" / "read_config_tf.json").read_text())
SORT_FNS: dict[str | None, Any] = {
    None: None,
    "reverse": lambda fis: list(reversed(fis)),
    "by_take_desc": lambda fis: sorted(fis, key=lambda f: -f.take),
}


@pytest.mark.parametrize(
    "case",
    READ_CONFIG_TF,
    ids=[
        f"{c['spec']}-{c['input_context']}-{c['sort']}-{c['global_seed']}" for c in READ_CONFIG_TF
    ],
)
def test_read_config_orders_match_tfds(case: dict[str, Any]) -> None:
    context = case["input_context"]
    config = ReadConfig(
        shuffle_files=case["shuffle_files"],
        input_context=None if context is None else InputContext(*context),
        experimental_interleave_sort_fn=SORT_FNS[case["sort"]],
        global_seed=case["global_seed"],
        **case["read_config"],
    )
    plan = ReadPlan(TOY_INFO, case["spec"], config)
    for epoch, expected in enumerate(case["epochs"]):
        assert plan.epoch(epoch).tfds_ids() == expected


@given(st.sampled_from(["train", "train+test", "train[3:-4]", "test[1:]"]), st.integers(1, 4))
def test_input_pipelines_together_read_the_split_once(spec: str, count: int) -> None:
    info = TOY_INFO
    files = file_instructions(info, spec)
    if len(files) < count:
        return
    read = []
    for pipeline in range(count):
        config = ReadConfig(
            shuffle_files=True, shuffle_seed=3, input_context=InputContext(pipeline, count)
        )
        plan = ReadPlan(info, spec, config)
        assert [plan.instructions[f].filename for f in plan.selected] == [
            fi.filename for fi in files[pipeline::count]
        ]
        read += plan.epoch(1).tfds_ids()
    expected = [
        f"{os.path.basename(fi.filename)}__{record}"
        for fi in files
        for record in range(fi.skip, fi.skip + fi.take)
    ]
    assert sorted(read) == sorted(expected)


def test_streaming_memory_does_not_grow_with_the_epoch() -> None:
    """2 * 10^8 examples: streaming the first chunks holds the files and a chunk, not the
    epoch (which would take 3.2 GB as two int64 arrays)."""
    info = DatasetInfo(name="big", splits={"train": [10_000] * 20_000})
    plan = ReadPlan(info, "train", ReadConfig(shuffle_files=True, shuffle_seed=1))
    plan.file_order(0)  # the per-epoch schedule: O(files)
    tracemalloc.start()
    try:
        chunks = plan.iter_epoch(0, chunk_size=1 << 16)
        total = sum(len(next(chunks)) for _ in range(8))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == 8 << 16
    assert peak < 32 * 2**20


def test_cached_orders_cannot_be_changed_through_returned_arrays() -> None:
    info = DatasetInfo(name="d", splits={"train": [2, 3, 4]})
    for config in (ReadConfig(), ReadConfig(shuffle_files=True, shuffle_seed=1)):
        plan = ReadPlan(info, "train", config)
        before = plan.epoch(0).global_ids().tolist()
        with pytest.raises(ValueError, match="read-only"):
            plan.file_order(0)[:] = 0
        assert plan.epoch(0).global_ids().tolist() == before


def test_position_of_refuses_a_non_integer_record() -> None:
    plan = ReadPlan(DatasetInfo(name="d", splits={"train": [2, 3]}), "train")
    with pytest.raises(ConfigError, match="'x'"):
        plan.position_of(0, 1, "x")  # type: ignore[arg-type]


@pytest.mark.parametrize("chunk_size", [0, -1, True, 2**63, 1.0])
@pytest.mark.parametrize("example_shuffle", [None, ExampleShuffle(4, 7)])
def test_iter_epoch_refuses_a_chunk_size_that_is_not_a_positive_int64(
    chunk_size: Any, example_shuffle: ExampleShuffle | None
) -> None:
    # Both the interleaved and the example-shuffled walk check it, like iter_from.
    info = DatasetInfo("ds", {"train": [10, 10, 5]})
    config = ReadConfig(shuffle_files=True, shuffle_seed=3, example_shuffle=example_shuffle)
    plan = ReadPlan(info, "train", config)
    with pytest.raises(ConfigError, match="chunk_size"):
        next(plan.iter_epoch(0, chunk_size=chunk_size))


@pytest.mark.parametrize(
    ("files", "records"),
    [(0, 0), ([0, 1], [0]), ([[0]], [[0]]), ([0.5], [0]), ([0], ["a"]), ([99], [0]), ([-1], [0])],
)
def test_tfds_ids_refuses_what_is_not_a_pair_of_index_sequences(
    files: object, records: object
) -> None:
    """Scalars, unequal lengths (which zip would cut silently), floats and file indices
    outside the plan are ConfigErrors, not foreign exceptions or shortened lists."""
    plan = ReadPlan(DatasetInfo(name="d", splits={"train": [3, 4]}), "train")
    with pytest.raises(ConfigError):
        plan.tfds_ids(files, records)  # type: ignore[arg-type]


def test_tfds_ids_accepts_lists_and_arrays_alike() -> None:
    plan = ReadPlan(DatasetInfo(name="d", splits={"train": [3, 4]}), "train")
    expected = ["d-train.tfrecord-00001-of-00002__2", "d-train.tfrecord-00000-of-00002__0"]
    assert plan.tfds_ids([1, 0], [2, 0]) == expected
    assert plan.tfds_ids(np.array([1, 0]), np.array([2, 0])) == expected
    assert plan.tfds_ids([], []) == []
