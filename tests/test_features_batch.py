"""FeaturesDict.batch_decoder: per record exactly the one-record decoder's result or error.

The one-record decoder is checked against TFDS itself (tests/test_features_tfds.py, which also
runs the TFDS-written golden examples through the batch decoder); here random features and
records that mostly fit them (features missing, of the wrong kind or size, extra names) are
decoded both ways. Records are written with the independent wire writer of
tests/example_wire.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given

from readplan.errors import ExampleError, FeatureError
from readplan.metadata.features import ClassLabel, FeaturesDict, Sequence, Tensor, UnknownFeature
from tests import example_wire as wire
from tests.assertions import assert_same_nested
from tests.strategies import feature_batches, image_skips


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


@given(feature_batches())
def test_batch_decoder_gives_the_one_record_decoders_result(
    drawn: tuple[FeaturesDict, list[bytes]],
) -> None:
    features, records = drawn
    assert_batch_like_one_at_a_time(features, records, decoders=image_skips(features))


@given(feature_batches())
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
        wire.example(
            wire.entry("box", wire.float_feature(*range(4 * k))),
            wire.entry("label", wire.int64_feature(k)),
        )
        for k in range(3)
    ]
    got = features.batch_decoder()(records)
    assert [row["box"].shape for row in got] == [(0, 4), (1, 4), (2, 4)]
    assert [type(row["label"]) for row in got] == [np.int64] * 3
    assert_batch_like_one_at_a_time(features, records)
