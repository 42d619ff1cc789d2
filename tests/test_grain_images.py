"""readplan.grain.ImageBatchIterDataset (specs/data_source.md §5): a TBL-RAW dataset's image
batches as a Grain IterDataset, the batches of one Reader, Grain's own checkpoint test.

The reference is ``Reader.image_batches``, which tests/test_raw_batches.py ties to decoding
the source dataset on the fly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

grain = pytest.importorskip("grain")
pytest.importorskip("fastcrc")
pytest.importorskip("PIL")

from readplan import DatasetInfo, ExampleShuffle, ReadConfig, Reader, ReadPlan  # noqa: E402
from readplan.convert import convert  # noqa: E402
from readplan.errors import ConfigError  # noqa: E402
from readplan.grain import ImageBatchIterDataset  # noqa: E402

SOURCE = Path(__file__).parent / "data" / "tfds_raw" / "readplan_raw" / "1.0.0"
# An example shuffle: the rows of a batch come from all over the shards.
CONFIG = ReadConfig(shuffle_files=True, shuffle_seed=5, example_shuffle=ExampleShuffle(64, 3))
OPTIONS: dict[str, Any] = {"normalize": ((0.5, 0.4, 0.3), (0.2, 0.3, 0.25)), "hflip": 0.5}


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> ReadPlan:
    target = tmp_path_factory.mktemp("raw") / "raw"
    convert(SOURCE, target, raw=True, image_size=7)
    return ReadPlan(DatasetInfo.load(target), "train+test[:3]", CONFIG)


def _same(got: list[dict[str, Any]], expected: list[Any]) -> None:
    assert len(got) == len(expected)
    for element, batch in zip(got, expected, strict=True):
        assert element["epoch"] == batch.epoch
        for name in ("images", "positions", "file_index", "record_index", "flips"):
            assert np.array_equal(element[name], getattr(batch, name)), name
        assert element["features"]["label"].tolist() == batch.features["label"].tolist()


def test_grains_checkpoint_test_passes(plan: ReadPlan) -> None:
    dataset = ImageBatchIterDataset(plan, 5, epochs=2, seed=4, **OPTIONS)
    grain.experimental.assert_equal_output_after_checkpoint(dataset)
    # Through a Grain transformation too: the state is the reader's wherever it stands.
    grain.experimental.assert_equal_output_after_checkpoint(
        ImageBatchIterDataset(plan, 4, epochs=1, dtype="uint8").map(lambda b: b["images"])
    )


def test_the_batches_are_one_readers(plan: ReadPlan) -> None:
    dataset = ImageBatchIterDataset(plan, 6, epochs=2, layout="NHWC", seed=8, **OPTIONS)
    expected = list(Reader(plan, epochs=2).image_batches(6, layout="NHWC", seed=8, **OPTIONS))
    got = list(dataset)
    _same(got, expected)
    assert got[0]["images"].shape == (6, 7, 7, 3)
    assert any(e["flips"].any() for e in got)


def test_each_iteration_reads_the_next_pass(plan: ReadPlan) -> None:
    dataset = ImageBatchIterDataset(plan, 8, epochs=1, seed=1, **OPTIONS)
    whole = list(Reader(plan, epochs=4).image_batches(8, seed=1, **OPTIONS))
    per_epoch = [[b for b in whole if b.epoch == e] for e in range(4)]
    _same(list(dataset), per_epoch[0])
    _same(list(dataset), per_epoch[1])
    dataset.set_epoch(3)
    _same(list(dataset), per_epoch[3])
    stream = iter(ImageBatchIterDataset(plan, 8, epochs=1, seed=1, **OPTIONS))
    head = [next(stream) for _ in range(2)]
    state = stream.get_state()
    restored = ImageBatchIterDataset(plan, 8, epochs=1, seed=1, **OPTIONS)
    resumed = iter(restored)
    resumed.set_state(state)
    _same(head + list(resumed), per_epoch[0])
    _same(list(restored), per_epoch[1])  # the pass after the state's


def test_refusals(plan: ReadPlan) -> None:
    with pytest.raises(ConfigError) as err:
        ImageBatchIterDataset(plan, 4, hflip=-0.1)
    assert err.value.field == "hflip"
    with pytest.raises(ConfigError) as err:
        ImageBatchIterDataset(plan, 4, normalize=((0.5,) * 3, (0.0,) * 3))
    assert err.value.field == "normalize"
    source = ReadPlan(DatasetInfo.load(SOURCE), "train", CONFIG)
    with pytest.raises(ConfigError, match="TBL-RAW"):
        ImageBatchIterDataset(source, 4)
