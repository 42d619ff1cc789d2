"""Value objects are frozen and validate without mutating (specs/architecture.md §3).

Friendly inputs (lists for tuples, numpy integers and bools, dtype aliases, TFDS's
``take=-1``) are converted in the constructor, so an object built from them equals, hashes,
prints and pickles like one built from the stored form, and ``__post_init__`` leaves every
attribute as it found it.
"""

from __future__ import annotations

import ast
import dataclasses
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import readplan
from readplan import DatasetInfo, ExampleShuffle, InputContext, ReadConfig
from readplan.errors import ConfigError, DatasetInfoError, FeatureError
from readplan.example import FixedLen, VarLen
from readplan.index import RecordIndex
from readplan.metadata.features import (
    Audio,
    ClassLabel,
    FeaturesDict,
    Image,
    Scalar,
    Sequence,
    Tensor,
    load_features,
)
from readplan.metadata.split_info import SplitInfo
from readplan.planning.config import TFDS_DEFAULT
from readplan.planning.instructions import FileInstruction
from readplan.planning.shuffle import ShuffleBufferState
from tests.conftest import DATA

SRC = Path(readplan.__file__).parent
FEATURES_DIR = DATA / "tfds_features" / "readplan_features" / "1.0.0"

# --------------------------------------------------------------------------- the rule in code


def _calls(node: ast.AST) -> Iterator[tuple[ast.Call, str]]:
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            yield call, ast.unparse(call.func)


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            yield node


def _field_writes(function: ast.FunctionDef) -> list[str]:
    """Statements of ``function`` that store into an object's attributes behind its back."""
    found = [
        name
        for _, name in _calls(function)
        if name in ("object.__setattr__", "setattr", "init_fields")
        or name.endswith("__dict__.update")
    ]
    for node in ast.walk(function):
        targets = node.targets if isinstance(node, ast.Assign) else []
        found += [
            ast.unparse(target)
            for target in targets
            if isinstance(target, ast.Subscript) and ast.unparse(target.value).endswith("__dict__")
        ]
    return found


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(SRC.rglob("*.py")):
        yield str(path.relative_to(SRC)), ast.parse(path.read_text(encoding="utf-8"))


def test_no_post_init_stores_a_field() -> None:
    offenders = [
        f"{name}:{function.lineno} {write}"
        for name, tree in _sources()
        for function in _functions(tree)
        if function.name == "__post_init__"
        for write in _field_writes(function)
    ]
    assert offenders == [], "__post_init__ must validate only; convert in __init__"


def test_frozen_fields_are_stored_only_by_constructors() -> None:
    # object.__setattr__ anywhere else (a helper called by __post_init__, a cache filled
    # later) would mutate a frozen value after it was built.
    offenders = []
    for name, tree in _sources():
        for function in _functions(tree):
            if function.name == "__init__" or name == "_internal/frozen.py":
                continue
            inner = {
                id(node) for f in _functions(function) if f is not function for node in ast.walk(f)
            }
            offenders += [
                f"{name}:{call.lineno} in {function.name}"
                for call, called in _calls(function)
                if called in ("object.__setattr__", "init_fields") and id(call) not in inner
            ]
    assert offenders == []


def _post_init_is_pure(value: Any) -> None:
    before = dict(vars(value))
    value.__post_init__()
    after = vars(value)
    assert after.keys() == before.keys()
    assert all(after[key] is before[key] for key in before)


def _round_trips(value: Any) -> None:
    copy = pickle.loads(pickle.dumps(value))
    assert copy == value
    assert hash(copy) == hash(value)
    assert repr(copy) == repr(value)
    _post_init_is_pure(value)


# --------------------------------------------------------------------------- metadata

lengths_lists = st.lists(st.integers(0, 10**6), min_size=1, max_size=30)


@given(lengths_lists)
def test_split_info_from_a_list_is_the_split_info_from_a_tuple(lengths: list[int]) -> None:
    from_list = SplitInfo("train", lengths, filepath_template="")
    from_tuple = SplitInfo("train", tuple(lengths))
    assert from_list == from_tuple
    assert hash(from_list) == hash(from_tuple)
    assert repr(from_list) == repr(from_tuple)
    assert from_list.shard_lengths == tuple(lengths)
    assert from_list.filepath_template is None
    offsets = [sum(lengths[:k]) for k in range(len(lengths) + 1)]
    assert list(from_list.shard_offsets) == offsets
    assert from_list.num_examples == offsets[-1]
    assert from_list.records_before(-1) == offsets[-2]
    _round_trips(from_list)
    copy = pickle.loads(pickle.dumps(from_list))  # with its offsets already computed
    assert copy.shard_offsets == from_list.shard_offsets


@given(lengths_lists)
def test_split_info_replace_converts_like_the_constructor(lengths: list[int]) -> None:
    info = SplitInfo("train", (1,))
    replaced = dataclasses.replace(info, shard_lengths=lengths, filepath_template="")
    assert replaced == SplitInfo("train", tuple(lengths))


@pytest.mark.parametrize(
    ("lengths", "match"),
    [
        ((1, -2), "non-negative int64 integers, got -2"),
        ((1, True), "got True"),
        ((1, 1 << 63), f"got {1 << 63}"),
        (((1 << 62), (1 << 62)), "beyond int64"),
        (range(3), "must be a tuple of ints"),
    ],
)
def test_split_info_names_the_bad_lengths(lengths: Any, match: str) -> None:
    with pytest.raises(DatasetInfoError, match=match) as info:
        SplitInfo("train", lengths)
    assert info.value.field == "shard_lengths"


def test_dataset_info_reads_its_features_once_and_pickles() -> None:
    info = DatasetInfo.load(FEATURES_DIR)
    assert info.features is info.features
    assert info.resolve_features() is info.features
    assert info.features == load_features(FEATURES_DIR)
    _round_trips(info)
    given_features = FeaturesDict({"x": Scalar()})
    built = DatasetInfo("toy", {"train": [1]}, features=given_features)
    assert built.features is given_features
    assert built == DatasetInfo("toy", {"train": (1,)})  # features stay outside equality
    _round_trips(built)


shapes = st.lists(st.one_of(st.none(), st.integers(0, 9)), max_size=4)


@given(shapes, st.sampled_from(["int64", "float32", "string", "bool"]), st.booleans())
def test_tensor_shapes_given_as_lists_are_stored_as_tuples(
    shape: list[int | None], dtype: str, optional: bool
) -> None:
    from_list = Tensor(shape, dtype, optional=optional)
    assert from_list.shape == tuple(shape)
    assert from_list == Tensor(tuple(shape), dtype, optional=optional)
    assert hash(from_list) == hash(Tensor(tuple(shape), dtype, optional=optional))
    _round_trips(from_list)
    audio = Audio(shape, dtype)
    assert audio == Audio(tuple(shape), dtype)
    _round_trips(audio)


@given(st.lists(st.integers(1, 64), min_size=2, max_size=2), st.sampled_from([1, 3, 4]))
def test_image_shapes_given_as_lists_are_stored_as_tuples(size: list[int], channels: int) -> None:
    image = Image([*size, channels])
    assert image == Image((*size, channels))
    assert image.shape == (*size, channels)
    _round_trips(image)


def test_scalar_keeps_its_defaults_and_refuses_arrays() -> None:
    assert Scalar() == Scalar((), "int64") == Scalar([], "int64")
    assert Scalar(dtype="float32", optional=True).optional is True
    _round_trips(Scalar())
    with pytest.raises(FeatureError, match="Scalar has shape"):
        Scalar([2])
    with pytest.raises(FeatureError, match="must be a tuple"):
        Tensor({2}, "int64")  # type: ignore[arg-type]


@given(st.integers(0, 20))
def test_class_label_names_default_and_convert(num_classes: int) -> None:
    label = ClassLabel(num_classes)
    assert label.names == tuple(str(k) for k in range(num_classes))
    named = ClassLabel(num_classes, [f"c{k}" for k in range(num_classes)])
    assert named == ClassLabel(num_classes, tuple(f"c{k}" for k in range(num_classes)))
    _round_trips(label)
    _round_trips(named)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("3", ()), "num_classes must be a non-negative int, got '3'"),
        ((-1, []), "got -1"),
        ((2, ["a"]), "has 1 names but num_classes=2"),
        ((2, ["a", "a"]), "repeat"),
    ],
)
def test_class_label_names_the_bad_value(args: tuple[Any, Any], match: str) -> None:
    with pytest.raises(FeatureError, match=match):
        ClassLabel(*args)


def test_features_dict_converts_nested_dicts_and_pickles() -> None:
    nested = FeaturesDict({"b": {"y": Tensor([2], "int64"), "x": Scalar()}, "a": Scalar()})
    assert list(nested) == ["a", "b"]
    assert isinstance(nested["b"], FeaturesDict)
    assert list(nested["b"]) == ["x", "y"]
    same = FeaturesDict(
        {"a": Scalar(), "b": FeaturesDict({"x": Scalar(), "y": Tensor((2,), "int64")})}
    )
    assert nested == same
    assert hash(nested) == hash(same)
    assert repr(nested) == repr(same)
    _round_trips(nested)
    _round_trips(Sequence(nested, 3))


def test_features_dict_reports_the_first_bad_entry_in_name_order() -> None:
    with pytest.raises(FeatureError, match="feature name 'a/b'"):
        FeaturesDict({"z": {"": Scalar()}, "a/b": Scalar()})
    with pytest.raises(FeatureError, match="feature name ''"):
        FeaturesDict({"z": 3, "a": {"": Scalar()}})
    with pytest.raises(FeatureError, match="feature 'a' is 3"):
        FeaturesDict({"a": 3, "b": {"": Scalar()}})
    with pytest.raises(FeatureError, match="needs a mapping"):
        FeaturesDict([("a", Scalar())])  # type: ignore[arg-type]


# --------------------------------------------------------------------------- planning


@given(st.integers(0, 100), st.integers(0, 100), st.booleans())
def test_take_minus_one_reads_the_rest_of_the_shard(size: int, skip: int, kw: bool) -> None:
    skip = min(skip, size)
    extra: dict[str, Any] = {"split": "train", "shard_index": 2} if kw else {}
    rest = FileInstruction("f", skip, -1, size, **extra)
    assert rest.take == size - skip
    assert rest == FileInstruction("f", skip, size - skip, size, **extra)
    assert hash(rest) == hash(FileInstruction("f", skip, size - skip, size, **extra))
    assert rest.takes_all
    _round_trips(rest)
    assert dataclasses.replace(rest, take=-1) == rest
    assert dataclasses.replace(rest, skip=0, take=-1).take == size


def test_file_instruction_keeps_other_negative_takes_and_checks_types() -> None:
    inverted = FileInstruction("f", 5, -3, 10)
    assert inverted.take == -3
    assert inverted.num_records == 5
    with pytest.raises(TypeError, match="skip must be an int, got 'a'"):
        FileInstruction("f", "a", -1, 10)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"take must be an int, got -1\.0"):
        FileInstruction("f", 0, -1.0, 10)  # type: ignore[arg-type]


numpy_ints = st.sampled_from([np.int8, np.int32, np.int64, np.uint16, int])


@given(numpy_ints, st.integers(1, 100), st.integers(0, 2**40), st.booleans())
def test_read_config_stores_numpy_values_as_python_values(
    kind: Any, cycle: int, seed: int, flag: bool
) -> None:
    seed = seed if kind is int else seed % (int(np.iinfo(kind).max) + 1)
    converted = ReadConfig(
        interleave_cycle_length=kind(cycle),
        interleave_block_length=kind(cycle),
        shuffle_files=np.bool_(flag),
        shuffle_seed=kind(seed),
        shuffle_reshuffle_each_iteration=np.bool_(flag),
        input_context=InputContext(kind(0), kind(2)),
        enable_ordering_guard=np.bool_(flag),
        global_seed=kind(seed),
        example_shuffle=ExampleShuffle(kind(cycle), kind(seed), np.bool_(flag)),
    )
    plain = ReadConfig(
        interleave_cycle_length=cycle,
        interleave_block_length=cycle,
        shuffle_files=flag,
        shuffle_seed=seed,
        shuffle_reshuffle_each_iteration=flag,
        input_context=InputContext(0, 2),
        enable_ordering_guard=flag,
        global_seed=seed,
        example_shuffle=ExampleShuffle(cycle, seed, flag),
    )
    assert converted == plain
    assert hash(converted) == hash(plain)
    assert repr(converted) == repr(plain)
    for name, value in vars(converted).items():
        assert type(value) is type(getattr(plain, name)), name
    assert type(converted.example_shuffle.seed) is int  # type: ignore[union-attr]
    _round_trips(converted)
    _round_trips(converted.example_shuffle)
    _round_trips(converted.input_context)


def test_read_config_defaults_and_refusals_are_unchanged() -> None:
    default = ReadConfig()
    assert default == ReadConfig(TFDS_DEFAULT, 16, False, None, None, None, None, True)
    assert dataclasses.replace(default, shuffle_seed=np.int64(3)).shuffle_seed == 3
    with pytest.raises(ConfigError, match="shuffle_files=1 is not a flag"):
        ReadConfig(shuffle_files=1)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="interleave_cycle_length=0 is out of range"):
        ReadConfig(interleave_cycle_length=np.int64(0))
    with pytest.raises(ConfigError, match="input_pipeline_id=2 is out of range"):
        InputContext(2, 2)


@given(st.lists(st.integers(0, 50), unique=True, max_size=10), st.integers(0, 5))
def test_shuffle_buffer_state_stores_plain_ordinals(buffer: list[int], draws: int) -> None:
    consumed = max(buffer, default=-1) + 1 + draws
    draws = consumed - len(buffer)
    state = ShuffleBufferState(tuple(np.int64(v) for v in buffer), np.int64(consumed), draws)
    assert state == ShuffleBufferState(tuple(buffer), consumed, draws)
    assert all(type(v) is int for v in state.buffer)
    assert type(state.consumed) is int
    _round_trips(state)


# --------------------------------------------------------------------------- records


@given(st.lists(st.integers(0, 5), min_size=1, max_size=4))
def test_fixed_len_accepts_what_tensorflow_accepts(shape: list[int]) -> None:
    count = int(np.prod(shape))
    values = list(range(count))
    friendly = FixedLen([np.int32(d) for d in shape], np.int64, default=np.reshape(values, shape))
    stored = FixedLen(tuple(shape), "int64", default=tuple(values))
    assert friendly == stored
    assert hash(friendly) == hash(stored)
    assert friendly.shape == tuple(shape)
    assert friendly.dtype == "int64"
    assert friendly.default == tuple(values)
    _round_trips(friendly)
    floats = FixedLen(shape, np.dtype("float32"), default=[0.5] * count)
    assert floats.default == (0.5,) * count
    _round_trips(floats)
    assert FixedLen(shape, np.bytes_) == FixedLen(tuple(shape), "bytes")


def test_fixed_len_and_var_len_name_the_bad_field_in_order() -> None:
    with pytest.raises(ConfigError, match="dtype 'int32' is not") as info:
        FixedLen([-1], "int32", default=[1])
    assert info.value.field == "dtype"
    with pytest.raises(ConfigError, match=r"shape \[1\.5\] is not a tuple of ints"):
        FixedLen([1.5], "int64")  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="unknown dimension"):
        FixedLen([-1], "int64", default=[1, 2])
    with pytest.raises(ConfigError, match="holds 2 values but shape"):
        FixedLen([3], "int64", default=[1, 2])
    with pytest.raises(ConfigError, match="must be \\(-1, \\*inner\\)"):
        VarLen("float32", shape=[3])
    var = VarLen(np.float32, shape=[-1, np.int64(4)])
    assert var == VarLen("float32", shape=(-1, 4))
    _round_trips(var)


@given(st.lists(st.integers(16, 100), max_size=8))
def test_record_index_offsets_are_a_read_only_int64_array(sizes: list[int]) -> None:
    offsets = [sum(sizes[:k]) for k in range(len(sizes))]
    index = RecordIndex("f", None, offsets, sum(sizes), sum(sizes), 7)
    assert index.offsets.dtype == np.int64
    assert not index.offsets.flags.writeable
    assert index.offsets.tolist() == offsets
    assert index.frame_sizes().tolist() == sizes
    copy = pickle.loads(pickle.dumps(index))
    assert copy.offsets.tolist() == offsets
    assert (copy.data_path, copy.stream_size, copy.binding_crc) == ("f", sum(sizes), 7)
    _post_init_is_pure(index)
