"""Grain over a TBL-RAW dataset (specs/tbl.md §12, specs/data_source.md "Grain"): a real
DataLoader with a worker process and a MapDataset read the decoded records of
``readplan.data_source`` in the plan's order, equal to the source decoded and resized."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

grain = pytest.importorskip("grain")
pytest.importorskip("fastcrc")
pytest.importorskip("PIL")

from absl import flags  # noqa: E402  (installed with grain)

from readplan import DatasetInfo, ReadConfig, Reader, ReadPlan, data_source  # noqa: E402
from readplan.grain import OrderSampler, PlanIterDataset  # noqa: E402
from readplan.metadata.raw_images import resize_image  # noqa: E402
from tests.raw_datasets import SOURCE, converted_raw  # noqa: E402

# Grain's worker processes read absl flags, which only an absl app parses.
flags.FLAGS.mark_as_parsed()

SIZE = 8
SPEC = "train[5:]+test"
CONFIG = ReadConfig(shuffle_files=True, shuffle_seed=3)


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return converted_raw(tmp_path_factory, SIZE)


def expected(epochs: int) -> list[tuple[int, bytes]]:
    """(id, resized image bytes) of the source's records in the plan's order."""
    plan = ReadPlan(DatasetInfo.load(SOURCE), SPEC, CONFIG)
    return [
        (int(item.record["id"]), resize_image(item.record["image"], SIZE).tobytes())
        for item in Reader(plan, decode="tfds", epochs=epochs)
    ]


def seen(records: Any) -> list[tuple[int, bytes]]:
    return [(int(record["id"]), np.asarray(record["image"]).tobytes()) for record in records]


def test_a_dataloader_with_a_worker_reads_the_plan_order_and_resumes(converted: Path) -> None:
    plan = ReadPlan(DatasetInfo.load(converted), SPEC, CONFIG)
    source = data_source(converted, SPEC, decode="tfds")

    def loader() -> Any:
        return grain.DataLoader(
            data_source=source,
            sampler=OrderSampler(plan, epochs=2),
            worker_count=1,
            shard_options=grain.sharding.NoSharding(),
        )

    stream = iter(loader())
    before = seen(next(stream) for _ in range(23))
    state = stream.get_state()
    assert before + seen(stream) == expected(2)
    resumed = iter(loader())
    resumed.set_state(state)
    assert before + seen(resumed) == expected(2)


def test_a_map_dataset_batches_the_decoded_records(converted: Path) -> None:
    source = data_source(converted, SPEC, decode="tfds")
    dataset = grain.MapDataset.source(source)
    assert len(dataset) == len(source)
    originals = data_source(SOURCE, SPEC, decode="tfds")
    for key in (0, 9, len(source) - 1):
        assert np.array_equal(dataset[key]["image"], resize_image(originals[key]["image"], SIZE))
    batches = list(dataset.batch(4))
    images = np.concatenate([batch["image"] for batch in batches])
    assert images.shape == (len(source), SIZE, SIZE, 3)
    assert np.array_equal(
        images, np.stack([resize_image(originals[k]["image"], SIZE) for k in range(len(source))])
    )
    assert np.concatenate([batch["label"] for batch in batches]).tolist() == [
        originals[k]["label"] for k in range(len(source))
    ]


def test_a_plan_iter_dataset_reads_the_decoded_records(converted: Path) -> None:
    plan = ReadPlan(DatasetInfo.load(converted), SPEC, CONFIG)
    dataset = PlanIterDataset(plan, epochs=1, decode="tfds")
    assert seen(iter(dataset)) == expected(1)
