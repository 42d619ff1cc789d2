"""Record what TFDS yields for the ``readplan_raw`` dataset, its images as digests.

Run with a throwaway environment holding tensorflow-cpu 2.21.0 and tensorflow-datasets
4.9.10 (never readplan dependencies), from the repository root, after ``generate_raw.py``:

    python tests/data/tfds_raw/generate_decoded.py

For each read below, ``builder.as_dataset(split, shuffle_files=..., read_config=...)``
through ``tfds.as_numpy`` gives the examples in TFDS's order; ``decoded.json`` records per
example its ``tfds_id``, ``label``, ``id``, ``caption``, and the decoded image's shape and
the SHA-256 of its bytes.  A TBL-RAW conversion of the dataset read with ``decode="tfds"``
must give these values (the ``tfds_id`` of each naming ``tbl`` shards) and, as its image,
TFDS's image resized by ``readplan.metadata.raw_images.resize_image``.  The resized pixels
themselves are not recorded: Pillow's bilinear filter gives other pixels in other Pillow
versions (12.3 and 13.0 differ), so they are checked against the Pillow the tests run with.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import tensorflow as tf
import tensorflow_datasets as tfds

HERE = Path(__file__).resolve().parent
READS = [
    {"split": "train", "shuffle_files": True, "shuffle_seed": 11},
    {"split": "test[:5]+train[10:20]", "shuffle_files": False, "shuffle_seed": None},
]


def read(builder: Any, spec: dict[str, Any]) -> list[dict[str, Any]]:
    config = tfds.ReadConfig(shuffle_seed=spec["shuffle_seed"], add_tfds_id=True)
    dataset = builder.as_dataset(
        split=spec["split"], shuffle_files=spec["shuffle_files"], read_config=config
    )
    return [
        {
            "tfds_id": example["tfds_id"].decode(),
            "label": int(example["label"]),
            "id": int(example["id"]),
            "caption": example["caption"].decode(),
            "image_shape": list(example["image"].shape),
            "image_sha256": hashlib.sha256(example["image"].tobytes()).hexdigest(),
        }
        for example in tfds.as_numpy(dataset)
    ]


def main() -> None:
    tf.config.set_visible_devices([], "GPU")
    builder = tfds.builder_from_directory(str(HERE / "readplan_raw" / "1.0.0"))
    reads = [{**spec, "examples": read(builder, spec)} for spec in READS]
    text = json.dumps({"reads": reads}, indent=1)
    (HERE / "decoded.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
