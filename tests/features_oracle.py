"""What TFDS yielded for the feature datasets, and the comparison of decoded leaves with it.

``tests/data/tfds_features/readplan_features_as_numpy.json`` (the features fixture) and the
``tests/data/vectors/features`` files (more dtypes, shapes, sequences, image encodings and
videos) were written by TFDS 4.9.10 / TF 2.21 (``tfds.as_numpy(builder.as_dataset(...))``);
the fixture's README gives the schema. Each leaf is recorded by its path, Python type, dtype,
shape and values (floats as their bits, bytes in base64).
"""

from __future__ import annotations

import base64
import functools
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

from tests.conftest import DATA

ORACLE_FILES = {
    "fixture": DATA / "tfds_features" / "readplan_features_as_numpy.json",
    "vectors": DATA / "vectors" / "features" / "readplan_feature_vectors_as_numpy.json",
    "encoded": DATA / "vectors" / "features" / "readplan_encoded_vectors_as_numpy.json",
    "video": DATA / "vectors" / "features" / "readplan_video_vectors_as_numpy.json",
    "round3": DATA / "tfds_features3" / "readplan_features3_as_numpy.json",
}


@functools.cache
def oracle(name: str) -> dict[str, Any]:
    """The parsed oracle file ``name`` (a key of ORACLE_FILES)."""
    loaded: dict[str, Any] = json.loads(ORACLE_FILES[name].read_text(encoding="utf-8"))
    return loaded


def dataset_dir(name: str) -> Path:
    """The TFDS-written dataset the oracle file ``name`` was recorded from."""
    return ORACLE_FILES[name].parent / oracle(name)["dataset_dir"]


ORACLE = oracle("fixture")
DATASET_DIR = dataset_dir("fixture")


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flatten(inner, f"{prefix}{key}/"))
        return out
    return {prefix[:-1]: value}


def _type_name(value: Any) -> str:
    cls = type(value)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"


def _expected_values(leaf: dict[str, Any]) -> list[Any]:
    dtype, values = leaf["dtype"], leaf["values"]
    if dtype in ("bytes", "object"):
        return [base64.b64decode(v) for v in values]
    if dtype in ("float32", "complex64"):
        return [struct.unpack(">I", bytes.fromhex(v))[0] for v in values]
    if dtype in ("float64", "complex128"):
        return [struct.unpack(">Q", bytes.fromhex(v))[0] for v in values]
    if dtype == "float16":
        return [struct.unpack(">H", bytes.fromhex(v))[0] for v in values]
    return list(values)


def _actual_values(value: Any) -> list[Any]:
    if isinstance(value, bytes):
        return [value]
    array = np.asarray(value)
    if array.dtype in (np.float32, np.complex64):
        return array.reshape(-1).view(np.uint32).tolist()
    if array.dtype in (np.float64, np.complex128):
        return array.reshape(-1).view(np.uint64).tolist()
    if array.dtype == np.float16:
        return array.reshape(-1).view(np.uint16).tolist()
    return array.reshape(-1).tolist()


def _actual_dtype(value: Any) -> str:
    return "bytes" if isinstance(value, bytes) else str(np.asarray(value).dtype)


_RAGGED_DTYPE = {"string": "object"}


def _ragged_rows(value: Any, dtype: str, rank: int) -> Any:
    """readplan's nested object arrays of rows as the recorded nested lists of values."""
    assert isinstance(value, np.ndarray), value
    assert value.ndim == 1, value
    if rank == 0:
        assert str(value.dtype) == _RAGGED_DTYPE.get(dtype, dtype), value.dtype
        return _actual_values(value)
    assert value.dtype == object
    return [_ragged_rows(row, dtype, rank - 1) for row in value]


def _expected_rows(values: list[Any], dtype: str, rank: int) -> Any:
    if rank == 0:
        return _expected_values({"dtype": _RAGGED_DTYPE.get(dtype, dtype), "values": values})
    return [_expected_rows(row, dtype, rank - 1) for row in values]


def _assert_special(value: Any, leaf: dict[str, Any], at: str) -> None:
    """A ragged tensor (nested object arrays of rows) or a nested Dataset (a list)."""
    if leaf["type"] == "_IterableDataset":
        assert isinstance(value, list), at
        assert len(value) == len(leaf["elements"]), at
        for k, (element, expected) in enumerate(zip(value, leaf["elements"])):
            assert_same_leaves(
                element if isinstance(element, dict) else {"": element},
                expected,
                f"{at} element {k}",
            )
        return
    rank = leaf["ragged_rank"]
    expected = _expected_rows(leaf["values"], leaf["dtype"], rank)
    assert _ragged_rows(value, leaf["dtype"], rank) == expected, at


def assert_same_leaves(decoded: dict[str, Any], leaves: dict[str, Any], where: str) -> None:
    """``decoded`` has exactly the recorded leaf paths, each of the recorded type, dtype, shape
    and values (floats compared by their bits)."""
    flat = _flatten(decoded)
    assert sorted(flat) == sorted(leaves), f"{where}: leaf paths differ"
    for path, leaf in leaves.items():
        value = flat[path]
        at = f"{where} leaf {path}"
        if leaf["type"] in ("tensorflow.RaggedTensor", "_IterableDataset"):
            _assert_special(value, leaf, at)
            continue
        assert _type_name(value) == leaf["type"], at
        assert _actual_dtype(value) == leaf["dtype"], at
        assert list(np.shape(value)) == leaf["shape"], at
        assert _actual_values(value) == _expected_values(leaf), at
