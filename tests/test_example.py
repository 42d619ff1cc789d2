"""Tests for readplan.example against TensorFlow-written records and an independent encoder.

Expected bytes come from specs/example.md's vectors or from the small wire writer of
tests/example_wire.py, written straight from the protobuf wire rules (tag varint, length,
payload); it shares no code with the module. A second, TensorFlow-style declaration of the
messages (``float`` values) lets the protobuf runtime itself judge readplan's output.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import json
import math
import re
import struct
import zlib
from dataclasses import FrozenInstanceError
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from hypothesis import example, given
from hypothesis import strategies as st

from readplan.errors import ConfigError, ExampleError
from readplan.example import FixedLen, VarLen, decode, encode, parse
from readplan.records import _example_pb
from tests import example_wire as wire
from tests.conftest import DATA
from tests.strategies import (
    FLOAT_BITS_PINS,
    INT64_MAX,
    INT64_MIN,
    SNAN,
    feature_dicts,
    int64s,
)

SPEC_PROTO = Path(__file__).parents[1] / "specs" / "example.proto"
MANIFEST = json.loads((DATA / "tfrecord" / "manifest.json").read_text(encoding="utf-8"))
EXAMPLE_FILES = sorted(name for name, info in MANIFEST["files"].items() if "examples" in info)


# --- values -------------------------------------------------------------------------------


def _f32(*bits: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.array(bits, dtype=np.uint32).view(np.float32)


def _i64(*values: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    return np.array(values, dtype=np.int64)


def _array(value: object, dtype: Any, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """``value`` after checking that it is an array of that dtype and shape."""
    assert isinstance(value, np.ndarray)
    assert value.dtype == np.dtype(dtype)
    assert value.shape == shape
    return value


def _float_bits(value: float) -> int:
    word: int = struct.unpack("<I", struct.pack("<f", value))[0]
    return word


# --- comparison ---------------------------------------------------------------------------


def _assert_same_features(actual: dict[str, Any], expected: dict[str, Any]) -> None:
    """Same keys (actual in sorted order), same kinds, bit-identical values."""
    assert list(actual) == sorted(expected)
    for key, want in expected.items():
        got = actual[key]
        if isinstance(want, list):
            assert type(got) is list, key
            assert all(type(v) is bytes for v in got), key
            assert got == want, key
        else:
            assert isinstance(got, np.ndarray), key
            assert got.dtype == want.dtype, key
            assert got.shape == want.shape, key
            unsigned = np.uint32 if want.dtype == np.float32 else np.uint64
            assert got.view(unsigned).tolist() == want.view(unsigned).tolist(), key


# --- TensorFlow-written records -----------------------------------------------------------


@functools.cache
def _records(name: str) -> tuple[bytes, ...]:
    """Payloads of a TFRecord file: 8-byte length, 4-byte CRC, data, 4-byte CRC."""
    data = (DATA / "tfrecord" / name).read_bytes()
    compression = MANIFEST["files"][name]["compression"]
    if compression == "GZIP":
        data = gzip.decompress(data)
    elif compression == "ZLIB":
        data = zlib.decompress(data)
    records = []
    position = 0
    while position < len(data):
        (length,) = struct.unpack_from("<Q", data, position)
        records.append(data[position + 12 : position + 12 + length])
        position += 16 + length
    return tuple(records)


def _expected_features(listed: dict[str, list[Any]]) -> dict[str, Any]:
    """The manifest's ``{key: [kind, values]}`` as decode should return it."""
    expected: dict[str, Any] = {}
    for key, (kind, values) in listed.items():
        if kind == "int64_list":
            expected[key] = np.array(values, dtype=np.int64)
        elif kind == "float_list":
            expected[key] = _f32(*(_float_bits(v) for v in values))
        else:
            assert kind == "bytes_list"
            expected[key] = [bytes.fromhex(v) for v in values]
    return expected


MANIFEST_CASES = [
    pytest.param(name, index, id=f"{name}-{index}")
    for name in EXAMPLE_FILES
    for index in range(len(MANIFEST["files"][name]["examples"]))
]


@pytest.mark.parametrize(("name", "index"), MANIFEST_CASES)
def test_tensorflow_records_decode_bit_exactly(name: str, index: int) -> None:
    info = MANIFEST["files"][name]
    raw = _records(name)[index]
    assert hashlib.sha256(raw).hexdigest() == info["records_sha256"][index]
    listed = info["examples"][index]
    expected = _expected_features(listed)
    nan_keys = [
        k for k, (kind, v) in listed.items() if kind == "float_list" and any(map(math.isnan, v))
    ]
    decoded = decode(raw)
    if nan_keys:
        # JSON keeps no NaN payload: compare NaN-ness there and every other value's bits.
        for key in nan_keys:
            got, want = decoded.pop(key), expected.pop(key)
            assert np.isnan(got).tolist() == np.isnan(want).tolist()
            finite = ~np.isnan(want)
            assert got[finite].view(np.uint32).tolist() == want[finite].view(np.uint32).tolist()
    _assert_same_features(decoded, expected)


@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_reencoding_tensorflow_records_gives_the_same_entries_in_sorted_order(name: str) -> None:
    # TensorFlow writes map entries in hash order; readplan writes the same entries, sorted.
    for raw in _records(name):
        ours = encode(decode(raw))
        assert len(ours) == len(raw)
        assert _split_entries(ours) == sorted(_split_entries(raw), key=_entry_key)


def _split_entries(raw: bytes) -> list[bytes]:
    """The serialized map entries of a canonical Example (one features field, short tags)."""
    if not raw:
        return []
    assert raw[0] == 0x0A
    body_start, body_length = _read_varint(raw, 1)
    body = raw[body_start : body_start + body_length]
    entries, position = [], 0
    while position < len(body):
        assert body[position] == 0x0A
        start, length = _read_varint(body, position + 1)
        entries.append(body[position : start + length])
        position = start + length
    return entries


def _entry_key(entry: bytes) -> bytes:
    start, _ = _read_varint(entry, 1)
    assert entry[start] == 0x0A
    key_start, key_length = _read_varint(entry, start + 1)
    return entry[key_start : key_start + key_length]


def _read_varint(data: bytes, position: int) -> tuple[int, int]:
    """(position after the varint, its value)."""
    value, shift = 0, 0
    while True:
        byte = data[position]
        value |= (byte & 0x7F) << shift
        position += 1
        shift += 7
        if not byte & 0x80:
            return position, value


TOY_DIR = DATA / "tfds" / "readplan_toy" / "1.0.0"
TOY_SHARDS = sorted(path.name for path in TOY_DIR.glob("*.tfrecord-*"))


@functools.cache
def _toy_ids() -> dict[tuple[str, int, int], int]:
    orders = json.loads((DATA / "tfds" / "readplan_toy_orders.json").read_text(encoding="utf-8"))
    return {
        (split, shard, index): example_id
        for case in orders["cases"]
        for epoch in case["epochs"]
        for split, shard, index, example_id in epoch
    }


def _plain_records(path: Path) -> list[bytes]:
    data = path.read_bytes()
    records, position = [], 0
    while position < len(data):
        (length,) = struct.unpack_from("<Q", data, position)
        records.append(data[position + 12 : position + 12 + length])
        position += 16 + length
    return records


@pytest.mark.parametrize("shard", TOY_SHARDS)
def test_tfds_shard_ids_parse_as_tfds_reports_them(shard: str) -> None:
    split = shard.split("-")[1].split(".")[0]
    shard_index = int(shard.rsplit("-", 3)[1])
    schema = {"id": FixedLen((), np.int64), "payload": FixedLen((), "bytes")}
    records = _plain_records(TOY_DIR / shard)
    assert records
    for index, raw in enumerate(records):
        parsed = parse(raw, schema)
        assert type(parsed["id"]) is np.int64
        assert parsed["id"] == _toy_ids()[(split, shard_index, index)]
        assert type(parsed["payload"]) is bytes


# --- the object-detection schema ----------------------------------------------------------

DETECTION_SCHEMA: dict[str, FixedLen | VarLen] = {
    "image": FixedLen((), "bytes"),
    "image_name": FixedLen((), "bytes"),
    "width": FixedLen((), "int64"),
    "height": FixedLen((), "int64"),
    "objects": VarLen("int64"),
    "bboxes": VarLen("float32", shape=(-1, 4)),
}


def test_object_detection_record_encodes_and_parses() -> None:
    boxes = np.array([[0.1, 0.2, 0.5, 0.6], [0.0, 0.0, 1.0, 1.0]], dtype=np.float32)
    raw = encode(
        {
            "image": b"\xff\xd8jpeg",
            "image_name": "img_0.jpg",
            "width": 640,
            "height": np.int64(480),
            "objects": np.array([3, 17], dtype=np.int64),
            "bboxes": boxes,
        }
    )
    assert raw == wire.example(
        wire.entry("bboxes", wire.float_feature(*boxes.reshape(-1).view(np.uint32).tolist())),
        wire.entry("height", wire.int64_feature(480)),
        wire.entry("image", wire.bytes_feature(b"\xff\xd8jpeg")),
        wire.entry("image_name", wire.bytes_feature(b"img_0.jpg")),
        wire.entry("objects", wire.int64_feature(3, 17)),
        wire.entry("width", wire.int64_feature(640)),
    )
    parsed = parse(raw, DETECTION_SCHEMA)
    assert list(parsed) == list(DETECTION_SCHEMA)
    assert parsed["image"] == b"\xff\xd8jpeg"
    assert parsed["image_name"] == b"img_0.jpg"
    assert type(parsed["width"]) is np.int64
    assert parsed["width"] == 640
    assert type(parsed["height"]) is np.int64
    assert parsed["height"] == 480
    assert _array(parsed["objects"], np.int64, (2,)).tolist() == [3, 17]
    bboxes = _array(parsed["bboxes"], np.float32, (2, 4))
    assert bboxes.view(np.uint32).tolist() == boxes.view(np.uint32).tolist()


@pytest.mark.parametrize(("name", "index"), MANIFEST_CASES)
def test_tensorflow_detection_records_parse(name: str, index: int) -> None:
    schema: dict[str, FixedLen | VarLen] = {
        "image/encoded": FixedLen((), bytes),
        "image/name": FixedLen((), bytes),
        "width": FixedLen((), np.int64),
        "height": FixedLen((), np.int64),
        "objects": VarLen(np.int64),
        "bboxes": VarLen(np.float32, shape=(-1, 4)),
        "absent": VarLen("float32", shape=(-1, 4)),
    }
    listed = MANIFEST["files"][name]["examples"][index]
    parsed = parse(_records(name)[index], schema)
    assert parsed["image/encoded"] == bytes.fromhex(listed["image/encoded"][1][0])
    assert parsed["image/name"] == bytes.fromhex(listed["image/name"][1][0])
    assert parsed["width"] == listed["width"][1][0]
    assert parsed["height"] == listed["height"][1][0]
    objects = listed["objects"][1]
    assert _array(parsed["objects"], np.int64, (len(objects),)).tolist() == objects
    boxes = _array(parsed["bboxes"], np.float32, (len(listed["bboxes"][1]) // 4, 4))
    assert boxes.reshape(-1).view(np.uint32).tolist() == [
        _float_bits(v) for v in listed["bboxes"][1]
    ]
    _array(parsed["absent"], np.float32, (0, 4))


# --- the notes' wire vectors --------------------------------------------------------------

WIRE_VECTORS = [
    pytest.param(
        {"a": _i64(1, -1, 300), "b": _f32(_float_bits(1.5)), "c": [b"hi"]},
        "0a340a160a016112111a0f0a0d01ffffffffffffffffff01ac020a0d0a0162120812060a04"
        "0000c03f0a0b0a016312060a040a026869",
        id="abc",
    ),
    pytest.param({"x": _i64(7)}, "0a0c0a0a0a017812051a030a0107", id="x7"),
    pytest.param({"e": []}, "0a090a070a016512020a00", id="empty-bytes"),
    pytest.param({}, "", id="empty-example"),
]


@pytest.mark.parametrize(("features", "hex_bytes"), WIRE_VECTORS)
def test_wire_vectors_encode_exactly(features: dict[str, Any], hex_bytes: str) -> None:
    assert encode(features).hex() == hex_bytes
    # Insertion order must not matter.
    assert encode(dict(reversed(list(features.items())))).hex() == hex_bytes


@pytest.mark.parametrize(("features", "hex_bytes"), WIRE_VECTORS)
def test_wire_vectors_decode(features: dict[str, Any], hex_bytes: str) -> None:
    _assert_same_features(decode(bytes.fromhex(hex_bytes)), features)


def test_unpacked_vector_decodes() -> None:
    _assert_same_features(
        decode(bytes.fromhex("0a0d0a0b0a017812061a0408070809")), {"x": _i64(7, 9)}
    )


# --- decoding rules -----------------------------------------------------------------------

DECODING_CASES = [
    pytest.param(
        wire.example(
            wire.entry("x", wire.int64_feature(1)), wire.entry("x", wire.int64_feature(2, 3))
        ),
        {"x": _i64(2, 3)},
        id="duplicate-key-last-wins",
    ),
    pytest.param(
        wire.example(
            wire.entry("x", wire.int64_feature(1)), wire.entry("x", wire.bytes_feature(b"q"))
        ),
        {"x": [b"q"]},
        id="duplicate-key-other-kind-last-wins",
    ),
    pytest.param(
        wire.example(wire.entry("x", wire.int64_feature(1) + wire.bytes_feature(b"q"))),
        {"x": [b"q"]},
        id="two-kinds-in-one-feature-last-wins",
    ),
    pytest.param(
        wire.example(wire.entry("x", wire.int64_feature(1) + wire.int64_feature(2))),
        {"x": _i64(1, 2)},
        id="same-list-twice-merges",
    ),
    pytest.param(
        wire.example(wire.entry("x", wire.int64_feature(1)))
        + wire.example(wire.entry("y", wire.bytes_feature(b"z"))),
        {"x": _i64(1), "y": [b"z"]},
        id="two-features-fields-merge",
    ),
    pytest.param(
        wire.example(wire.entry("x", wire.int64_feature(7, -1, packed=False))),
        {"x": _i64(7, -1)},
        id="unpacked-int64",
    ),
    pytest.param(
        wire.example(wire.entry("f", wire.float_feature(SNAN, 0x80000000, packed=False))),
        {"f": _f32(SNAN, 0x80000000)},
        id="unpacked-float",
    ),
    pytest.param(
        wire.example(
            wire.entry(
                "x", wire.len_field(3, b"\x08\x07" + wire.len_field(1, b"\x01\x02") + b"\x08\x09")
            )
        ),
        {"x": _i64(7, 1, 2, 9)},
        id="packed-between-unpacked",
    ),
    pytest.param(
        wire.example(wire.entry("x", wire.int64_feature(1) + b"\x20\x05"))
        + b"\x10\x05"
        + wire.len_field(9, b"?"),
        {"x": _i64(1)},
        id="unknown-fields-skipped",
    ),
    pytest.param(
        wire.example(wire.entry("k", b""), wire.entry("x", wire.int64_feature(1))),
        {"x": _i64(1)},
        id="feature-without-kind-left-out",
    ),
    pytest.param(
        wire.example(
            wire.len_field(1, wire.len_field(1, b"k")), wire.entry("x", wire.int64_feature(1))
        ),
        {"x": _i64(1)},
        id="entry-without-value-left-out",
    ),
    pytest.param(
        wire.example(wire.len_field(1, wire.len_field(2, wire.int64_feature(4)))),
        {"": _i64(4)},
        id="entry-without-key-is-empty-name",
    ),
    pytest.param(
        wire.example(
            wire.entry("i", wire.len_field(3, b"")),
            wire.entry("f", wire.len_field(2, b"")),
            wire.entry("b", wire.len_field(1, b"")),
        ),
        {"i": _i64(), "f": _f32(), "b": []},
        id="empty-lists-keep-kinds",
    ),
    pytest.param(
        wire.example(
            wire.entry("naïve/ключ", wire.float_feature(0x7F800000, 0x80000000, 0x00000001)),
            wire.entry("neg", wire.int64_feature(INT64_MIN, INT64_MAX, -1)),
        ),
        {"naïve/ключ": _f32(0x7F800000, 0x80000000, 1), "neg": _i64(INT64_MIN, INT64_MAX, -1)},
        id="extremes",
    ),
]


@pytest.mark.parametrize(("raw", "expected"), DECODING_CASES)
def test_decoding_rules(raw: bytes, expected: dict[str, Any]) -> None:
    _assert_same_features(decode(raw), expected)


MALFORMED = [
    pytest.param(b"\x0a", id="truncated-length"),
    pytest.param(b"\x0a\x05\x0a\x03", id="truncated-body"),
    pytest.param(b"\xff\xff", id="bad-tag"),
    pytest.param(wire.example(wire.entry(b"\xff", wire.int64_feature(1))), id="key-not-utf8"),
    pytest.param(
        wire.example(wire.entry("x", wire.len_field(2, wire.len_field(1, b"\0\0\x80")))),
        id="float-3-bytes",
    ),
    pytest.param(
        wire.example(wire.entry("x", wire.len_field(3, wire.len_field(1, b"\xff" * 10 + b"\x01")))),
        id="varint-11-bytes",
    ),
    pytest.param(b"\x13" * 200 + b"\x14" * 200, id="groups-too-deep"),
    pytest.param(b"\x0a\x02\x0a\x05", id="entry-overruns-parent"),
]


@pytest.mark.parametrize("raw", MALFORMED)
def test_malformed_input_raises_example_error(raw: bytes) -> None:
    with pytest.raises(ExampleError, match=r"not a serialized tf\.train\.Example") as caught:
        decode(raw)
    assert caught.value.key is None
    with pytest.raises(ExampleError):
        parse(raw, {"x": VarLen("int64")})


def test_decode_accepts_bytes_like_input() -> None:
    raw = bytes.fromhex("0a0c0a0a0a017812051a030a0107")
    for view in (bytearray(raw), memoryview(raw)):
        _assert_same_features(decode(view), {"x": _i64(7)})  # type: ignore[arg-type]


# --- pinned examples ----------------------------------------------------------------------

PINNED_DICTS: list[dict[str, Any]] = [
    {},
    {"e": []},
    {"i": _i64(), "f": _f32(), "b": []},
    {"naïve/ключ": _f32(SNAN, 0x80000000, 0x7F800000, 1), "neg": _i64(INT64_MIN, INT64_MAX)},
    {"": [b""], "\U0001f600": [b"\x00\xff"]},
    {"image": [b"jpeg"], "image_name": [b"a.jpg"], "": _i64(1), "\x00": _i64(2)},
    {"long_i": _i64(INT64_MIN, *range(-50, 50), INT64_MAX), "long_f": _f32(*FLOAT_BITS_PINS * 10)},
]


QUIET_PINNED_DICTS: list[dict[str, Any]] = [
    {},
    {"e": []},
    {"i": _i64(), "f": _f32(), "b": []},
    {"naïve/ключ": _f32(0x7FC00001, 0x80000000, 0x7F800000, 1), "neg": _i64(INT64_MIN, INT64_MAX)},
    {"image": [b"jpeg"], "image_name": [b"a.jpg"], "": _i64(1), "\x00": _i64(2)},
]


def _with_pins(test: Any, pins: list[dict[str, Any]] = PINNED_DICTS) -> Any:
    for pinned in pins:
        test = example(pinned)(test)
    return test


# --- properties ---------------------------------------------------------------------------


@given(feature_dicts())
@_with_pins
def test_decode_inverts_encode(features: dict[str, Any]) -> None:
    _assert_same_features(decode(encode(features)), features)


@given(feature_dicts())
@_with_pins
def test_encode_ignores_insertion_order(features: dict[str, Any]) -> None:
    assert encode(dict(reversed(list(features.items())))) == encode(features)


@given(
    st.lists(int64s, max_size=40),
    st.lists(st.sampled_from(FLOAT_BITS_PINS) | st.integers(0, 2**32 - 1), max_size=40),
)
@example([7, 9], [SNAN])
@example(list(range(-20, 20)), FLOAT_BITS_PINS * 4)
def test_unpacked_lists_decode_like_packed(ints: list[int], bits: list[int]) -> None:
    raw = wire.example(
        wire.entry("f", wire.float_feature(*bits, packed=False)),
        wire.entry("i", wire.int64_feature(*ints, packed=False)),
    )
    _assert_same_features(decode(raw), {"f": _f32(*bits), "i": _i64(*ints)})


@given(st.binary(max_size=64))
@example(b"")
@example(b"\x0a\x00")
@example(b"\x0a\x04\x0a\x02\x0a\x00")
def test_decode_raises_only_example_error_on_arbitrary_bytes(raw: bytes) -> None:
    with contextlib.suppress(ExampleError):
        decode(raw)
    with contextlib.suppress(ExampleError):
        parse(raw, {"x": VarLen("int64"), "y": FixedLen((), "float32", default=0.0)})


@given(feature_dicts(), st.data())
def test_decode_raises_only_example_error_on_damaged_records(
    features: dict[str, Any], data: st.DataObject
) -> None:
    raw = bytearray(encode(features))
    for _ in range(data.draw(st.integers(1, 3))):
        if not raw:
            break
        position = data.draw(st.integers(0, len(raw) - 1))
        raw[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    with contextlib.suppress(ExampleError):
        decode(bytes(raw[:cut]))


# --- the protobuf runtime, with TensorFlow's declaration, as a judge ----------------------

_TF_DECLARATION = """
name: "judge/example.proto" package: "judge" syntax: "proto3"
message_type { name: "Example"
  field { name: "features" number: 1 label: LABEL_OPTIONAL type: TYPE_MESSAGE
          type_name: ".judge.Features" } }
message_type { name: "Features"
  field { name: "feature" number: 1 label: LABEL_REPEATED type: TYPE_MESSAGE
          type_name: ".judge.Features.FeatureEntry" }
  nested_type { name: "FeatureEntry" options { map_entry: true }
    field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
    field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE
            type_name: ".judge.Feature" } } }
message_type { name: "Feature" oneof_decl { name: "kind" }
  field { name: "bytes_list" number: 1 label: LABEL_OPTIONAL type: TYPE_MESSAGE
          type_name: ".judge.BytesList" oneof_index: 0 }
  field { name: "float_list" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE
          type_name: ".judge.FloatList" oneof_index: 0 }
  field { name: "int64_list" number: 3 label: LABEL_OPTIONAL type: TYPE_MESSAGE
          type_name: ".judge.Int64List" oneof_index: 0 } }
message_type { name: "BytesList"
  field { name: "value" number: 1 label: LABEL_REPEATED type: TYPE_BYTES } }
message_type { name: "FloatList"
  field { name: "value" number: 1 label: LABEL_REPEATED type: TYPE_FLOAT
          options { packed: true } } }
message_type { name: "Int64List"
  field { name: "value" number: 1 label: LABEL_REPEATED type: TYPE_INT64
          options { packed: true } } }
"""


@functools.cache
def _judge_example() -> Any:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(text_format.Parse(_TF_DECLARATION, descriptor_pb2.FileDescriptorProto()))
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("judge.Example"))


@given(feature_dicts())
@_with_pins
def test_runtime_with_tensorflow_declaration_reads_encode_output(features: dict[str, Any]) -> None:
    judged = _judge_example().FromString(encode(features)).features.feature
    assert sorted(judged) == sorted(features)
    for key, want in features.items():
        kind = judged[key].WhichOneof("kind")
        values = getattr(judged[key], kind).value
        if isinstance(want, list):
            assert kind == "bytes_list"
            assert list(values) == want
        elif want.dtype == np.int64:
            assert kind == "int64_list"
            assert list(values) == want.tolist()
        else:
            assert kind == "float_list"
            # A Python float cannot carry a signalling NaN, so NaNs compare by NaN-ness only.
            got = np.array(values, dtype=np.float32)
            assert np.isnan(got).tolist() == np.isnan(want).tolist()
            finite = ~np.isnan(want)
            assert got[finite].view(np.uint32).tolist() == want[finite].view(np.uint32).tolist()


@given(feature_dicts(signalling_nans=False))
@functools.partial(_with_pins, pins=QUIET_PINNED_DICTS)
def test_runtime_with_tensorflow_declaration_writes_the_same_entries(
    features: dict[str, Any],
) -> None:
    # Without signalling NaNs (which a Python float cannot carry), the runtime given the same
    # values writes exactly readplan's map entries. (Its own deterministic order differs from
    # sorted order for names that prefix each other, so the order is checked separately.)
    message = _judge_example()()
    for key, values in features.items():
        if isinstance(values, list):
            target = message.features.feature[key].bytes_list
        elif values.dtype == np.int64:
            target = message.features.feature[key].int64_list
        else:
            target = message.features.feature[key].float_list
        target.SetInParent()
        target.value.extend(values if isinstance(values, list) else values.tolist())
    judged = message.SerializeToString(deterministic=True)
    assert _split_entries(encode(features)) == sorted(_split_entries(judged), key=_entry_key)


@given(feature_dicts())
@_with_pins
def test_encode_writes_entries_in_code_point_order(features: dict[str, Any]) -> None:
    names = [_entry_key(entry).decode("utf-8") for entry in _split_entries(encode(features))]
    assert names == sorted(features)


# --- encoding: kinds and refusals ---------------------------------------------------------

ENCODE_KINDS = [
    pytest.param([1, 2], wire.int64_feature(1, 2), id="int-list"),
    pytest.param((True, 2, np.int8(-3)), wire.int64_feature(1, 2, -3), id="bools-count-as-ints"),
    pytest.param(range(3), wire.int64_feature(0, 1, 2), id="range"),
    pytest.param(
        [1, 2.5], wire.float_feature(_float_bits(1.0), _float_bits(2.5)), id="numbers-with-float"
    ),
    pytest.param([0.1], wire.float_feature(_float_bits(0.1)), id="float-rounded-to-float32"),
    pytest.param(7, wire.int64_feature(7), id="int-scalar"),
    pytest.param(2.5, wire.float_feature(_float_bits(2.5)), id="float-scalar"),
    pytest.param(np.float32(1.5), wire.float_feature(_float_bits(1.5)), id="numpy-float-scalar"),
    pytest.param(np.int64(INT64_MIN), wire.int64_feature(INT64_MIN), id="numpy-int-scalar"),
    pytest.param(
        np.array([[1, 2], [3, 4]], dtype=np.int32), wire.int64_feature(1, 2, 3, 4), id="2d-int32"
    ),
    pytest.param(np.array([True, False]), wire.int64_feature(1, 0), id="bool-array"),
    pytest.param(
        np.array([INT64_MAX], dtype=np.uint64), wire.int64_feature(INT64_MAX), id="uint64-max"
    ),
    pytest.param(
        np.array([1.0, 1e300, -1e300]),
        wire.float_feature(_float_bits(1.0), 0x7F800000, 0xFF800000),
        id="float64-rounds-out-of-range-to-inf",
    ),
    pytest.param(
        np.array([1.5], dtype=np.float16), wire.float_feature(_float_bits(1.5)), id="float16"
    ),
    pytest.param(_f32(SNAN), wire.float_feature(SNAN), id="signalling-nan-kept"),
    pytest.param(b"x", wire.bytes_feature(b"x"), id="bytes-scalar"),
    pytest.param(bytearray(b"\x00"), wire.bytes_feature(b"\x00"), id="bytearray"),
    pytest.param("é", wire.bytes_feature("é".encode()), id="str-utf8"),
    pytest.param([b"a", "б"], wire.bytes_feature(b"a", "б".encode()), id="mixed-bytes-str"),
    pytest.param(np.array(["a", "bc"]), wire.bytes_feature(b"a", b"bc"), id="unicode-array"),
    pytest.param(np.array([b"a", b"bc"]), wire.bytes_feature(b"a", b"bc"), id="bytes-array"),
    pytest.param(
        np.array([b"\x00", "y"], dtype=object), wire.bytes_feature(b"\x00", b"y"), id="object-array"
    ),
    pytest.param([], wire.len_field(1, b""), id="empty-list-is-bytes"),
    pytest.param(np.array([], dtype=np.int64), wire.len_field(3, b""), id="empty-int64"),
    pytest.param(np.array([], dtype=np.float32), wire.len_field(2, b""), id="empty-float32"),
    pytest.param(np.array([], dtype=object), wire.len_field(1, b""), id="empty-object"),
]


@pytest.mark.parametrize(("value", "feature"), ENCODE_KINDS)
def test_encode_kinds(value: Any, feature: bytes) -> None:
    assert encode({"k": value}) == wire.example(wire.entry("k", feature))


ENCODE_ERRORS = [
    pytest.param(
        {"k": [1, b"x"]}, "k", "only ints, only real numbers or only bytes/str", id="mixed"
    ),
    pytest.param({"k": [[1, 2]]}, "k", "holds list", id="nested-list"),
    pytest.param({"k": [1j]}, "k", "holds complex", id="complex-in-list"),
    pytest.param({"k": {"a": 1}}, "k", "cannot encode a dict", id="dict"),
    pytest.param({"k": None}, "k", "cannot encode a NoneType", id="none"),
    pytest.param(
        {"k": np.array([1j])}, "k", "complex128 has no tf.train.Example list", id="complex"
    ),
    pytest.param(
        {"k": np.array([2**64 - 1], dtype=np.uint64)},
        "k",
        "18446744073709551615 does not fit",
        id="uint64",
    ),
    pytest.param({"k": [2**63]}, "k", "9223372036854775808 does not fit", id="int-too-big"),
    pytest.param(
        {"k": [INT64_MIN - 1]}, "k", "-9223372036854775809 does not fit", id="int-too-small"
    ),
    pytest.param(
        {"k": [1.5, 10**400]}, "k", "0... is too large for a float", id="int-beyond-float"
    ),
    pytest.param({"k": "\ud800"}, "k", "not valid UTF-8", id="surrogate-value"),
    pytest.param({"\udfff": [b"x"]}, "\udfff", "not valid UTF-8", id="surrogate-name"),
    pytest.param({b"k": [b"x"]}, None, "must be str, got b'k'", id="bytes-name"),
]


@pytest.mark.parametrize(("features", "key", "fragment"), ENCODE_ERRORS)
def test_encode_refuses(features: dict[Any, Any], key: str | None, fragment: str) -> None:
    with pytest.raises(ExampleError, match=re.escape(fragment)) as caught:
        encode(features)
    assert caught.value.key == key


# --- parsing against a schema -------------------------------------------------------------

PARSE_RECORD = wire.example(
    wire.entry("b2", wire.bytes_feature(b"p", b"q")),
    wire.entry("empty_b", wire.len_field(1, b"")),
    wire.entry("empty_i", wire.len_field(3, b"")),
    wire.entry("f1", wire.float_feature(SNAN)),
    wire.entry("f8", wire.float_feature(*range(8))),
    wire.entry("i6", wire.int64_feature(1, 2, 3, 4, 5, 6)),
    wire.entry("kindless", b""),
    wire.entry("s", wire.bytes_feature(b"only")),
)


def _kindless_and_missing(spec: FixedLen | VarLen) -> list[Any]:
    return [parse(PARSE_RECORD, {key: spec})[key] for key in ("kindless", "missing")]


def test_parse_fixed_shapes_and_types() -> None:
    parsed = parse(
        PARSE_RECORD,
        {
            "i6": FixedLen((2, 3), "int64"),
            "f1": FixedLen((), "float32"),
            "s": FixedLen((), "bytes"),
            "b2": FixedLen((2, 1), "bytes"),
            "empty_i": FixedLen((0,), "int64"),
        },
    )
    assert list(parsed) == ["i6", "f1", "s", "b2", "empty_i"]
    assert _array(parsed["i6"], np.int64, (2, 3)).tolist() == [[1, 2, 3], [4, 5, 6]]
    f1 = parsed["f1"]
    assert type(f1) is np.float32
    assert np.array(f1).view(np.uint32).item() == SNAN
    assert parsed["s"] == b"only"
    assert _array(parsed["b2"], object, (2, 1)).tolist() == [[b"p"], [b"q"]]
    _array(parsed["empty_i"], np.int64, (0,))


def test_parse_var_shapes_and_types() -> None:
    parsed = parse(
        PARSE_RECORD,
        {
            "f8": VarLen("float32", shape=(-1, 2, 2)),
            "i6": VarLen("int64"),
            "b2": VarLen("bytes"),
            "empty_b": VarLen("bytes", shape=(-1, 3)),
        },
    )
    f8 = _array(parsed["f8"], np.float32, (2, 2, 2))
    assert f8.reshape(-1).view(np.uint32).tolist() == list(range(8))
    assert _array(parsed["i6"], np.int64, (6,)).tolist() == [1, 2, 3, 4, 5, 6]
    assert _array(parsed["b2"], object, (2,)).tolist() == [b"p", b"q"]
    _array(parsed["empty_b"], object, (0, 3))


def test_parse_treats_a_feature_without_kind_as_missing() -> None:
    for value in _kindless_and_missing(VarLen("int64", shape=(-1, 2))):
        _array(value, np.int64, (0, 2))
    for value in _kindless_and_missing(FixedLen((2,), "bytes", default=["d", b"e"])):
        assert _array(value, object, (2,)).tolist() == [b"d", b"e"]
    for value in _kindless_and_missing(FixedLen((), "float32", default=-0.0)):
        assert type(value) is np.float32
        assert np.array(value).view(np.uint32).item() == 0x80000000
    for value in _kindless_and_missing(FixedLen((1, 2), "int64", default=[[5, 6]])):
        assert _array(value, np.int64, (1, 2)).tolist() == [[5, 6]]


PARSE_ERRORS = [
    pytest.param("missing", FixedLen((), "int64"), "is missing from the example", id="missing"),
    pytest.param("kindless", FixedLen((), "int64"), "is missing from the example", id="kindless"),
    pytest.param("missing", FixedLen((0,), "int64"), "has no default", id="missing-size-0"),
    pytest.param(
        "f1", FixedLen((), "int64"), "is a float_list but the schema asks for int64", id="kind"
    ),
    pytest.param(
        "i6", VarLen("float32"), "is a int64_list but the schema asks for float32", id="var-kind"
    ),
    pytest.param(
        "empty_b", VarLen("int64"), "is a bytes_list but the schema asks for int64", id="empty-kind"
    ),
    pytest.param("empty_b", FixedLen((0,), "int64"), "is a bytes_list", id="empty-kind-fixed"),
    pytest.param(
        "i6",
        FixedLen((2,), "int64"),
        "has 6 int64 values but FixedLen shape (2,) needs 2",
        id="count",
    ),
    pytest.param("empty_i", FixedLen((), "int64"), "has 0 int64 values", id="present-empty"),
    pytest.param(
        "empty_i",
        FixedLen((), "int64", default=3),
        "has 0 int64 values",
        id="present-empty-default",
    ),
    pytest.param(
        "i6", VarLen("int64", shape=(-1, 4)), "6 int64 values, which do not split", id="rows"
    ),
]


@pytest.mark.parametrize(("key", "spec", "fragment"), PARSE_ERRORS)
def test_parse_errors_name_the_feature(key: str, spec: FixedLen | VarLen, fragment: str) -> None:
    with pytest.raises(ExampleError, match=re.escape(fragment)) as caught:
        parse(PARSE_RECORD, {"s": VarLen("bytes"), key: spec})
    assert caught.value.key == key
    assert repr(key) in str(caught.value)


def test_parse_refuses_a_schema_entry_of_another_type() -> None:
    with pytest.raises(ConfigError, match="to a FixedLen or a VarLen") as caught:
        parse(PARSE_RECORD, {"s": "bytes"})  # type: ignore[dict-item]
    assert caught.value.field == "s"
    with pytest.raises(ConfigError, match="str feature name") as caught:
        parse(PARSE_RECORD, {b"s": VarLen("bytes")})  # type: ignore[dict-item]
    assert caught.value.field == "b's'"


@given(feature_dicts())
@_with_pins
def test_parse_with_varlen_reads_what_decode_reads(features: dict[str, Any]) -> None:
    schema = {
        key: VarLen("bytes" if isinstance(v, list) else str(v.dtype)) for key, v in features.items()
    }
    parsed = parse(encode(features), schema)
    assert list(parsed) == list(features)
    for key, want in features.items():
        if isinstance(want, list):
            assert _array(parsed[key], object, (len(want),)).tolist() == want
        else:
            got = _array(parsed[key], want.dtype, want.shape)
            assert got.tobytes() == want.tobytes()


# --- schema validation --------------------------------------------------------------------

DTYPE_SPELLINGS = [
    ("int64", "int64"),
    (np.int64, "int64"),
    (np.dtype("int64"), "int64"),
    ("float32", "float32"),
    (np.float32, "float32"),
    (np.dtype(np.float32), "float32"),
    ("bytes", "bytes"),
    (bytes, "bytes"),
    (np.bytes_, "bytes"),
    (np.dtype("S"), "bytes"),
]


@pytest.mark.parametrize(("spelling", "name"), DTYPE_SPELLINGS)
def test_dtype_spellings_normalise_to_names(spelling: Any, name: str) -> None:
    assert FixedLen((), spelling).dtype == name
    assert VarLen(spelling).dtype == name


def test_schema_entries_are_frozen_and_normalised() -> None:
    fixed = FixedLen([2], np.int64, default=[np.int16(1), 2])  # type: ignore[arg-type]
    assert fixed == FixedLen((2,), "int64", default=(1, 2))
    assert fixed.shape == (2,)
    assert fixed.default == (1, 2)
    assert VarLen("bytes").shape == (-1,)
    with pytest.raises(FrozenInstanceError):
        fixed.shape = (3,)  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        VarLen("bytes").dtype = "int64"  # type: ignore[misc]


BAD_SCHEMAS = [
    pytest.param(FixedLen, ((-1,), "int64"), {}, "shape", "unknown dimension", id="fixed-minus-1"),
    pytest.param(FixedLen, ((None,), "int64"), {}, "shape", "not a tuple of ints", id="fixed-none"),
    pytest.param(FixedLen, (3, "int64"), {}, "shape", "not a tuple of ints", id="fixed-int"),
    pytest.param(FixedLen, ("3", "int64"), {}, "shape", "not a tuple of ints", id="fixed-str"),
    pytest.param(FixedLen, ((), "float64"), {}, "dtype", "'float64' is not", id="float64"),
    pytest.param(FixedLen, ((), np.float64), {}, "dtype", "is not a tf.train", id="np-float64"),
    pytest.param(FixedLen, ((), str), {}, "dtype", "is not a tf.train.Example type", id="str"),
    pytest.param(FixedLen, ((), "string"), {}, "dtype", "'string' is not", id="string"),
    pytest.param(VarLen, (None,), {}, "dtype", "None is not", id="none"),
    pytest.param(VarLen, ("int64",), {"shape": (4,)}, "shape", "must be (-1, *inner)", id="var-4"),
    pytest.param(VarLen, ("int64",), {"shape": ()}, "shape", "must be (-1, *inner)", id="var-()"),
    pytest.param(
        VarLen, ("int64",), {"shape": (-1, 0)}, "shape", "inner dimension >= 1", id="var-0"
    ),
    pytest.param(
        VarLen, ("int64",), {"shape": (-1, -1)}, "shape", "must be (-1, *", id="var-2-unknown"
    ),
    pytest.param(
        FixedLen,
        ((3,), "int64"),
        {"default": 5},
        "default",
        "holds 1 values but shape (3,) needs 3",
        id="scalar-default",
    ),
    pytest.param(
        FixedLen, ((), "int64"), {"default": 1.5}, "default", "do not convert", id="float-for-int"
    ),
    pytest.param(
        FixedLen, ((), "int64"), {"default": 2**63}, "default", "do not convert", id="too-big"
    ),
    pytest.param(
        FixedLen, ((), "float32"), {"default": "x"}, "default", "do not convert", id="str-for-float"
    ),
    pytest.param(
        FixedLen, ((), "bytes"), {"default": 1}, "default", "not bytes or str", id="int-for-bytes"
    ),
    pytest.param(
        FixedLen,
        ((2,), "int64"),
        {"default": [[1], [2, 3]]},
        "default",
        "not a regular array",
        id="ragged",
    ),
]


@pytest.mark.parametrize(("cls", "args", "kwargs", "field", "fragment"), BAD_SCHEMAS)
def test_invalid_schema_entries_are_refused(
    cls: type[Any], args: tuple[Any, ...], kwargs: dict[str, Any], field: str, fragment: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(fragment)) as caught:
        cls(*args, **kwargs)
    assert caught.value.field == field


# --- the descriptor agrees with specs/example.proto ---------------------------------------


def _spec_fields() -> dict[str, set[tuple[Any, ...]]]:
    """{message: {(name, number, type, label, packed, oneof)}} for the .proto's messages."""
    text = re.sub(r"//[^\n]*", "", SPEC_PROTO.read_text(encoding="utf-8"))
    assert re.search(r'syntax = "proto3";', text)
    assert re.search(r"\npackage readplan\.example;", text)
    field_pattern = re.compile(
        r"(repeated )?(map<\w+, \w+>|\w+) (\w+) = (\d+)( \[packed = true\])?;"
    )
    messages: dict[str, set[tuple[Any, ...]]] = {}
    for name, body in re.findall(r"\nmessage (\w+) \{(.*?)\n\}", text, re.S):
        oneofs = {
            member: oneof
            for oneof, block in re.findall(r"oneof (\w+) \{(.*?)\}", body, re.S)
            for member in re.findall(r"\w+ (\w+) = \d+;", block)
        }
        messages[name] = {
            (
                field,
                int(number),
                type_,
                "repeated" if repeated else "",
                bool(packed),
                oneofs.get(field),
            )
            for repeated, type_, field, number, packed in field_pattern.findall(body)
        }
    return messages


def _descriptor_fields(
    proto: descriptor_pb2.FileDescriptorProto,
) -> dict[str, set[tuple[Any, ...]]]:
    field_type = descriptor_pb2.FieldDescriptorProto
    messages: dict[str, set[tuple[Any, ...]]] = {}
    for message in proto.message_type:
        entries = {
            nested.name: nested for nested in message.nested_type if nested.options.map_entry
        }
        fields = set()
        for field in message.field:
            short = field.type_name.rsplit(".", 1)[-1]
            oneof = (
                message.oneof_decl[field.oneof_index].name
                if field.HasField("oneof_index")
                else None
            )
            if short in entries:
                key, value = (_type_name(f) for f in entries[short].field)
                fields.add((field.name, field.number, f"map<{key}, {value}>", "", False, oneof))
                continue
            repeated = "repeated" if field.label == field_type.LABEL_REPEATED else ""
            fields.add(
                (field.name, field.number, _type_name(field), repeated, field.options.packed, oneof)
            )
        messages[message.name] = fields
    return messages


def _type_name(field: descriptor_pb2.FieldDescriptorProto) -> str:
    if field.type == descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE:
        return field.type_name.rsplit(".", 1)[-1]
    return descriptor_pb2.FieldDescriptorProto.Type.Name(field.type)[len("TYPE_") :].lower()


def test_descriptor_matches_the_spec_proto() -> None:
    spec = _spec_fields()
    assert set(spec) == {"Example", "Features", "Feature", "BytesList", "FloatList", "Int64List"}
    assert _descriptor_fields(_example_pb.FILE) == spec
    assert _example_pb.FILE.package == "readplan.example"
    assert _example_pb.FILE.syntax == "proto3"


def test_messages_live_in_a_private_pool() -> None:
    built = descriptor_pb2.FileDescriptorProto()
    _example_pb.Example.DESCRIPTOR.file.CopyToProto(built)
    assert built == _example_pb.FILE
    assert _example_pb.Example.DESCRIPTOR.full_name == "readplan.example.Example"
    with pytest.raises(KeyError):
        descriptor_pool.Default().FindMessageTypeByName("readplan.example.Example")
