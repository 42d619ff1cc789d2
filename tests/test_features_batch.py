"""FeaturesDict.batch_decoder: per record exactly the one-record decoder's result or error.

The one-record decoder is checked against TFDS itself (tests/test_features_tfds.py, which also
runs the TFDS-written golden examples through the batch decoder); here random features and
records that mostly fit them (features missing, of the wrong kind or size, extra names) are
decoded both ways. Records are written with the independent wire writer of
tests/test_example.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from readplan.errors import ExampleError, FeatureError
from readplan.metadata.features import (
    ClassLabel,
    Feature,
    FeaturesDict,
    Image,
    Sequence,
    SkipDecoding,
    Tensor,
    Text,
    UnknownFeature,
)
from tests.test_example import _bytes_feature, _entry, _example, _float_feature, _int64_feature
from tests.test_example_many import assert_same_value

DTYPES = ("int8", "int32", "int64", "uint8", "uint32", "bool", "float16", "float32", "float64")
KINDS = ("int64", "float32", "bytes")


@st.composite
def leaves(draw: st.DrawFn) -> Feature:
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return Text()
    if choice == 1:
        return ClassLabel(num_classes=draw(st.integers(1, 5)))
    if choice == 2:
        return Image()  # decoded with SkipDecoding below, or refused when it is not an image
    dtype = draw(st.sampled_from((*DTYPES, "string")))
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    if shape and 0 not in shape[1:] and draw(st.booleans()):
        shape = (None, *shape[1:])
    return Tensor(shape, dtype, optional=draw(st.booleans()) and None not in shape)


@st.composite
def features_dicts(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from("abcd"), unique=True, min_size=1, max_size=3))
    out: dict[str, Any] = {}
    for name in names:
        kind = draw(st.integers(0, 4 if depth == 0 else 2))
        feature: Any = draw(leaves())
        if kind == 3:
            feature = draw(features_dicts(depth + 1))
        elif kind == 4:
            inner = draw(st.one_of(leaves(), features_dicts(depth + 1)))
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


def _list(draw: st.DrawFn, kind: str, count: int) -> bytes:
    if kind == "bytes":
        return _bytes_feature(
            *draw(st.lists(st.binary(max_size=3), min_size=count, max_size=count))
        )
    if kind == "float32":
        bits = draw(st.lists(st.integers(0, 2**32 - 1), min_size=count, max_size=count))
        return _float_feature(*bits)
    ints = draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=count, max_size=count))
    return _int64_feature(*ints)


@st.composite
def batches(draw: st.DrawFn) -> tuple[FeaturesDict, list[bytes]]:
    declared = draw(features_dicts())
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
                kind = draw(st.sampled_from(KINDS))
            if mishap == 2:
                count = draw(st.integers(0, 5))
            entries.append(_entry(path, _list(draw, kind, count)))
        if draw(st.integers(0, 5)) == 0:
            entries.append(_entry("extra", _int64_feature(1)))
        records.append(_example(*entries))
    return features, records


def _skips(features: Any) -> dict[str, Any]:
    """SkipDecoding for every image, so that records need no image extra."""
    out: dict[str, Any] = {}
    for name, feature in features.items():
        inner = feature.feature if isinstance(feature, Sequence) else feature
        if isinstance(inner, Image):
            out[name] = SkipDecoding()
        elif isinstance(inner, FeaturesDict) and _skips(inner):
            out[name] = _skips(inner)
    return out


def assert_same_nested(got: Any, want: Any, where: tuple[Any, ...]) -> None:
    if isinstance(want, dict):
        assert type(got) is dict, where
        assert list(got) == list(want), where
        for key in want:
            assert_same_nested(got[key], want[key], (*where, key))
        return
    assert_same_value(got, want, where)


def _refusal(build: Any, options: dict[str, Any]) -> str | None:
    try:
        build(**options)
    except FeatureError as err:
        return str(err)
    return None


def assert_batch_like_one_at_a_time(
    features: FeaturesDict, records: list[bytes], **options: Any
) -> None:
    refused = _refusal(features.decoder, options)
    if refused is not None:  # at build time: a shape or type readplan does not decode
        with pytest.raises(FeatureError) as caught:
            features.batch_decoder(**options)
        assert str(caught.value) == refused
        return
    one = features.decoder(**options)
    try:
        want: list[Any] | Exception = [one(raw) for raw in records]
    except (ExampleError, FeatureError) as err:
        want = err
    many = features.batch_decoder(**options)
    if isinstance(want, Exception):
        with pytest.raises(type(want)) as caught:
            many(records)
        assert str(caught.value) == str(want)
        return
    got = many(records)
    assert len(got) == len(want)
    for index, (mine, theirs) in enumerate(zip(got, want)):
        assert_same_nested(mine, theirs, (index,))


@given(batches())
def test_batch_decoder_gives_the_one_record_decoders_result(
    drawn: tuple[FeaturesDict, list[bytes]],
) -> None:
    features, records = drawn
    assert_batch_like_one_at_a_time(features, records, decoders=_skips(features))


@given(batches())
def test_batch_decoder_with_images_decoded_or_unknown_features(
    drawn: tuple[FeaturesDict, list[bytes]],
) -> None:
    features, records = drawn
    raw = FeaturesDict({**features.features, "u": UnknownFeature("x.Y")})
    # Images are decoded (the stored bytes are not images: the first one fails, both ways).
    pytest.importorskip("PIL")
    assert_batch_like_one_at_a_time(raw, records, unknown="raw")


def test_regular_batches_are_decoded_per_leaf() -> None:
    features = FeaturesDict(
        {"label": ClassLabel(num_classes=3), "box": Sequence(Tensor((4,), "float32"))}
    )
    records = [
        _example(_entry("box", _float_feature(*range(4 * k))), _entry("label", _int64_feature(k)))
        for k in range(3)
    ]
    got = features.batch_decoder()(records)
    assert [row["box"].shape for row in got] == [(0, 4), (1, 4), (2, 4)]
    assert [type(row["label"]) for row in got] == [np.int64] * 3
    assert_batch_like_one_at_a_time(features, records)
