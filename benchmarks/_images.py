"""Image datasets for the TBL-RAW and conversion benchmarks: a TFDS dataset of one encoded
``image`` feature and a ``label``, written by :func:`readplan.write_dataset`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import readplan
from readplan import features


def write_image_dataset(
    path: str,
    name: str,
    image: Callable[[int], np.ndarray],
    *,
    count: int,
    shards: int,
    encoding_format: str,
) -> None:
    """``count`` examples ``{"image": image(k), "label": k % 10}`` in ``shards`` shards."""
    readplan.write_dataset(
        path,
        name=name,
        version="1.0.0",
        features=features.FeaturesDict(
            {"image": features.Image(encoding_format=encoding_format), "label": np.int64}
        ),
        splits={"train": [{"image": image(k), "label": k % 10} for k in range(count)]},
        examples_per_shard=-(-count // shards),
    )
