"""Mutated ``features.json`` files, images and encoded tensors: decoding raises nothing but
ReadplanError and stays within a memory bound.

Each property runs in a child process whose address space is capped at 1 GiB (decoding
with ``max_value_bytes`` 64 MiB), so an allocation that a mutated declaration, header or
stream asks for fails the test instead of being attempted.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import functools
import json
import shutil
import struct
import tempfile
import zlib
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readplan import tfrecord
from readplan.errors import ReadplanError
from readplan.example import decode as decode_example
from readplan.example import encode
from readplan.metadata.features import FeaturesDict, Image, Sequence, load_features
from tests.conftest import DATA
from tests.memory_bound import GIB, run_bounded
from tests.test_features_limits import _zeros_deflated

_CAP = 2**26
_DATASETS = [
    DATA / "tfds_features" / "readplan_features" / "1.0.0",
    DATA / "vectors" / "features" / "readplan_encoded_vectors" / "1.0.0",
    DATA / "vectors" / "features" / "readplan_feature_vectors" / "1.0.0",
]
_FUZZ = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _records(directory: Path, count: int = 4) -> list[bytes]:
    shard = sorted(directory.glob("*.tfrecord-*"))[0]
    return list(tfrecord.read(shard))[:count]


# --- features.json -------------------------------------------------------------------------------

_HOSTILE = st.one_of(
    st.integers(-(2**70), 2**70),
    st.integers(-2, 5).map(str),
    st.sampled_from(["9" * 5_000, "-1", "0", str(2**63), str(2**31), "1e9", "", "x"]),
    st.sampled_from([None, True, [], {}, 1.5, "none", "zlib", "bytes", "uint32", "string"]),
    st.just({"dimensions": ["100000", "100000"]}),
    st.just({"dimensions": ["-1", "-1", "-1"]}),
    st.integers(1, 4_000).map(lambda depth: "[" * depth),
)


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``value`` (dict keys and list indices)."""
    found = [path]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _nodes(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _nodes(inner, (*path, index))
    return found


def _mutated(declaration: Any, data: st.DataObject) -> str:
    for _ in range(data.draw(st.integers(1, 4))):
        paths = [path for path in _nodes(declaration) if path]
        if not paths:
            break  # earlier steps removed every node
        path = data.draw(st.sampled_from(paths))
        parent = declaration
        for step in path[:-1]:
            parent = parent[step]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(data.draw(_HOSTILE))  # no shared objects
    text = json.dumps(declaration)
    if data.draw(st.integers(0, 9)) == 0:  # damaged text, not only damaged values
        cut = data.draw(st.integers(0, len(text)))
        text = text[:cut] + data.draw(st.sampled_from(["", "[" * 50_000, '{"a":', "]"]))
    return text


@_FUZZ
@given(st.sampled_from(_DATASETS), st.data())
def fuzz_features_json(dataset: Path, data: st.DataObject) -> None:
    declaration = json.loads((dataset / "features.json").read_text(encoding="utf-8"))
    text = _mutated(declaration, data)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / "features.json").write_text(text, encoding="utf-8")
        for labels in dataset.glob("*.labels.txt"):
            shutil.copy(labels, directory)
        try:
            features = load_features(directory)
        except ReadplanError:
            return
    assert isinstance(features, FeaturesDict)
    records = [b"", *_records(dataset)]
    for unknown in ("error", "raw"):
        try:
            decoder = features.decoder(unknown=unknown, max_value_bytes=_CAP)  # type: ignore[arg-type]
            many = features.batch_decoder(unknown=unknown, max_value_bytes=_CAP)  # type: ignore[arg-type]
        except ReadplanError:
            continue
        for record in records:
            with contextlib.suppress(ReadplanError):
                decoder(record)
        with contextlib.suppress(ReadplanError):
            many(records)
        str(features)  # repr and hash of what was loaded are bounded too
        hash(features)


def test_mutated_features_json_raise_only_readplan_errors_within_a_memory_bound() -> None:
    run_bounded(
        "from tests.test_features_fuzz import fuzz_features_json; fuzz_features_json()",
        address_space=GIB,
        timeout=600,
    )


# --- images and encoded tensors in records -------------------------------------------------------

_SHORT = st.integers(0, 2**16 - 1)
_SIGNED = st.integers(-(2**31), 2**31 - 1)
_DIMENSIONS = st.one_of(st.integers(0, 70_000), st.sampled_from([2**16 - 1, 2**31 - 1, 2**32 - 1]))


@functools.cache
def _images() -> list[bytes]:
    """The images of a TFDS-made dataset and the PNG/JPEG/BMP/GIF cases TF decoded."""
    decoded = [decode_example(record) for record in _records(_DATASETS[0], 8)]
    cases = json.loads((DATA / "tfds_images" / "decode_image_cases.json").read_text())
    return [
        bytes(value[0])
        for entries in decoded
        for name, value in entries.items()
        if name.startswith("image") and isinstance(value, list) and value
    ] + [base64.b64decode(case["bytes"]) for case in cases["cases"]]


def _mutated_bytes(original: bytes, data: st.DataObject) -> bytes:
    blob = bytearray(original)
    for _ in range(data.draw(st.integers(1, 4))):
        choice = data.draw(st.integers(0, 3))
        if choice == 0 and blob[:4] == b"\x89PNG" and len(blob) >= 33:
            # The IHDR's width and height, with the chunk's CRC made right again.
            for field in (16, 20):
                blob[field : field + 4] = data.draw(_DIMENSIONS).to_bytes(4, "big")
            blob[29:33] = zlib.crc32(blob[12:29]).to_bytes(4, "big")
        elif choice == 0 and blob[:3] == b"GIF" and len(blob) >= 10:  # the screen's size
            blob[6:10] = struct.pack("<HH", *data.draw(st.tuples(_SHORT, _SHORT)))
        elif choice == 0 and blob[:2] == b"BM" and len(blob) >= 26:  # width, height
            blob[18:26] = struct.pack("<ii", *data.draw(st.tuples(_SIGNED, _SIGNED)))
        elif choice == 0:  # a JPEG frame header's height and width (after SOF0/SOF2)
            start = max(blob.find(b"\xff\xc0"), blob.find(b"\xff\xc2"))
            if start >= 0:
                for field in (start + 5, start + 7):
                    size = data.draw(st.integers(0, 2**16 - 1))
                    blob[field : field + 2] = size.to_bytes(2, "big")
        elif choice == 1 and blob:
            position = data.draw(st.integers(0, len(blob) - 1))
            blob[position] ^= 1 << data.draw(st.integers(0, 7))
        elif choice == 2:
            del blob[data.draw(st.integers(0, len(blob))) :]
        else:
            blob += data.draw(st.binary(max_size=64))
    return bytes(blob)


_SHAPES = st.tuples(
    st.sampled_from([None, 1, 8, 64, 30_000]),
    st.sampled_from([None, 1, 8, 64, 30_000]),
    st.sampled_from([None, 1, 2, 3, 4]),
)


@_FUZZ
@given(st.data())
def fuzz_images(data: st.DataObject) -> None:
    original = data.draw(st.sampled_from(_images()))
    blob = _mutated_bytes(original, data)
    dtype = data.draw(st.sampled_from(["uint8", "uint16", "float32"]))
    shape = data.draw(_SHAPES)
    if dtype == "float32":
        shape = (*shape[:2], 1)
    image = Image(shape, dtype)
    feature = Sequence(image) if data.draw(st.booleans()) else image
    features = FeaturesDict({"img": feature})
    record = encode({"img": [blob] * data.draw(st.integers(1, 3))})
    with contextlib.suppress(ReadplanError):
        features.decode(record, max_value_bytes=_CAP)


def test_mutated_images_raise_only_readplan_errors_within_a_memory_bound() -> None:
    run_bounded(
        "from tests.test_features_fuzz import fuzz_images; fuzz_images()",
        address_space=GIB,
        timeout=600,
    )


@functools.cache
def _bomb() -> bytes:
    """A 2 MB zlib stream of 2 GiB of zeros."""
    return _zeros_deflated(2**31)


@_FUZZ
@given(st.data())
def fuzz_encoded_tensors(data: st.DataObject) -> None:
    dataset = _DATASETS[1]
    features = load_features(dataset)
    assert features is not None
    record = data.draw(st.sampled_from(_records(dataset)))
    entries = decode_example(record)
    name = data.draw(st.sampled_from(sorted(entries)))
    values = entries[name]
    if isinstance(values, list) and values:
        index = data.draw(st.integers(0, len(values) - 1))
        if data.draw(st.integers(0, 4)) == 0:
            values[index] = _bomb()
        else:
            values[index] = _mutated_bytes(bytes(values[index]), data)
    else:
        entries[name] = data.draw(st.lists(st.integers(-(2**31), 2**31), max_size=5))
    with contextlib.suppress(ReadplanError):
        features.decode(encode(entries), max_value_bytes=_CAP)


def test_mutated_encoded_tensors_raise_only_readplan_errors_within_a_memory_bound() -> None:
    run_bounded(
        "from tests.test_features_fuzz import fuzz_encoded_tensors; fuzz_encoded_tensors()",
        address_space=GIB,
        timeout=600,
    )
