"""Write the ``readplan_raw`` dataset: a TFDS image dataset for ``readplan convert --raw``.

Run with a throwaway environment holding tensorflow-cpu 2.21.0, tensorflow-datasets 4.9.10
and Pillow (never a readplan dependency), from the repository root:

    python tests/data/tfds_raw/generate_raw.py

TFDS prepares the dataset (``GeneratorBasedBuilder``, three shards per split) into
``readplan_raw/1.0.0/``: per example an ``image`` (``tfds.features.Image()``, PNG-encoded
by TFDS, random RGB of 3..40 x 3..40 pixels), a ``label`` (``ClassLabel(num_classes=5)``),
an ``id`` (the generation index) and a ``caption`` (``Text``).  Only the dataset is
recorded; readplan's ``decode="tfds"`` is checked against TFDS elsewhere.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

HERE = Path(__file__).resolve().parent
NAME = "readplan_raw"
SPLITS = {"train": 40, "test": 12}


class Builder(tfds.core.GeneratorBasedBuilder):
    name = NAME
    VERSION = tfds.core.Version("1.0.0")

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(
            builder=self,
            features=tfds.features.FeaturesDict(
                {
                    "image": tfds.features.Image(),
                    "label": tfds.features.ClassLabel(num_classes=5),
                    "id": np.int64,
                    "caption": tfds.features.Text(),
                }
            ),
        )

    def _split_generators(self, dl_manager: Any) -> dict[str, Any]:
        return {split: self._generate_examples(split, n) for split, n in SPLITS.items()}

    def _generate_examples(self, split: str, n: int) -> Any:
        for index in range(n):
            rng = np.random.default_rng([sum(map(ord, split)), index])
            h, w = int(rng.integers(3, 41)), int(rng.integers(3, 41))
            yield (
                index,
                {
                    "image": rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8),
                    "label": int(rng.integers(0, 5)),
                    "id": index,
                    "caption": f"{split} image {index}",
                },
            )


def main() -> None:
    tf.config.set_visible_devices([], "GPU")
    root = HERE / "build"
    shutil.rmtree(root, ignore_errors=True)
    builder = Builder(data_dir=str(root))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(num_shards=3))
    target = HERE / NAME / "1.0.0"
    shutil.rmtree(HERE / NAME, ignore_errors=True)
    shutil.copytree(Path(builder.data_dir), target)
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
