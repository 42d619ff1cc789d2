"""Hypothesis strategies shared by the test modules, one section per layer."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
from hypothesis import strategies as st

from readplan.example import FixedLen, VarLen
from readplan.metadata.dataset_info import DatasetInfo
from readplan.metadata.features import (
    ClassLabel,
    Feature,
    FeaturesDict,
    Image,
    Sequence,
    SkipDecoding,
    Tensor,
    Text,
)
from readplan.plan import ReadConfig
from readplan.planning.splits import ReadInstruction
from readplan.testing import read_configs
from tests import example_wire as wire
from tests.example_values import FLOAT_BITS_PINS, INT64_MAX, INT64_MIN
from tests.tbl_samples import FORMAT_NAMES, Spec

# ---------------------------------------------------------------------------------------------
# Splits, shard layouts and dataset metadata (dataset_info.py, splits.py, instructions.py,
# data_source.py)

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


@st.composite
def layouts_and_specs(draw: st.DrawFn) -> tuple[dict[str, list[int]], list[tuple[str, int, int]]]:
    """Shard lengths per split, and a union of absolute ranges ``name[a:b]``."""
    names = draw(st.lists(st.sampled_from(["train", "test"]), min_size=1, unique=True))
    lengths = {name: draw(st.lists(st.integers(0, 9), min_size=1, max_size=5)) for name in names}
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(names))
        n = sum(lengths[name])
        a = draw(st.integers(0, n))
        parts.append((name, a, draw(st.integers(a, n))))
    return lengths, parts


# ---------------------------------------------------------------------------------------------
# Read configurations (plan.py, state/checkpoint.py)

# The interleave and the file shuffle alone (no example shuffle, no global seed): what a
# stepped interleave model, and tf.data reading a checkpoint's instructions, reproduce.
plain_configs = read_configs().map(
    lambda c: ReadConfig(
        interleave_cycle_length=c.interleave_cycle_length,
        interleave_block_length=c.interleave_block_length,
        shuffle_files=c.shuffle_files,
        shuffle_seed=c.shuffle_seed,
        shuffle_reshuffle_each_iteration=c.shuffle_reshuffle_each_iteration,
        input_context=c.input_context,
    )
)


# ---------------------------------------------------------------------------------------------
# Shuffles (planning/philox.py, seeds.py, shuffle.py)

uint32 = st.integers(0, 2**32 - 1)
iterator_pairs = st.tuples(uint32, uint32)  # the seed pair of one iterator (one epoch)


# ---------------------------------------------------------------------------------------------
# Example values (example.py): edge values pinned, then any

_KINDS = ("int64", "float32", "bytes")


def _is_signalling_nan(bits: int) -> bool:
    return bits & 0x7F800000 == 0x7F800000 and bits & 0x003FFFFF != 0 and not bits & 0x00400000


int64s = st.one_of(
    st.sampled_from([INT64_MIN, INT64_MAX, -1, 0, 300]), st.integers(INT64_MIN, INT64_MAX)
)
# Lists longer than 32 take the module's bulk conversion path, shorter ones the iterating one.
int64_arrays = st.lists(int64s, max_size=40).map(lambda v: np.array(v, dtype=np.int64))
bytes_lists = st.lists(st.binary(max_size=12), max_size=5)


def float32_arrays(*, signalling_nans: bool = True) -> st.SearchStrategy[Any]:
    """float32 arrays of any bit patterns, NaN payloads included."""
    bits = st.one_of(st.sampled_from(FLOAT_BITS_PINS), st.integers(0, 2**32 - 1))
    if not signalling_nans:
        bits = bits.filter(lambda b: not _is_signalling_nan(b))
    return st.lists(bits, max_size=40).map(lambda v: np.array(v, dtype=np.uint32).view(np.float32))


def feature_dicts(*, signalling_nans: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    """What ``example.encode`` takes and ``example.decode`` returns."""
    values = st.one_of(int64_arrays, float32_arrays(signalling_nans=signalling_nans), bytes_lists)
    return st.dictionaries(st.text(max_size=6), values, max_size=6)


# ---------------------------------------------------------------------------------------------
# Batches of Example records (decode_batch, decode_many, parse_many), written by
# tests/example_wire.py

feature_names = st.text(max_size=5)
_KIND_VALUES = {
    "int64": int64_arrays,
    "float32": float32_arrays(),
    "bytes": bytes_lists,
}
_KINDLESS = b"\x12\x00"  # a map entry's Feature with no list set


def _wire_feature(value: Any) -> bytes:
    """The Feature holding ``value``: a list of bytes, or an int64 or float32 array."""
    if isinstance(value, list):
        return wire.bytes_feature(*value)
    if value.dtype == np.float32:
        return wire.float_feature(*value.view(np.uint32).tolist())
    return wire.int64_feature(*value.tolist())


@st.composite
def canonical_batches(draw: st.DrawFn, *, same_layout: bool = False) -> list[bytes]:
    """Records of one schema (a kind per name), entries in any order, names missing or kindless.

    With ``same_layout`` every record lists every name, in one order.
    """
    schema = draw(st.dictionaries(feature_names, st.sampled_from(sorted(_KIND_VALUES)), max_size=5))
    layout = draw(st.permutations(sorted(schema)))
    records = []
    for _ in range(draw(st.integers(0, 6))):
        held = (
            layout
            if same_layout or not layout
            else draw(st.lists(st.sampled_from(layout), unique=True))
        )
        entries = []
        for name in held:
            if draw(st.integers(0, 5)) == 0:
                entries.append(wire.entry(name, b""))  # a Feature without a list
            else:
                entries.append(wire.entry(name, _wire_feature(draw(_KIND_VALUES[schema[name]]))))
        records.append(wire.example(*entries) if entries or draw(st.booleans()) else b"")
    return records


def unusual_records(name: str, ints: list[int], bits: list[int]) -> list[bytes]:
    """Records the runtime reads in its own way, or refuses."""
    return [
        wire.example(wire.entry(name, wire.int64_feature(*ints, packed=False))),
        wire.example(wire.entry(name, wire.float_feature(*bits, packed=False))),
        wire.example(
            wire.entry(name, wire.int64_feature(1)), wire.entry(name, wire.float_feature(*bits))
        ),
        wire.example(wire.len_field(1, wire.len_field(2, _KINDLESS))),  # an entry without a key
        wire.example(wire.len_field(1, wire.len_field(1, name.encode("utf-8")))),  # without a value
        wire.example(wire.entry(b"\xff", wire.int64_feature(1))),  # a name that is not UTF-8
        wire.example(wire.entry(name, wire.float_feature(1)))[:-1] + b"\x01",  # three bytes
        wire.example(wire.entry(name, wire.len_field(3, b"\x0a\x01\x80"))),  # a truncated varint
        wire.example(
            wire.entry(name, wire.len_field(3, wire.len_field(1, b"\xff" * 10 + b"\x01")))
        ),  # an 11-byte varint
        wire.example(
            wire.entry(name, wire.len_field(3, wire.len_field(1, b"\xff" * 9 + b"\x7f")))
        ),  # a 10-byte varint
        wire.example(wire.entry(name, wire.int64_feature(1))) + b"\x10\x01",  # an unknown field
        wire.example(wire.entry(name, wire.int64_feature(1)) + b"\x10\x01"),
        wire.example(wire.entry(name, wire.len_field(3, wire.int64_feature(1)[2:] + b"\x10\x01"))),
        wire.len_field(1, b"") * 2,  # Example.features twice
        # a bytes value running past its list into the next entry
        wire.example(
            wire.entry(name, wire.len_field(1, b"\x0a\x05ab")),
            wire.entry("z", wire.int64_feature(1)),
        ),
    ]


def _unusual_record(draw: st.DrawFn) -> bytes:
    name = draw(feature_names)
    ints = draw(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=3))
    bits = draw(st.lists(st.integers(0, 2**32 - 1), max_size=3))
    return draw(st.sampled_from(unusual_records(name, ints, bits)))


@st.composite
def any_batches(draw: st.DrawFn) -> list[bytes]:
    """Canonical batches with arbitrary bytes or unusual records inserted anywhere."""
    records = draw(canonical_batches())
    for _ in range(draw(st.integers(0, 2))):
        extra = draw(st.one_of(st.builds(lambda: b""), st.binary(max_size=24)))
        if draw(st.booleans()):
            extra = _unusual_record(draw)
        records.insert(draw(st.integers(0, len(records))), extra)
    return records


_SHAPES = st.lists(st.integers(0, 3), max_size=2).map(tuple)
_INNER = st.lists(st.integers(1, 3), max_size=2).map(tuple)


@st.composite
def _schemas(draw: st.DrawFn) -> dict[str, FixedLen | VarLen]:
    names = draw(st.lists(st.text("abc", max_size=3), unique=True, max_size=4))
    schema: dict[str, FixedLen | VarLen] = {}
    for name in names:
        kind = draw(st.sampled_from(_KINDS))
        if draw(st.booleans()):
            shape = draw(_SHAPES)
            default = _values(draw, kind, math.prod(shape)) if draw(st.booleans()) else None
            schema[name] = FixedLen(shape, kind, default=default)
        else:
            schema[name] = VarLen(kind, shape=(-1, *draw(_INNER)))
    return schema


def _values(draw: st.DrawFn, kind: str, count: int, *, max_bytes: int = 4) -> Any:
    """``count`` values of ``kind``: a list of bytes, or an int64 or float32 array."""
    if kind == "bytes":
        return draw(st.lists(st.binary(max_size=max_bytes), min_size=count, max_size=count))
    if kind == "int64":
        ints = st.integers(-(2**63), 2**63 - 1)
        return np.array(draw(st.lists(ints, min_size=count, max_size=count)), dtype=np.int64)
    bits = st.integers(0, 2**32 - 1)
    words = draw(st.lists(bits, min_size=count, max_size=count))
    return np.array(words, dtype=np.uint32).view(np.float32)


@st.composite
def schema_batches(draw: st.DrawFn) -> tuple[dict[str, FixedLen | VarLen], list[bytes]]:
    """A schema and records that mostly fit it: features missing, of the wrong kind or size,
    and names outside the schema now and then."""
    schema = draw(_schemas())
    records = []
    for _ in range(draw(st.integers(0, 5))):
        entries = []
        for name, spec in schema.items():
            shape = spec.shape
            rows = draw(st.integers(0, 3))
            count = math.prod(shape) if isinstance(spec, FixedLen) else rows * math.prod(shape[1:])
            kind = str(spec.dtype)
            mishap = draw(st.integers(0, 30))
            if mishap == 0:
                continue  # missing
            if mishap == 1:
                kind = draw(st.sampled_from(_KINDS))
            if mishap == 2:
                count = draw(st.integers(0, 7))
            entries.append(wire.entry(name, _wire_feature(_values(draw, kind, count))))
        if draw(st.integers(0, 4)) == 0:
            entries.append(wire.entry("other", wire.int64_feature(draw(st.integers(0, 9)))))
        order = draw(st.permutations(range(len(entries))))
        records.append(wire.example(*(entries[k] for k in order)))
    return schema, records


# ---------------------------------------------------------------------------------------------
# TFDS features and records that mostly fit them (features.py)

_DTYPES = ("int8", "int32", "int64", "uint8", "uint32", "bool", "float16", "float32", "float64")


@st.composite
def _feature_leaves(draw: st.DrawFn) -> Feature:
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return Text()
    if choice == 1:
        return ClassLabel(num_classes=draw(st.integers(1, 5)))
    if choice == 2:
        return Image()  # decoded with SkipDecoding (image_skips), or refused: not an image
    dtype = draw(st.sampled_from((*_DTYPES, "string")))
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    if shape and 0 not in shape[1:] and draw(st.booleans()):
        shape = (None, *shape[1:])
    return Tensor(shape, dtype, optional=draw(st.booleans()) and None not in shape)


@st.composite
def _declared_features(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from("abcd"), unique=True, min_size=1, max_size=3))
    out: dict[str, Any] = {}
    for name in names:
        kind = draw(st.integers(0, 4 if depth == 0 else 2))
        feature: Any = draw(_feature_leaves())
        if kind == 3:
            feature = draw(_declared_features(depth + 1))
        elif kind == 4:
            inner = draw(st.one_of(_feature_leaves(), _declared_features(depth + 1)))
            if not _nested_sequence(inner):
                inner = FeaturesDict(inner) if isinstance(inner, dict) else inner
                feature = Sequence(inner, length=draw(st.sampled_from((None, 2))))
        out[name] = feature
    return out


def _nested_sequence(feature: Any) -> bool:
    # A Sequence of a leaf with an unknown dimension has two: readplan refuses it at build time.
    if isinstance(feature, Mapping):
        return any(_nested_sequence(inner) for inner in feature.values())
    return isinstance(feature, Tensor) and None in feature.shape


def _stored(features: Mapping[str, Any], prefix: str = "", rows: Any = 1) -> list[Any]:
    """(path, kind, values per row, rows: a count or None for any) of every stored entry."""
    out = []
    for name, feature in features.items():
        path, count = f"{prefix}{name}", rows
        if isinstance(feature, Sequence):
            count = feature.length
            feature = feature.feature
        if isinstance(feature, Mapping):
            out += _stored(feature, f"{path}/", count)
            continue
        if isinstance(feature, (Text, Image)):
            kind, per = "bytes", 1
        elif isinstance(feature, ClassLabel):
            kind, per = "int64", 1
        else:
            assert isinstance(feature, Tensor)
            floating = feature.dtype.startswith("float")
            kind = "bytes" if feature.dtype == "string" else "float32" if floating else "int64"
            per = math.prod(dim for dim in feature.shape if dim is not None)
            if None in feature.shape:
                count = None
        out.append((path, kind, per, count))
    return out


@st.composite
def feature_batches(draw: st.DrawFn) -> tuple[FeaturesDict, list[bytes]]:
    """Features and records that mostly fit them: entries missing, of the wrong kind or size,
    and an extra name now and then."""
    declared = draw(_declared_features())
    features = FeaturesDict(declared)
    stored = _stored(declared)
    records = []
    for _ in range(draw(st.integers(0, 5))):
        entries = []
        for path, kind, per, rows in stored:
            count = per * (draw(st.integers(0, 3)) if rows is None else rows)
            mishap = draw(st.integers(0, 30))
            if mishap == 0:
                continue
            if mishap == 1:
                kind = draw(st.sampled_from(_KINDS))
            if mishap == 2:
                count = draw(st.integers(0, 5))
            values = _values(draw, kind, count, max_bytes=3)
            entries.append(wire.entry(path, _wire_feature(values)))
        if draw(st.integers(0, 5)) == 0:
            entries.append(wire.entry("extra", wire.int64_feature(1)))
        records.append(wire.example(*entries))
    return features, records


def image_skips(features: Any) -> dict[str, Any]:
    """SkipDecoding for every image, so that drawn records need no image extra."""
    out: dict[str, Any] = {}
    for name, feature in features.items():
        inner = feature.feature if isinstance(feature, Sequence) else feature
        if isinstance(inner, Image):
            out[name] = SkipDecoding()
        elif isinstance(inner, FeaturesDict) and image_skips(inner):
            out[name] = image_skips(inner)
    return out


# ---------------------------------------------------------------------------------------------
# Records that fit their schema or features, but for a rare mishap (reader.md, "Batches": the
# collated batches of a decoding reader are mostly decoded through columns)

# Records per batch, drawn evenly (hypothesis favours small integers): batches of many records.
_COUNTS = st.sampled_from(range(2, 13))


def _mishaps(draw: st.DrawFn) -> Callable[[], bool]:
    """Whether an entry does not fit (missing, mistyped or mis-sized): in one batch of six,
    now and then; in the others never, so that most batches are decoded through columns."""
    rate = draw(st.sampled_from((0, 0, 0, 0, 0, 8)))
    return lambda: bool(rate) and draw(st.integers(0, rate)) == 0


@st.composite
def fitting_schema_batches(draw: st.DrawFn) -> tuple[dict[str, FixedLen | VarLen], list[bytes]]:
    """A schema and 2-12 records that fit it, but for a rare mishap: FixedLen entries
    missing only when they have a default, VarLen entries of 0-3 rows (ragged batches)."""
    schema = draw(_schemas())
    mishap = _mishaps(draw)
    records = []
    for _ in range(draw(_COUNTS)):
        entries = []
        for name, spec in schema.items():
            kind = str(spec.dtype)
            if isinstance(spec, FixedLen):
                if spec.default is not None and draw(st.integers(0, 3)) == 0:
                    continue
                count = math.prod(spec.shape)
            else:
                count = draw(st.integers(0, 3)) * math.prod(spec.shape[1:])
            if mishap():
                kind = draw(st.sampled_from(_KINDS))
                count = draw(st.integers(0, 5))
            entries.append(wire.entry(name, _wire_feature(_values(draw, kind, count))))
        if draw(st.integers(0, 4)) == 0:
            entries.append(wire.entry("other", wire.int64_feature(draw(st.integers(0, 9)))))
        records.append(wire.example(*entries))
    return schema, records


@st.composite
def fitting_feature_batches(draw: st.DrawFn) -> tuple[FeaturesDict, list[bytes]]:
    """TFDS features and 2-12 records that store them, but for a rare mishap: Sequences
    and unknown dimensions of 0-3 rows (ragged batches), optional features now and then
    missing."""
    declared = draw(_declared_features())
    stored = _stored(declared)
    mishap = _mishaps(draw)
    optional = sorted(_optional_paths(declared))
    # Optional features missing from every record of the batch, or from some.
    absent = draw(st.sets(st.sampled_from(optional))) if optional else set()
    records = []
    for _ in range(draw(_COUNTS)):
        entries = []
        for path, kind, per, rows in stored:
            count = per * (draw(st.integers(0, 3)) if rows is None else rows)
            if path in optional and (path in absent or draw(st.sampled_from((0, 0, 1)))):
                continue
            if mishap():
                if draw(st.booleans()):
                    continue
                kind = draw(st.sampled_from(_KINDS))
                count = draw(st.integers(0, 5))
            values = _values(draw, kind, count, max_bytes=3)
            entries.append(wire.entry(path, _wire_feature(values)))
        records.append(wire.example(*entries))
    return FeaturesDict(declared), records


def _optional_paths(features: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for name, feature in features.items():
        if isinstance(feature, dict):
            yield from _optional_paths(feature, f"{prefix}{name}/")
        elif isinstance(feature, Tensor) and feature.optional:
            yield f"{prefix}{name}"


# ---------------------------------------------------------------------------------------------
# TBL v2 samples (tbl.py)

tbl_sample_specs = st.builds(
    Spec,
    st.one_of(
        st.binary(max_size=300),
        st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=8), st.integers(0, 400)),
    ),
    st.sampled_from(FORMAT_NAMES),
    st.integers(0, 65535),
    st.integers(0, 65535),
    st.none() | st.text(max_size=40),
)
