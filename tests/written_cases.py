"""The datasets ``readplan.write_dataset`` writes for the TFDS round trip.

Shared by ``tests/data/written/generate.py`` (which writes them, loads them with TFDS and
records what TFDS yields and writes) and ``tests/test_write_dataset.py`` (which writes them
again without TensorFlow and compares). Examples come from a seeded numpy generator, so both
sides build the same values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from readplan.metadata.features import (
    Audio,
    BBoxFeature,
    ClassLabel,
    FeaturesDict,
    Image,
    Scalar,
    Sequence,
    Tensor,
    Text,
)

PLAIN_DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
)
# Encoded tensors: TensorFlow's decode_raw has no uint32, so TFDS cannot read those back.
ENCODED_DTYPES = (*(d for d in PLAIN_DTYPES if d != "uint32"), "complex64", "complex128")
LABELS = ("airplane", "bicycle", "cat")
OBJECT_LABELS = ("person", "car")


def everything_features() -> FeaturesDict:
    """Every feature type and dtype, as a TFDS user spells them."""
    plain = {f"t_{dtype}": Tensor(shape=(2,), dtype=dtype) for dtype in PLAIN_DTYPES}
    encoded = {
        f"enc_{dtype}": Tensor(shape=(None, 2), dtype=dtype, encoding="bytes")
        for dtype in ENCODED_DTYPES
    }
    return FeaturesDict(
        {
            "id": Scalar(dtype="int64"),
            "label": ClassLabel(names=LABELS),
            "coarse": ClassLabel(num_classes=4),
            "text": Text(),
            "flag": np.bool_,
            "score": Scalar(dtype="float32"),
            "tags": Tensor(shape=(None,), dtype="string"),
            "blob": Tensor(shape=(), dtype="string"),
            "mat": Tensor(shape=(2, 3), dtype="float32"),
            "points": Tensor(shape=(None, 2), dtype="int32"),
            "zlib_grid": Tensor(shape=(None, None), dtype="float32", encoding="zlib"),
            "maybe": Tensor(shape=(), dtype="int16", optional=True),
            "maybe_text": Tensor(shape=(), dtype="string", optional=True),
            "image": Image(shape=(None, None, 3), encoding_format="png"),
            "image_jpeg": Image(shape=(None, None, 3), encoding_format="jpeg"),
            "image_gray": Image(shape=(None, None, 1)),
            "image_rgba": Image(shape=(None, None, 4), encoding_format="png"),
            "image_u16": Image(shape=(None, None, 1), dtype="uint16"),
            "image_float": Image(shape=(None, None, 1), dtype="float32"),
            "image_fixed": Image(shape=(4, 5, 3)),
            "bbox": BBoxFeature(),
            "objects": Sequence(
                {
                    "label": ClassLabel(names=OBJECT_LABELS),
                    "bbox": BBoxFeature(),
                    "area": np.float32,
                }
            ),
            "seq_ints": Sequence(np.int64),
            "seq_fixed": Sequence(Scalar(dtype="float32"), length=3),
            "frames": Sequence(Image(shape=(3, 3, 3))),
            "nested": {
                "a": np.int64,
                "inner": {"name": Text(), "pair": Tensor(shape=(2,), dtype="float32")},
            },
            "audio": Audio(sample_rate=8000),
            **plain,
            **encoded,
        }
    )


def _plain_value(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> Any:
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    kind = np.dtype(dtype).kind
    if kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    if kind == "c":
        parts = rng.standard_normal((2, *shape))
        return (parts[0] + 1j * parts[1]).astype(dtype)
    return (rng.standard_normal(shape) * 1000).astype(dtype)


def _box(rng: np.random.Generator) -> Any:
    # TFDS takes a box as an array of 4 (or its BBox tuple), not a list.
    y = sorted(float(v) for v in rng.random(2))
    x = sorted(float(v) for v in rng.random(2))
    return np.array([y[0], x[0], y[1], x[1]])


def _pixels(rng: np.random.Generator, shape: tuple[int, ...], dtype: str = "uint8") -> Any:
    return rng.integers(0, np.iinfo(dtype).max, shape, dtype=dtype, endpoint=True)


def _listed(array: Any) -> Any:
    """Nested lists, or the array itself when it is empty (``[]`` has no inner shape)."""
    return array.tolist() if array.size else array


def everything_example(index: int, rng: np.random.Generator) -> dict[str, Any]:
    """Example ``index`` of the "everything" dataset (names and indices, dict of lists and
    list of dicts, Python values and arrays, optionals present and absent)."""
    h, w = int(rng.integers(1, 9)), int(rng.integers(1, 9))
    objects = int(rng.integers(0, 4))
    example: dict[str, Any] = {
        "id": index,
        "label": LABELS[index % 3] if index % 2 else index % 3,
        "coarse": int(rng.integers(0, 4)),
        "text": ["", "plain", "héllo wörld", "日本語 🎉", "tab\tnew\nline"][index % 5],
        "flag": bool(index % 2),
        "score": [0.5, -0.0, float("inf"), 1e-40, 3.4e38][index % 5],
        "tags": [f"tag{k}" for k in range(index % 4)],
        "blob": bytes(rng.integers(0, 256, index % 7, dtype=np.uint8)),
        "mat": rng.standard_normal((2, 3)).astype(np.float32),
        "points": _listed(rng.integers(-1000, 1000, (index % 3, 2)).astype(np.int32)),
        "zlib_grid": rng.standard_normal((index % 3 + 1, 2)).astype(np.float32),
        "image": _pixels(rng, (h, w, 3)),
        "image_jpeg": _pixels(rng, (w * 2, h * 2, 3)),
        "image_gray": _pixels(rng, (h, w, 1)),
        "image_rgba": _pixels(rng, (w, h, 4)),
        "image_u16": _pixels(rng, (h, w, 1), "uint16"),
        "image_float": rng.standard_normal((h, w, 1)).astype(np.float32),
        "image_fixed": _pixels(rng, (4, 5, 3)),
        "bbox": _box(rng),
        "seq_ints": rng.integers(-(2**62), 2**62, index % 5).tolist(),
        "seq_fixed": rng.standard_normal(3).astype(np.float32),
        "frames": [_pixels(rng, (3, 3, 3)) for _ in range(index % 3)],
        "nested": {"a": -index, "inner": {"name": f"n{index}", "pair": [index / 3, -index]}},
        "audio": rng.integers(-(2**15), 2**15, index % 6 + 1),
    }
    if index % 2:
        example["objects"] = [
            {"label": OBJECT_LABELS[k % 2], "bbox": _box(rng), "area": np.float32(k * 1.5)}
            for k in range(objects)
        ]
    else:
        example["objects"] = {
            "label": [k % 2 for k in range(objects)],
            "bbox": [_box(rng) for _ in range(objects)],
            "area": [np.float32(k / 4) for k in range(objects)],
        }
    example["maybe"] = None if index % 3 == 1 else index
    example["maybe_text"] = f"present {index}" if index % 2 == 0 else None
    for dtype in PLAIN_DTYPES:
        example[f"t_{dtype}"] = _plain_value(rng, dtype, (2,))
    for dtype in ENCODED_DTYPES:
        example[f"enc_{dtype}"] = _plain_value(rng, dtype, (index % 3, 2))
    return example


def sized_features() -> FeaturesDict:
    return FeaturesDict({"id": np.int64, "payload": Tensor(shape=(None,), dtype="uint8")})


def sized_example(index: int, rng: np.random.Generator) -> dict[str, Any]:
    return {"id": index, "payload": rng.integers(0, 256, int(rng.integers(0, 200)), dtype=np.uint8)}


def ragged_features() -> FeaturesDict:
    """Sequences of Sequences, which TFDS stores as ragged tensors."""
    return FeaturesDict(
        {
            "id": np.int64,
            "tokens": Sequence(Sequence(np.int64)),
            "objects": Sequence(
                {
                    "label": ClassLabel(names=OBJECT_LABELS),
                    "scores": Sequence(Scalar(dtype="float32")),
                }
            ),
            "deep": Sequence(Sequence(Sequence(Scalar(dtype="uint8")))),
        }
    )


def ragged_example(index: int, rng: np.random.Generator) -> dict[str, Any]:
    sentences = [rng.integers(0, 1000, int(rng.integers(0, 4))).tolist() for _ in range(index % 4)]
    objects = [
        {
            "label": k % 2,
            "scores": rng.standard_normal(int(rng.integers(0, 3))).astype(np.float32),
        }
        for k in range(index % 3)
    ]
    deep = [[[k, k + 1][: index % 3] for k in range(j)] for j in range(index % 3)]
    return {"id": index, "tokens": sentences, "objects": objects, "deep": deep}


@dataclass(frozen=True)
class Case:
    """One dataset: its name, features, split sizes, sharding and example maker."""

    name: str
    features: Any
    split_sizes: dict[str, int]
    sharding: dict[str, int]
    make: Any
    seed: int

    def splits(self) -> dict[str, list[dict[str, Any]]]:
        out = {}
        for k, (split, size) in enumerate(self.split_sizes.items()):
            rng = np.random.default_rng([self.seed, k])
            out[split] = [self.make(index, rng) for index in range(size)]
        return out

    def write(self, data_dir: Any) -> Any:
        import readplan

        return readplan.write_dataset(
            data_dir,
            name=self.name,
            version="1.2.3",
            features=self.features(),
            splits=self.splits(),
            description=f"readplan.write_dataset case {self.name}",
            **self.sharding,
        )


CASES = (
    Case(
        "everything",
        everything_features,
        {"train": 12, "test": 5},
        {"examples_per_shard": 5},
        everything_example,
        23,
    ),
    Case(
        "sized",
        sized_features,
        {"train": 40, "validation": 9},
        {"shard_size": 1500},
        sized_example,
        6,
    ),
    Case("ragged", ragged_features, {"train": 9}, {"examples_per_shard": 4}, ragged_example, 11),
)
