"""Image batches served from TBL-RAW memory maps (specs/tbl.md §11): the plan's order, exact
resume, and bit-identity with decoding the source dataset on the fly.

The on-the-fly side reads the TFRecord source with decode="tfds", resizes with the shared
resize_image and normalizes with the numpy twin of the kernel (gather_images_pure).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from readplan import DatasetInfo, ReadConfig, Reader, ReadPlan
from readplan.errors import ConfigError
from readplan.metadata.raw_images import resize_image
from readplan.reading import raw_batches
from readplan.reading.raw_batches import flip_draws
from readplan.records.tbl._gather import KINDS, gather_images_pure, normalization
from tests.raw_datasets import SOURCE, converted_raw

pytest.importorskip("fastcrc")
pytest.importorskip("PIL")

SIZE = 10
NORMALIZE = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
CONFIG = ReadConfig(shuffle_files=True, shuffle_seed=11)


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return converted_raw(tmp_path_factory, SIZE)


def on_the_fly(
    spec: str, batch_size: int, dtype: str, layout: str, hflip: float, seed: int, **kw: Any
) -> list[tuple[int, np.ndarray, np.ndarray, list[int]]]:
    """Per batch of the source: epoch, positions, the images as served, and the labels."""
    plan = ReadPlan(DatasetInfo.load(SOURCE), spec, CONFIG)
    scale, shift = normalization(*NORMALIZE) if dtype != "uint8" else ((1.0,) * 3, (0.0,) * 3)
    out = []
    for batch in Reader(plan, decode="tfds", **kw).batches(batch_size):
        records = list(batch.records)
        images = np.stack([resize_image(r["image"], SIZE) for r in records])
        flips = flip_draws(seed, batch.epoch, batch.positions, hflip)
        shape = (len(records), SIZE, SIZE, 3)
        served = np.empty(shape if layout == "NHWC" else (len(records), 3, SIZE, SIZE), dtype)
        rows = np.arange(len(records), dtype=np.int64)
        kind = KINDS.index(dtype)  # type: ignore[arg-type]
        gather_images_pure(images, rows, flips, scale, shift, served, kind, layout == "NHWC")
        labels = [int(r["label"]) for r in records]
        out.append((batch.epoch, np.asarray(batch.positions), served, labels))
    return out


@pytest.mark.parametrize(
    ("dtype", "layout", "hflip"),
    [("float32", "NCHW", 0.5), ("float16", "NHWC", 0.5), ("uint8", "NCHW", 1.0)],
)
def test_batches_equal_decoding_the_source_on_the_fly(
    converted: Path, dtype: str, layout: str, hflip: float
) -> None:
    plan = ReadPlan(DatasetInfo.load(converted), "train+test[:5]", CONFIG)
    normalize = None if dtype == "uint8" else NORMALIZE
    served = list(
        Reader(plan, epochs=2).image_batches(
            16,
            normalize=normalize,
            layout=layout,
            dtype=dtype,
            hflip=hflip,
            seed=5,  # type: ignore[arg-type]
        )
    )
    expected = on_the_fly("train+test[:5]", 16, dtype, layout, hflip, 5, epochs=2)
    assert len(served) == len(expected) == 6
    for batch, (epoch, positions, images, labels) in zip(served, expected, strict=True):
        assert batch.epoch == epoch
        assert np.array_equal(batch.positions, positions)
        assert batch.images.dtype == np.dtype(dtype)
        assert np.array_equal(batch.images, images)
        assert batch.features["label"].tolist() == labels
    assert any(b.flips.any() for b in served)


def test_ranks_serve_their_share(converted: Path) -> None:
    plan = ReadPlan(DatasetInfo.load(converted), "train", CONFIG)
    for rank in range(3):
        reader = Reader(plan, rank=rank, world_size=3)
        served = list(reader.image_batches(4, normalize=NORMALIZE, hflip=0.5, seed=2))
        expected = on_the_fly("train", 4, "float32", "NCHW", 0.5, 2, rank=rank, world_size=3)
        assert [b.positions.tolist() for b in served] == [e[1].tolist() for e in expected]
        for batch, (_, _, images, labels) in zip(served, expected, strict=True):
            assert np.array_equal(batch.images, images)
            assert batch.features["label"].tolist() == labels


def test_a_restored_reader_continues_with_the_same_batches(converted: Path) -> None:
    plan = ReadPlan(DatasetInfo.load(converted), "train", CONFIG)
    kwargs: dict[str, Any] = {"normalize": NORMALIZE, "hflip": 0.5, "seed": 9}
    whole = list(Reader(plan, epochs=3).image_batches(6, **kwargs))
    for stop in (1, 7, 13):
        reader = Reader(plan, epochs=3)
        head = []
        for batch in reader.image_batches(6, **kwargs):
            head.append(batch)
            if len(head) == stop:
                break
        state = reader.state_dict()
        rest = list(Reader(plan, epochs=3, start=state).image_batches(6, **kwargs))
        # A restored reader's batches start where the state is (within the epoch as cut).
        got = head + rest
        assert [(b.epoch, b.positions.tolist()) for b in got] == [
            (b.epoch, b.positions.tolist()) for b in whole
        ]
        for a, b in zip(got, whole, strict=True):
            assert np.array_equal(a.images, b.images)
            assert np.array_equal(a.flips, b.flips)


def test_drop_remainder_and_len(converted: Path) -> None:
    plan = ReadPlan(DatasetInfo.load(converted), "train", CONFIG)
    sizes = [len(b.positions) for b in Reader(plan, epochs=2).image_batches(16)]
    assert sizes == [16, 16, 8, 16, 16, 8]
    kept = Reader(plan, epochs=2).image_batches(16, drop_remainder=True)
    assert [len(b.positions) for b in kept] == [16, 16, 16, 16]


def test_flip_draws() -> None:
    positions = np.arange(10_000, dtype=np.int64)
    draws = flip_draws(4, 2, positions, 0.5)
    assert np.array_equal(draws, flip_draws(4, 2, positions, 0.5))
    assert not np.array_equal(draws, flip_draws(4, 3, positions, 0.5))
    assert not np.array_equal(draws, flip_draws(5, 2, positions, 0.5))
    assert 4_500 < int(draws.sum()) < 5_500
    assert not flip_draws(4, 2, positions, 0.0).any()
    assert flip_draws(4, 2, positions, 1.0).all()
    assert np.array_equal(flip_draws(4, 2, positions[7:9], 0.5), draws[7:9])


def test_refusals(converted: Path) -> None:
    plan = ReadPlan(DatasetInfo.load(converted), "train", CONFIG)
    reader = Reader(plan)
    for kwargs, field in [
        ({"layout": "CHW"}, "layout"),
        ({"dtype": "float64"}, "dtype"),
        ({"dtype": "uint8", "normalize": NORMALIZE}, "normalize"),
        ({"hflip": 1.5}, "hflip"),
        ({"seed": -1}, "seed"),
        ({"normalize": ((0.5,), (0.5,))}, "normalize"),
        ({"normalize": ((0.5, 0.5, 0.5), (0.2, 0.0, 0.2))}, "normalize"),
        ({"normalize": ((0.5, float("nan"), 0.5), (0.2, 0.2, 0.2))}, "normalize"),
        ({"normalize": "mean/std"}, "normalize"),
    ]:
        with pytest.raises(ConfigError) as err:
            next(iter(reader.image_batches(4, **kwargs)))
        assert err.value.field == field
    with pytest.raises(ConfigError, match="batch_size"):
        reader.image_batches(0)
    source = ReadPlan(DatasetInfo.load(SOURCE), "train", CONFIG)
    with pytest.raises(ConfigError, match="TBL-RAW"):
        Reader(source).image_batches(4)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"normalize": NORMALIZE, "layout": "NHWC", "dtype": "float16", "hflip": 0.5, "seed": 3},
        {"hflip": 0.5},
        {"dtype": "uint8", "layout": "NCHW"},
    ],
)
def test_batches_with_image_options_are_image_batches(
    converted: Path, kwargs: dict[str, Any]
) -> None:
    plan = ReadPlan(DatasetInfo.load(converted), "train+test", CONFIG)
    for drop in (False, True):
        reader, other = Reader(plan, epochs=2), Reader(plan, epochs=2)
        got = list(reader.batches(7, drop_remainder=drop, **kwargs))
        expected = list(other.image_batches(7, drop_remainder=drop, **kwargs))
        assert len(got) == len(expected) == (14 if drop else 16)
        for a, b in zip(got, expected, strict=True):
            assert isinstance(a, raw_batches.ImageBatch)
            assert (a.epoch, a.positions.tolist()) == (b.epoch, b.positions.tolist())
            assert a.images.dtype == b.images.dtype
            assert np.array_equal(a.images, b.images)
            assert np.array_equal(a.flips, b.flips)
            assert a.features.keys() == b.features.keys()
            assert np.array_equal(a.features["label"], b.features["label"])
        assert reader.state_dict() == other.state_dict()
    reader = Reader(plan, epochs=2)
    head = next(iter(reader.batches(7, **kwargs)))
    rest = list(Reader(plan, epochs=2, start=reader.state_dict()).batches(7, **kwargs))
    whole = list(Reader(plan, epochs=2).image_batches(7, **kwargs))
    assert [b.positions.tolist() for b in [head, *rest]] == [b.positions.tolist() for b in whole]


def test_batches_with_image_options_refuse_batch_options(converted: Path) -> None:
    plan = ReadPlan(DatasetInfo.load(converted), "train", CONFIG)
    reader = Reader(plan, decode="tfds")
    for kwargs, field in [
        ({"packed": True}, "packed"),
        ({"ragged": "pad"}, "ragged"),
        ({"padding_values": {"caption": b""}}, "padding_values"),
    ]:
        with pytest.raises(ConfigError, match="applies to Batch objects") as err:
            reader.batches(4, hflip=0.5, **kwargs)  # type: ignore[call-overload]
        assert err.value.field == field
    with pytest.raises(ConfigError, match="need a batch_size") as err:
        reader.batches(layout="NHWC")  # type: ignore[call-overload]
    assert err.value.field == "batch_size"
    with pytest.raises(ConfigError) as err:
        reader.batches(4, layout="CHW")  # type: ignore[arg-type]
    assert err.value.field == "layout"
    source = ReadPlan(DatasetInfo.load(SOURCE), "train", CONFIG)
    with pytest.raises(ConfigError, match="serve TBL-RAW datasets") as err:
        Reader(source, decode="tfds").batches(4, normalize=NORMALIZE)
    assert err.value.field == "data_dir"
    # Without image options a raw dataset's batches are Batch objects, as any dataset's.
    plain = next(iter(reader.batches(4)))
    assert plain.features["image"].shape == (4, SIZE, SIZE, 3)


def test_batches_across_plan_chunks(converted: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = ReadPlan(DatasetInfo.load(converted), "train", CONFIG)
    whole = list(Reader(plan, epochs=2, rank=1, world_size=2).image_batches(6, hflip=0.5))
    monkeypatch.setattr(raw_batches, "_CHUNK", 5)  # the plan walked 5 positions at a time
    cut = list(Reader(plan, epochs=2, rank=1, world_size=2).image_batches(6, hflip=0.5))
    assert [(b.epoch, b.positions.tolist()) for b in cut] == [
        (b.epoch, b.positions.tolist()) for b in whole
    ]
    assert [len(b.positions) for b in cut] == [6, 6, 6, 2, 6, 6, 6, 2]
    for a, b in zip(cut, whole, strict=True):
        assert np.array_equal(a.images, b.images)
