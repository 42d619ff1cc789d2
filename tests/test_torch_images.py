"""ImageBatchDataset (specs/reader.md §6, "Image batches"): a TBL-RAW dataset's image batches
through real DataLoader worker processes, each position once, with the pixels and flips of
one process reading alone, resumed exactly from a loader's state at every step.

The reference is ``Reader.image_batches`` in this process, which tests/test_raw_batches.py
ties to decoding the source dataset on the fly.
"""

from __future__ import annotations

import pickle
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("torchdata")
pytest.importorskip("fastcrc")
pytest.importorskip("PIL")

import torch
from torch.utils.data import DataLoader
from torchdata.stateful_dataloader import StatefulDataLoader  # type: ignore[import-untyped]

from readplan import DatasetInfo, ReadConfig, Reader, ReadPlan
from readplan.convert import convert
from readplan.errors import ConfigError
from readplan.torch import ImageBatchDataset, TorchImageBatch, merge_loader_states

SOURCE = Path(__file__).parent / "data" / "tfds_raw" / "readplan_raw" / "1.0.0"
SIZE = 8
NORMALIZE = ((0.5, 0.4, 0.3), (0.25, 0.2, 0.3))
# Interleaved, shuffled files: consecutive positions come from different shards.
CONFIG = ReadConfig(
    shuffle_files=True, shuffle_seed=3, interleave_cycle_length=2, interleave_block_length=3
)
STATEFUL = pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")
MANY_WORKERS = pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")
IMAGES: dict[str, Any] = {"normalize": NORMALIZE, "hflip": 0.5, "seed": 9}

Row = tuple[bytes, int, int]  # the image's bytes, its flip, its label


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> ReadPlan:
    target = tmp_path_factory.mktemp("raw") / "raw"
    convert(SOURCE, target, raw=True, image_size=SIZE)
    return ReadPlan(DatasetInfo.load(target), "train", CONFIG)


def rows(batches: list[Any]) -> list[tuple[int, int, Row]]:
    """``(epoch, position, row)`` of every image in ``batches``, in the order served."""
    out = []
    for batch in batches:
        labels = np.asarray(batch.features["label"]).tolist()
        images = np.asarray(batch.images)
        for k, position in enumerate(np.asarray(batch.positions).tolist()):
            row = (images[k].tobytes(), int(batch.flips[k]), labels[k])
            out.append((batch.epoch, position, row))
    return out


def alone(plan: ReadPlan, epochs: int, **images: Any) -> dict[tuple[int, int], Row]:
    """Every image as one process reading alone serves it, by (epoch, position)."""
    served = Reader(plan, epochs=epochs).image_batches(6, **images)
    return {(e, p): row for e, p, row in rows(list(served))}


@MANY_WORKERS
@pytest.mark.parametrize(
    ("workers", "images"),
    [
        (2, IMAGES),
        (3, {"dtype": "float16", "layout": "NHWC", "normalize": NORMALIZE, "hflip": 0.5}),
        (2, {"dtype": "uint8", "hflip": 1.0}),
        (0, IMAGES),
    ],
)
def test_workers_serve_every_position_once_as_one_process_does(
    plan: ReadPlan, workers: int, images: dict[str, Any]
) -> None:
    data = ImageBatchDataset(plan, 6, epochs=2, **images)
    loader = DataLoader(data, batch_size=None, num_workers=workers)
    batches = list(loader)
    assert len(batches) == len(loader)
    assert all(isinstance(b, TorchImageBatch) for b in batches)
    assert all(isinstance(b.images, torch.Tensor) for b in batches)
    assert batches[0].images.dtype == getattr(torch, images.get("dtype", "float32"))
    layout = images.get("layout", "NCHW")
    assert batches[0].images.shape[1:] == ((3, SIZE, SIZE) if layout == "NCHW" else (SIZE, SIZE, 3))
    served = rows(batches)
    # The union over the workers is each epoch's positions, each exactly once.
    counts = Counter((epoch, position) for epoch, position, _ in served)
    assert sorted(counts) == [(e, p) for e in range(2) for p in range(plan.num_examples)]
    assert set(counts.values()) == {1}
    reference = alone(plan, 2, **images)
    assert {(e, p): row for e, p, row in served} == reference
    assert any(row[1] for row in reference.values())


def test_batches_share_the_gathered_memory(plan: ReadPlan) -> None:
    batch = next(iter(Reader(plan).image_batches(4, **IMAGES)))
    tensors = TorchImageBatch.of(batch)
    assert tensors.images.data_ptr() == batch.images.ctypes.data
    assert tensors.positions.data_ptr() == batch.positions.ctypes.data
    assert len(tensors) == 4


@pytest.mark.parametrize("persistent", [False, True])
def test_passes_follow_on_and_set_epoch_moves_them(plan: ReadPlan, persistent: bool) -> None:
    data = ImageBatchDataset(plan, 8, **IMAGES)
    loader = DataLoader(data, batch_size=None, num_workers=2, persistent_workers=persistent)
    reference = alone(plan, 6, **IMAGES)
    for epoch in (0, 1):
        served = rows(list(loader))
        assert sorted((e, p) for e, p, _ in served) == [
            (epoch, p) for p in range(plan.num_examples)
        ]
        assert all(reference[(e, p)] == row for e, p, row in served)
    loader.dataset.set_epoch(5)  # type: ignore[attr-defined]
    fifth = list(loader)
    assert {b.epoch for b in fifth} == {5}
    assert {(e, p): row for e, p, row in rows(fifth)} == {
        key: row for key, row in alone(plan, 6, **IMAGES).items() if key[0] == 5
    }


def _stateful(plan: ReadPlan, workers: int) -> StatefulDataLoader:
    data = ImageBatchDataset(plan, 6, epochs=2, **IMAGES)
    return StatefulDataLoader(data, batch_size=None, num_workers=workers)


@STATEFUL
@pytest.mark.parametrize(("workers", "every"), [(0, 1), (2, 3)])
def test_a_restored_loader_continues_bit_for_bit(plan: ReadPlan, workers: int, every: int) -> None:
    whole = rows(list(_stateful(plan, workers)))
    total = len(list(_stateful(plan, 0)))
    for steps in range(0, total + 1, every):
        loader = _stateful(plan, workers)
        stream = iter(loader)
        head = [next(stream) for _ in range(steps)]
        state = pickle.loads(pickle.dumps(loader.state_dict()))
        del stream, loader
        resumed = _stateful(plan, workers)
        resumed.load_state_dict(state)
        assert rows(head) + rows(list(resumed)) == whole, steps


@STATEFUL
@MANY_WORKERS
@pytest.mark.parametrize("new_workers", [0, 3])
def test_a_merged_state_resumes_with_other_worker_counts(plan: ReadPlan, new_workers: int) -> None:
    loader = _stateful(plan, 2)
    stream = iter(loader)
    head = [next(stream) for _ in range(4)]  # two batches from each worker
    merged = merge_loader_states([loader.state_dict()])
    del stream, loader
    restored = ImageBatchDataset(plan, 6, epochs=2, **IMAGES)
    restored.load_state_dict(merged)
    rest = list(DataLoader(restored, batch_size=None, num_workers=new_workers))
    served = rows(head) + rows(rest)
    assert sorted(Counter((e, p) for e, p, _ in served).values()) == [1] * 2 * plan.num_examples
    assert {(e, p): row for e, p, row in served} == alone(plan, 2, **IMAGES)


def test_transform_and_len(plan: ReadPlan) -> None:
    def shapes(batch: TorchImageBatch) -> tuple[int, ...]:
        return tuple(batch.images.shape)

    data = ImageBatchDataset(plan, 16, drop_remainder=True, transform=shapes, epochs=2)
    assert list(data) == [(16, 3, SIZE, SIZE)] * 4 == [(16, 3, SIZE, SIZE)] * len(data)


def test_refusals(plan: ReadPlan) -> None:
    for kwargs, field in [
        ({"normalize": ((0.5, 0.5, 0.5), (0.2, 0.0, 0.2))}, "normalize"),
        ({"layout": "CHW"}, "layout"),
        ({"hflip": 2.0}, "hflip"),
        ({"rank": 1}, "rank"),
        ({"start": 3}, "start"),
    ]:
        with pytest.raises(ConfigError) as err:
            ImageBatchDataset(plan, 4, **kwargs)
        assert err.value.field == field
    source = ReadPlan(DatasetInfo.load(SOURCE), "train", CONFIG)
    with pytest.raises(ConfigError, match="TBL-RAW"):
        ImageBatchDataset(source, 4)
