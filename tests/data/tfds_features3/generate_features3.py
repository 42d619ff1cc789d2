"""Write the ``readplan_features3`` dataset and what ``tfds.as_numpy`` yields for it.

Run with a throwaway environment holding tensorflow-cpu 2.21.0, tensorflow-datasets 4.9.10
and Pillow (never a readplan dependency), from the repository root:

    python tests/data/tfds_features3/generate_features3.py

TFDS prepares the dataset (``GeneratorBasedBuilder``, one shard per split) into
``readplan_features3/1.0.0/``; every example ``tfds.as_numpy(builder.as_dataset(split,
shuffle_files=False))`` yields is recorded leaf by leaf in ``readplan_features3_as_numpy.json``
in the schema of ``tests/data/tfds_features/README.md``, plus two leaf kinds: a
``tf.RaggedTensor`` (``{"type": "tensorflow.RaggedTensor", "dtype", "ragged_rank",
"values": nested lists}``, floats as their bits) and a nested ``Dataset`` (``{"type":
"_IterableDataset", "elements": [{path: leaf}, ...]}``). ``text_encoder.json`` holds the
``features.json`` entry TFDS writes for a ``Text(encoder=...)`` and the error TFDS raises
reading it back.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import shutil
import struct
import sys
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

HERE = Path(__file__).resolve().parent
NAME = "readplan_features3"
SPLITS = {"train": 24, "test": 9}
_spec = importlib.util.spec_from_file_location(
    "images", HERE.parent / "tfds_images" / "generate_images.py"
)
assert _spec is not None
assert _spec.loader is not None
images = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(images)
png = images.png

SUBNORMALS = [4.32e-40, -4.32e-40, 1.0e-45, -1.4e-45, 1.17e-38, 1.1754942e-38, 0.0, -0.0]


def _rng(split: str, index: int) -> np.random.Generator:
    return np.random.default_rng([sum(map(ord, split)), index])


def _pil(array: np.ndarray, mode: str, fmt: str, **options: Any) -> bytes:
    from PIL import Image

    return images._pil_bytes(Image.fromarray(array, mode), fmt, **options)


def _gif(rng: np.random.Generator, frames: int) -> bytes:
    from PIL import Image

    h, w = int(rng.integers(2, 6)), int(rng.integers(2, 6))
    pictures = [
        Image.fromarray(rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8), "RGB").convert(
            "P", palette=Image.Palette.ADAPTIVE, colors=8
        )
        for _ in range(frames)
    ]
    return images._pil_bytes(
        pictures[0], "GIF", save_all=True, append_images=pictures[1:], duration=30, loop=0
    )


def example(split: str, index: int) -> dict[str, Any]:
    rng = _rng(split, index)
    h, w = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    f32 = lambda n: rng.standard_normal(n).astype(np.float32)  # noqa: E731
    rgb16 = rng.integers(0, 65536, size=(h, w, 3))
    rgba16 = rng.integers(0, 65536, size=(h, w, 4))
    gray16 = rng.integers(0, 65536, size=(h, w, 1))
    depth = [1, 2, 4][index % 3]
    low = rng.integers(0, 1 << depth, size=(h, w, 1))
    colour8 = rng.integers(0, 256, size=(h, w, 3))
    key = colour8[0, 0].tolist()
    palette = rng.integers(0, 256, size=(16, 3))
    sub = SUBNORMALS[index % len(SUBNORMALS)]
    words = ["a", "bb", "ccc", "", "dd"]
    rows = [list(range(int(rng.integers(0, 4)))) for _ in range(int(rng.integers(0, 4)))]
    langs = [lang for lang in ("de", "en", "fr") if rng.random() < 0.6] or ["en"]
    steps = int(rng.integers(0, 4))
    return {
        "id": index,
        "opt64": None if index % 3 == 0 else float(rng.standard_normal()),
        "opt_vec64": None if index % 4 == 1 else rng.standard_normal(2),
        "opt16": None if index % 2 == 0 else np.float16(rng.standard_normal()),
        "opt32": None if index % 2 == 1 else np.float32(rng.standard_normal()),
        "opt_u8": None if index % 2 == 0 else np.uint8(index),
        "opt_i16": None if index % 2 == 1 else np.int16(-index),
        "opt_text": None if index % 3 == 1 else f"t{index}",
        "f64": sub,
        "f64v": np.array(
            [*SUBNORMALS[: 1 + index % len(SUBNORMALS)], 1.5, -2.25], dtype=np.float64
        ),
        "f16": np.float16(SUBNORMALS[(index + 3) % len(SUBNORMALS)])
        if index % 2
        else np.float16(3e-7),
        "img16rgb": png(rgb16, 2, 16, interlace=index % 2 == 1),
        "img16rgba": png(rgba16, 6, 16),
        "img8_from16": png(rgb16 if index % 2 else gray16, 2 if index % 2 else 0, 16),
        "img_gray_from_colour": png(colour8, 2, 8)
        if index % 2
        else png(rng.integers(0, 16, size=(h, w, 1)), 3, 4, palette=palette),
        "img_trns": png(colour8, 2, 8, trns=struct.pack(">HHH", *key)),
        "img_lowbit": png(low, 0, depth),
        "img_lowbit4": png(low, 0, depth),
        "bmp": _pil(rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8), "RGB", "BMP"),
        "cmyk": _pil(
            rng.integers(0, 256, size=(8, 8, 4), dtype=np.uint8), "CMYK", "JPEG", quality=90
        ),
        "gif": _gif(rng, 1 + index % 3),
        "seg": rng.integers(0, 4, size=(h, w, 1), dtype=np.uint8),
        "episode": [
            {"obs": f32(2), "reward": np.float32(rng.standard_normal()), "done": k == steps - 1}
            for k in range(steps)
        ],
        "tr": {"de": f"de {index}", "en": f"en {index}", "fr": f"fr {index}"},
        "tvl": {lang: f"{lang}:{index}" for lang in langs},
        "ragged": rows,
        "ragged_text": {
            "tokens": [
                [words[int(k)] for k in rng.integers(0, 5, size=int(rng.integers(0, 3)))]
                for _ in range(int(rng.integers(0, 3)))
            ]
        },
        "ragged_f32": [f32(int(rng.integers(0, 3))) for _ in range(int(rng.integers(1, 3)))],
    }


FEATURES = tfds.features.FeaturesDict(
    {
        "id": tfds.features.Scalar(np.int64),
        "opt64": tfds.features.Scalar(np.float64, optional=True),
        "opt_vec64": tfds.features.Tensor(shape=(2,), dtype=np.float64, optional=True),
        "opt16": tfds.features.Scalar(np.float16, optional=True),
        "opt32": tfds.features.Scalar(np.float32, optional=True),
        "opt_u8": tfds.features.Scalar(np.uint8, optional=True),
        "opt_i16": tfds.features.Scalar(np.int16, optional=True),
        "opt_text": tfds.features.Tensor(shape=(), dtype=np.str_, optional=True),
        "f64": tfds.features.Scalar(np.float64),
        "f64v": tfds.features.Tensor(shape=(None,), dtype=np.float64),
        "f16": tfds.features.Scalar(np.float16),
        "img16rgb": tfds.features.Image(shape=(None, None, 3), dtype=np.uint16),
        "img16rgba": tfds.features.Image(shape=(None, None, 4), dtype=np.uint16),
        "img8_from16": tfds.features.Image(shape=(None, None, 3)),
        "img_gray_from_colour": tfds.features.Image(shape=(None, None, 1)),
        "img_trns": tfds.features.Image(shape=(None, None, 4)),
        "img_lowbit": tfds.features.Image(shape=(None, None, 1)),
        "img_lowbit4": tfds.features.Image(shape=(None, None, 4)),
        "bmp": tfds.features.Image(shape=(None, None, 3)),
        "cmyk": tfds.features.Image(),
        "gif": tfds.features.Image(shape=(None, None, None, 3)),
        "seg": tfds.features.LabeledImage(labels=["bg", "cat", "dog", "car"]),
        "episode": tfds.features.Dataset(
            {
                "obs": tfds.features.Tensor(shape=(2,), dtype=np.float32),
                "reward": np.float32,
                "done": np.bool_,
            }
        ),
        "tr": tfds.features.Translation(languages=["en", "fr", "de"]),
        "tvl": tfds.features.TranslationVariableLanguages(languages=["de", "en", "fr"]),
        "ragged": tfds.features.Sequence(tfds.features.Sequence(np.int64)),
        "ragged_text": tfds.features.Sequence(
            {"tokens": tfds.features.Sequence(tfds.features.Text())}
        ),
        "ragged_f32": tfds.features.Sequence(tfds.features.Sequence(np.float32)),
    }
)


class Builder(tfds.core.GeneratorBasedBuilder):
    name = NAME
    VERSION = tfds.core.Version("1.0.0")

    def _info(self) -> tfds.core.DatasetInfo:
        return tfds.core.DatasetInfo(builder=self, features=FEATURES)

    def _split_generators(self, dl_manager: Any) -> dict[str, Any]:
        return {split: self._generate_examples(split) for split in SPLITS}

    def _generate_examples(self, split: str) -> Any:
        for index in range(SPLITS[split]):
            yield index, example(split, index)


# --- recording -------------------------------------------------------------------------------


def _float_bits(value: float, dtype: str) -> str:
    if dtype == "float16":
        return struct.pack(">e", value).hex()
    if dtype == "float32":
        return struct.pack(">f", value).hex()
    return struct.pack(">d", value).hex()


def _values(array: np.ndarray) -> list[Any]:
    flat = array.reshape(-1)
    if array.dtype.kind == "f":
        return [_float_bits(float(v), str(array.dtype)) for v in flat]
    if array.dtype == object:
        return [base64.b64encode(v).decode() for v in flat]
    if array.dtype == bool:
        return [bool(v) for v in flat]
    return [int(v) for v in flat]


def _nested_bits(value: Any, dtype: str) -> Any:
    if isinstance(value, list):
        return [_nested_bits(v, dtype) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if dtype.startswith("float"):
        return _float_bits(value, dtype)
    return value


def leaf(value: Any) -> dict[str, Any]:
    cls = type(value)
    kind = cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"
    if isinstance(value, tf.RaggedTensor):
        dtype = value.dtype.name
        return {
            "type": "tensorflow.RaggedTensor",
            "dtype": dtype,
            "ragged_rank": value.ragged_rank,
            "values": _nested_bits(value.to_list(), dtype),
        }
    if cls.__name__ == "_IterableDataset":
        return {"type": "_IterableDataset", "elements": [flatten(e) for e in value]}
    if isinstance(value, bytes):
        return {
            "type": "bytes",
            "dtype": "bytes",
            "shape": [],
            "values": [base64.b64encode(value).decode()],
        }
    array = np.asarray(value)
    return {
        "type": kind,
        "dtype": str(array.dtype),
        "shape": list(array.shape),
        "values": _values(array),
    }


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key in value:
            out.update(flatten(value[key], f"{prefix}{key}/"))
        return out
    return {prefix[:-1]: leaf(value)}


def text_encoder_entry() -> dict[str, Any]:
    from google.protobuf import json_format

    encoded = tfds.features.Text(encoder=tfds.deprecated.text.ByteTextEncoder())
    proto = tfds.features.FeaturesDict({"words": encoded, "id": np.int64}).to_proto()
    declaration = json_format.MessageToDict(proto)
    try:
        tfds.features.FeatureConnector.from_json(declaration)
        error = None
    except Exception as err:  # recorded as TFDS raises it
        error = f"{type(err).__name__}: {err}"
    return {"features_json": declaration, "tfds_from_json_error": error}


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
    cases = []
    for split in SPLITS:
        ds = reread.as_dataset(split=split, shuffle_files=False)
        ids_ds = reread.as_dataset(
            split=split, shuffle_files=False, read_config=tfds.ReadConfig(add_tfds_id=True)
        )
        tfds_ids = [e["tfds_id"].numpy().decode() for e in ids_ds]
        examples = [flatten(e) for e in tfds.as_numpy(ds)]
        cases.append(
            {
                "split": split,
                "decoders": None,
                "num_examples": len(examples),
                "tfds_ids": tfds_ids,
                "positions": [
                    [split, int(t.split("-of-")[0][-5:]), int(t.rsplit("__", 1)[1])]
                    for t in tfds_ids
                ],
                "ids": [e["id"]["values"][0] for e in examples],
                "examples": examples,
            }
        )
    document = {
        "dataset": NAME,
        "version": "1.0.0",
        "dataset_dir": f"{NAME}/1.0.0",
        "tfds_version": tfds.__version__,
        "tf_version": tf.__version__,
        "shard_lengths": {split: [n] for split, n in SPLITS.items()},
        "call": "tfds.as_numpy(tfds.builder_from_directory(dataset_dir).as_dataset(split=S, "
        "shuffle_files=False))",
        "cases": cases,
    }
    out = HERE / f"{NAME}_as_numpy.json"
    out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    (HERE / "text_encoder.json").write_text(
        json.dumps(text_encoder_entry(), indent=1) + "\n", encoding="utf-8"
    )
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
