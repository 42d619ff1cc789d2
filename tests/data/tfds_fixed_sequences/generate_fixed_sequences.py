"""Write ``readplan_seqfix``: Sequences of fixed-length Sequences, which TFDS writes but
cannot read back, and ``fixed_sequences.json``: what was written and what TFDS raises.

Run with a throwaway environment holding tensorflow-cpu 2.21.0 and tensorflow-datasets
4.9.10 (never a readplan dependency), from the repository root:

    python tests/data/tfds_fixed_sequences/generate_fixed_sequences.py

TFDS 4.9.10 stores every leaf below two Sequences as ragged entries
(``<key>/ragged_flat_values``, ``<key>/ragged_row_lengths_0``), but parses a leaf with at
most one unknown dimension as a plain entry, so ``as_dataset`` fails on these features; the
JSON records the examples as given to the builder (the values readplan decodes them to),
the entries TFDS wrote, and TFDS's error per feature.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

HERE = Path(__file__).resolve().parent
NAME = "readplan_seqfix"


def example(index: int) -> dict[str, Any]:
    return {
        "id": index,
        "rows3": [[index, index + 1, index + 2]] * (index % 3),
        "two_rows": [[1] * index, [2] * (index + 1)],
        "square": [[index, -index], [index + 1, 7]],
        "points": [[[0.5 * index, 1.0], [2.0, -0.25]]] * (index % 2 + 1),
    }


class Builder(tfds.core.GeneratorBasedBuilder):
    name = NAME
    VERSION = tfds.core.Version("1.0.0")

    def _info(self) -> tfds.core.DatasetInfo:
        sequence = tfds.features.Sequence
        point = tfds.features.Tensor(shape=(2,), dtype=np.float32)
        return tfds.core.DatasetInfo(
            builder=self,
            features=tfds.features.FeaturesDict(
                {
                    "id": np.int64,
                    "rows3": sequence(sequence(np.int64, length=3)),
                    "two_rows": sequence(sequence(np.int64), length=2),
                    "square": sequence(sequence(np.int64, length=2), length=2),
                    "points": sequence(sequence(point, length=2)),
                }
            ),
        )

    def _split_generators(self, dl_manager: Any) -> dict[str, Any]:
        return {"train": self._generate_examples()}

    def _generate_examples(self) -> Any:
        for index in range(5):
            yield index, example(index)


def main() -> None:
    tf.config.set_visible_devices([], "GPU")
    root = HERE / "build"
    shutil.rmtree(root, ignore_errors=True)
    builder = Builder(data_dir=str(root))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(num_shards=1))
    target = HERE / NAME / "1.0.0"
    shutil.rmtree(HERE / NAME, ignore_errors=True)
    shutil.copytree(Path(builder.data_dir), target)
    shutil.rmtree(root)
    reread = tfds.builder_from_directory(str(target))
    errors = {}
    for key in ("rows3", "two_rows", "square", "points"):
        try:
            ds = reread.as_dataset(split="train").map(lambda x, key=key: x[key])
            list(tfds.as_numpy(ds))
            errors[key] = None
        except Exception as err:  # recorded as TFDS raises it
            errors[key] = f"{type(err).__name__}: {err}"[:300]
    records = list(tf.data.TFRecordDataset(str(target / f"{NAME}-train.tfrecord-00000-of-00001")))
    stored = sorted(tf.train.Example.FromString(records[0].numpy()).features.feature)
    written = {str(i): example(i) for i in range(5)}
    document = {
        "tfds_version": tfds.__version__,
        "tf_version": tf.__version__,
        "dataset_dir": f"{NAME}/1.0.0",
        "stored_entries": stored,
        "tfds_errors": errors,
        "written": written,
    }
    out = HERE / "fixed_sequences.json"
    out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
