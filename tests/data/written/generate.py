"""Write the datasets of ``tests/written_cases.py`` with readplan, load them with TFDS, record.

Run in a throwaway environment with TensorFlow 2.21 and TensorFlow Datasets 4.9.10 (plus
numpy, Pillow and simplejpeg), from the repository root:

    PYTHONPATH=src:. python tests/data/written/generate.py

For each case it records, in ``written_tfds.json``:

* ``features_json`` / ``label_files``: what TFDS's ``FeaturesDict.save_config`` and
  ``save_metadata`` write for the same features (built with TFDS's own classes);
* ``dataset_info``: the ``dataset_info.json`` ``tfds.folder_dataset.write_metadata`` writes
  for readplan's shard files (TFDS counting the records and bytes itself);
* ``entries``: per split and ``id``, the ``tf.train.Example`` entries TFDS's
  ``serialize_example`` makes of the same example (images as their list kind only:
  PNG/JPEG encoders differ in their bytes, not in the pixels);
* ``yielded``: per split and ``id``, every leaf ``tfds.as_numpy(builder_from_directory(
  readplan's directory).as_dataset(split))`` yields, in the schema of
  ``tests/data/tfds_features/README.md``; ``builder``: the split layout TFDS read.

It also asserts, in TensorFlow, that what TFDS yields equals the values written (bit for
bit; images losslessly but for JPEG, which is checked against TF's decode of the same
bytes by the recorded leaves).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

sys.path[:0] = [
    str(Path(__file__).resolve().parents[3]),
    str(Path(__file__).resolve().parents[3] / "src"),
]

from tests.written_cases import CASES  # noqa: E402

from readplan.metadata import features as rp  # noqa: E402

OUT = Path(__file__).with_name("written_tfds.json")


def tfds_feature(feature: Any) -> Any:
    """The TFDS feature connector for one readplan feature."""
    f = tfds.features
    if isinstance(feature, rp.FeaturesDict):
        return f.FeaturesDict({name: tfds_feature(inner) for name, inner in feature.items()})
    if isinstance(feature, rp.Sequence):
        return f.Sequence(tfds_feature(feature.feature), length=feature.length)
    if isinstance(feature, rp.Scalar):
        return f.Scalar(dtype=_dtype(feature.dtype), optional=feature.optional)
    if isinstance(feature, rp.Tensor):
        return f.Tensor(
            shape=feature.shape,
            dtype=_dtype(feature.dtype),
            encoding=feature.encoding,
            optional=feature.optional,
        )
    if isinstance(feature, rp.Text):
        return f.Text()
    if isinstance(feature, rp.ClassLabel):
        if feature.names == tuple(map(str, range(feature.num_classes))):
            return f.ClassLabel(num_classes=feature.num_classes)
        return f.ClassLabel(names=list(feature.names))
    if isinstance(feature, rp.Image):
        return f.Image(
            shape=feature.shape,
            dtype=_dtype(feature.dtype),
            encoding_format=feature.encoding_format,
            use_colormap=feature.use_colormap,
        )
    if isinstance(feature, rp.BBoxFeature):
        return f.BBoxFeature()
    if isinstance(feature, rp.Audio):
        return f.Audio(
            shape=feature.shape, dtype=_dtype(feature.dtype), sample_rate=feature.sample_rate
        )
    raise TypeError(feature)


def _dtype(name: str) -> Any:
    return tf.string if name == "string" else np.dtype(name).type


def _bits(array: np.ndarray) -> list[str]:
    if array.dtype.kind == "c":
        array = array.view(np.float32 if array.dtype == np.complex64 else np.float64)
    uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[array.dtype.itemsize]
    flat = np.ascontiguousarray(array).reshape(-1).view(uint)
    return [f"{int(v):0{array.dtype.itemsize * 2}x}" for v in flat]


def _nested(values: Any, dtype: str) -> Any:
    if isinstance(values, list):
        return [_nested(v, dtype) for v in values]
    if dtype.startswith("float"):
        return _bits(np.array([values], dtype=dtype))[0]
    return values


def leaf(value: Any) -> dict[str, Any]:
    """One yielded leaf: its Python type, dtype, shape and values (floats as bit patterns);
    a ragged tensor as its nested lists (the schema of tests/data/tfds_features3)."""
    if isinstance(value, tf.RaggedTensor):
        dtype = value.dtype.name
        return {
            "type": "tensorflow.RaggedTensor",
            "dtype": dtype,
            "ragged_rank": value.ragged_rank,
            "values": _nested(value.to_list(), dtype),
        }
    cls = type(value)
    name = cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"
    if isinstance(value, bytes):
        return {
            "type": name,
            "dtype": "bytes",
            "shape": [],
            "values": [base64.b64encode(value).decode()],
        }
    array = np.asarray(value)
    if array.dtype == object:
        values: list[Any] = [base64.b64encode(v).decode() for v in array.reshape(-1)]
    elif array.dtype.kind in "fc":
        values = _bits(array)
    else:
        values = array.reshape(-1).tolist()
    return {"type": name, "dtype": str(array.dtype), "shape": list(array.shape), "values": values}


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(flatten(inner, f"{prefix}{key}/"))
        return out
    return {prefix[:-1]: value}


def entry(feature: Any, image: bool) -> dict[str, Any]:
    kind = feature.WhichOneof("kind")
    if image:
        return {"kind": kind}
    values = list(getattr(feature, kind).value)
    if kind == "bytes_list":
        values = [base64.b64encode(v).decode() for v in values]
    elif kind == "float_list":
        values = _bits(np.array(values, np.float32))
    return {"kind": kind, "values": values}


def image_paths(feature: Any, prefix: str = "") -> set[str]:
    if isinstance(feature, rp.FeaturesDict):
        return {
            p for name, inner in feature.items() for p in image_paths(inner, f"{prefix}{name}/")
        }
    if isinstance(feature, rp.Sequence):
        return image_paths(feature.feature, prefix)
    return {prefix[:-1]} if isinstance(feature, rp.Image) else set()


def check_yielded(written: dict[str, Any], yielded: dict[str, Any], jpeg: set[str]) -> None:
    """TFDS yields the numeric arrays written, bit for bit (images too, JPEG aside)."""
    for path, want in written.items():
        if isinstance(want, np.ndarray) and want.dtype.kind in "biufc" and path not in jpeg:
            got = yielded[path]
            assert got.shape == want.shape, path
            if want.dtype == np.float64 and not path.startswith("enc_"):
                want = want.astype(np.float32)  # tf.train.Example stores float32 only
            # A box written as float64 is stored (and yielded) as float32.
            assert got.tobytes() == want.astype(got.dtype).tobytes(), path


def record_case(case: Any, root: Path) -> dict[str, Any]:
    data_dir = root / case.name / "1.2.3"
    case.write(data_dir)
    features = case.features()
    connectors = tfds_feature(features)
    saved = root / "tfds_saved"
    saved.mkdir()
    connectors.save_config(saved)
    connectors.save_metadata(saved)
    label_files = {p.name: p.read_text() for p in sorted(saved.glob("*.labels.txt"))}

    counted = root / "counted" / case.name / "1.2.3"
    counted.mkdir(parents=True)
    for shard in data_dir.glob(f"{case.name}-*"):
        shutil.copy(shard, counted)
    tfds.folder_dataset.write_metadata(
        data_dir=counted,
        features=connectors,
        split_infos=None,
        description=f"readplan.write_dataset case {case.name}",
    )

    builder = tfds.builder_from_directory(str(data_dir))
    images = image_paths(features)
    jpeg = {p for p in images if "jpeg" in p}
    entries: dict[str, dict[str, Any]] = {}
    yielded: dict[str, dict[str, Any]] = {}
    for split, examples in case.splits().items():
        entries[split] = {}
        for values in examples:
            proto = tf.train.Example.FromString(connectors.serialize_example(values))
            entries[split][str(values["id"])] = {
                name: entry(feature, name in images)
                for name, feature in sorted(proto.features.feature.items())
            }
        yielded[split] = {}
        by_id = {int(v["id"]): v for v in examples}
        for element in tfds.as_numpy(builder.as_dataset(split=split, shuffle_files=False)):
            flat = flatten(element)
            check_yielded(by_id[int(element["id"])], flat, jpeg)
            yielded[split][str(int(element["id"]))] = {
                path: leaf(v) for path, v in sorted(flat.items())
            }
    return {
        "name": case.name,
        "features_json": (saved / "features.json").read_text(),
        "label_files": label_files,
        "dataset_info": (counted / "dataset_info.json").read_text(),
        "builder": {
            split: {"shard_lengths": list(info.shard_lengths), "num_examples": info.num_examples}
            for split, info in builder.info.splits.items()
        },
        "entries": entries,
        "yielded": yielded,
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        for case in CASES:
            root = Path(tmp) / case.name
            root.mkdir()
            cases.append(record_case(case, root))
    document = {
        "tfds_version": tfds.__version__,
        "tf_version": tf.__version__,
        "call": "tfds.as_numpy(tfds.builder_from_directory(dir)"
        ".as_dataset(split=S, shuffle_files=False))",
        "cases": cases,
    }
    OUT.write_text(json.dumps(document, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
