"""A collated batch's JPEGs of one size are decoded straight into the batch's array
(specs/features.md §3.10): the pixels TensorFlow decodes, the same batch, records and errors
as decoding each record alone, and every other batch decoded record by record."""

from __future__ import annotations

import base64
import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("PIL")
simplejpeg = pytest.importorskip("simplejpeg")

from readplan import Reader, ReadPlan, example  # noqa: E402
from readplan._internal.buffer_pool import BufferPool  # noqa: E402
from readplan.errors import FeatureError  # noqa: E402
from readplan.metadata._jpeg_batch import decode_jpegs_into  # noqa: E402
from readplan.metadata.features import FeaturesDict, Image, Tensor  # noqa: E402
from readplan.reading.decoding import tfds_decoder  # noqa: E402
from readplan.records.example._leaves import Computed, Table  # noqa: E402
from tests.array_memory import address_of  # noqa: E402
from tests.decoding_cases import features_plan  # noqa: E402

DATA = Path(__file__).parent / "data"
BIG = 1 << 30


def _into(datas: list[bytes], channels: int | None, shape: Any, cap: int) -> np.ndarray | None:
    return decode_jpegs_into(datas, channels, shape, cap, BufferPool())


@functools.cache
def _tf_cases() -> dict[str, dict[str, Any]]:
    text = (DATA / "tfds_images" / "decode_image_cases.json").read_text(encoding="utf-8")
    return {case["name"]: case for case in json.loads(text)["cases"]}


def _tf_pixels(result: dict[str, Any]) -> np.ndarray:
    raw = base64.b64decode(result["values"])
    return np.frombuffer(raw, dtype=np.uint8).reshape(result["shape"])


@pytest.mark.parametrize("name", ["jpeg rgb", "jpeg gray"])
@pytest.mark.parametrize("channels", [None, 1, 3])
def test_jpegs_of_one_size_decode_into_one_array_as_tensorflow_decodes_each(
    name: str, channels: int | None
) -> None:
    case = _tf_cases()[name]
    data = base64.b64decode(case["bytes"])
    want = _tf_pixels(case["decoded"][f"{channels or 0}/uint8"])
    table = _into([data] * 3, channels, (None, None, channels), BIG)
    assert table is not None
    assert table.shape == (3, *want.shape)
    assert table.dtype == np.uint8
    for slot in table:
        assert np.array_equal(slot, want)


@pytest.mark.parametrize("name", ["jpeg cmyk", "jpeg cmyk 4:4:4"])
def test_cmyk_jpegs_are_left_to_the_one_image_decoder(name: str) -> None:
    data = base64.b64decode(_tf_cases()[name]["bytes"])
    assert _into([data, data], 3, (None, None, 3), BIG) is None


def _jpeg(seed: int, height: int = 24, width: int = 32, gray: bool = False) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 1 if gray else 3))
    encoded: bytes = simplejpeg.encode_jpeg(
        np.ascontiguousarray(pixels.astype(np.uint8)),
        quality=85,
        colorspace="GRAY" if gray else "RGB",
    )
    return encoded


RGB = (None, None, 3)


def test_what_the_batch_path_leaves_to_each_image() -> None:
    one, other, gray = _jpeg(1), _jpeg(2, height=16), _jpeg(3, gray=True)
    png = base64.b64decode(_tf_cases()["png ct2 d8"]["bytes"])
    assert _into([one, _jpeg(4)], 3, RGB, BIG) is not None
    assert _into([], 3, RGB, BIG) is None
    assert _into([one, other], 3, RGB, BIG) is None  # two sizes
    assert _into([one, gray], None, (None, None, None), BIG) is None  # two spaces
    assert _into([one, png], 3, RGB, BIG) is None  # not every image a JPEG
    assert _into([one, one[:40]], 3, RGB, BIG) is None  # a truncated JPEG
    assert _into([one], 3, (20, None, 3), BIG) is None  # not the declared height
    assert _into([one], 1, RGB, BIG) is None  # not the declared channels
    assert _into([one], 3, RGB, 24 * 32 * 3 - 1) is None  # above the byte cap
    assert _into([one], 3, RGB, 24 * 32 * 3) is not None
    # The batch's array is held to the cap too, whatever each image's size.
    assert _into([one, one, one], 3, RGB, 3 * 24 * 32 * 3 - 1) is None
    assert _into([one, one, one], 3, RGB, 3 * 24 * 32 * 3) is not None


FEATURES = FeaturesDict({"image": Image(encoding_format="jpeg"), "label": Tensor((), "int64")})


def _records(images: list[bytes]) -> list[bytes]:
    return [
        example.encode({"image": [image], "label": np.array([k], dtype=np.int64)})
        for k, image in enumerate(images)
    ]


def test_a_tfds_batch_of_jpegs_is_the_one_record_decodes_stacked() -> None:
    records = _records([_jpeg(seed) for seed in range(5)])
    decoder = tfds_decoder(FEATURES, None)
    assert decoder.leaves is not None
    assert isinstance(decoder.leaves(records).tree["image"], Table)
    lazy, features, error = decoder.collate_all(records, "list", None)
    assert error is None
    assert features is not None
    alone = [FEATURES.decoder()(raw) for raw in records]
    assert np.array_equal(features["image"], np.stack([r["image"] for r in alone]))
    assert features["label"].tolist() == [0, 1, 2, 3, 4]
    features["image"][:] = 0  # the batch's array is the user's: the records stay apart
    for mine, theirs in zip(lazy, alone):
        assert np.array_equal(mine["image"], theirs["image"])
        assert mine["image"].flags.writeable
        assert int(mine["label"]) == int(theirs["label"])


def test_a_batch_of_jpegs_of_two_sizes_is_decoded_record_by_record() -> None:
    records = _records([_jpeg(1), _jpeg(2, height=16), _jpeg(3)])
    decoder = tfds_decoder(FEATURES, None)
    assert decoder.leaves is not None
    assert isinstance(decoder.leaves(records).tree["image"], Computed)
    _, features, error = decoder.collate_all(records, "list", None)
    assert error is None
    assert features is not None
    alone = [FEATURES.decoder()(raw)["image"] for raw in records]
    assert [image.shape for image in features["image"]] == [image.shape for image in alone]
    assert all(np.array_equal(a, b) for a, b in zip(features["image"], alone))


def test_a_damaged_jpeg_in_a_batch_is_the_one_record_error() -> None:
    images = [_jpeg(1), _jpeg(2), _jpeg(3)]
    images[1] = images[1][: len(images[1]) // 2]
    records = _records(images)
    with pytest.raises(FeatureError) as alone:
        FEATURES.decoder()(records[1])
    decoded, features, error = tfds_decoder(FEATURES, None).collate_all(records, "list", None)
    assert features is None
    assert isinstance(error, FeatureError)
    assert str(error) == str(alone.value)
    assert len(decoded) == 1


def _jpeg_plan(directory: Path, count: int) -> ReadPlan:
    rng = np.random.default_rng(5)
    rows = (
        {"image": rng.integers(0, 256, (16, 24, 3), dtype=np.uint8), "label": k}
        for k in range(count)
    )
    return features_plan(directory, FEATURES, rows)


@pytest.mark.parametrize("workers", [1, 2])
def test_batches_kept_by_the_user_keep_their_own_pixels(tmp_path: Path, workers: int) -> None:
    plan = _jpeg_plan(tmp_path, 40)
    kept = list(Reader(plan, decode="tfds", decode_workers=workers).batches(4))
    raw = list(Reader(plan).batches(4))
    assert len({address_of(batch.features["image"]) for batch in kept}) == len(kept) == 10
    one = FEATURES.decoder()
    for batch, stored in zip(kept, raw):
        assert isinstance(batch.features["image"], np.ndarray)
        want = np.stack([one(record)["image"] for record in stored.records])
        assert np.array_equal(batch.features["image"], want)


@pytest.mark.parametrize("workers", [1, 2])
def test_batches_let_go_of_give_their_memory_to_later_batches(tmp_path: Path, workers: int) -> None:
    plan = _jpeg_plan(tmp_path, 40)
    one = FEATURES.decoder()
    raw = iter(list(Reader(plan).batches(4)))
    addresses = []
    for batch in Reader(plan, decode="tfds", decode_workers=workers).batches(4):
        image = batch.features["image"]
        addresses.append(address_of(image))
        assert np.array_equal(image, np.stack([one(r)["image"] for r in next(raw).records]))
    # At most the batches in flight at once have memory of their own.
    assert len(addresses) == 10
    # (one batch ahead per worker, the one delivered and the one the loop still holds).
    assert len(set(addresses)) <= workers + 2
