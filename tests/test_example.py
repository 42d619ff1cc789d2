"""Tests for readplan.example against TensorFlow-written records and an independent encoder.

Expected bytes come from specs/example.md's vectors or from the small wire writer of
tests/example_wire.py, written straight from the protobuf wire rules (tag varint, length,
payload); it shares no code with the module. The protobuf runtime's own judgement is in
tests/test_example_protobuf.py, parsing against a schema in tests/test_example_parse.py.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import hashlib
import math
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from readplan.errors import ExampleError
from readplan.example import FixedLen, VarLen, decode, encode, parse
from tests import example_wire as wire
from tests.assertions import checked_array
from tests.example_values import (
    FLOAT_BITS_PINS,
    INT64_MAX,
    INT64_MIN,
    SNAN,
    f32,
    float_bits,
    i64,
    with_pins,
)
from tests.reference_models import tfrecord_frames
from tests.strategies import feature_dicts, int64s
from tests.tfds_toy import TOY, TOY_DIR
from tests.tfrecord_fixtures import FILES, FIXTURES

EXAMPLE_FILES = sorted(name for name, info in FILES.items() if "examples" in info)


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
    data = (FIXTURES / name).read_bytes()
    compression = FILES[name]["compression"]
    if compression == "GZIP":
        data = gzip.decompress(data)
    elif compression == "ZLIB":
        data = zlib.decompress(data)
    return tuple(data[start + 12 : start + 12 + length] for start, length in tfrecord_frames(data))


def _expected_features(listed: dict[str, list[Any]]) -> dict[str, Any]:
    """The manifest's ``{key: [kind, values]}`` as decode should return it."""
    expected: dict[str, Any] = {}
    for key, (kind, values) in listed.items():
        if kind == "int64_list":
            expected[key] = np.array(values, dtype=np.int64)
        elif kind == "float_list":
            expected[key] = f32(*(float_bits(v) for v in values))
        else:
            assert kind == "bytes_list"
            expected[key] = [bytes.fromhex(v) for v in values]
    return expected


MANIFEST_CASES = [
    pytest.param(name, index, id=f"{name}-{index}")
    for name in EXAMPLE_FILES
    for index in range(len(FILES[name]["examples"]))
]


@pytest.mark.parametrize(("name", "index"), MANIFEST_CASES)
def test_tensorflow_records_decode_bit_exactly(name: str, index: int) -> None:
    info = FILES[name]
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
        assert wire.split_entries(ours) == sorted(wire.split_entries(raw), key=wire.entry_key)


TOY_SHARDS = sorted(path.name for path in TOY_DIR.glob("*.tfrecord-*"))


@functools.cache
def _toy_ids() -> dict[tuple[str, int, int], int]:
    return {
        (split, shard, index): example_id
        for case in TOY["cases"]
        for epoch in case["epochs"]
        for split, shard, index, example_id in epoch
    }


def _plain_records(path: Path) -> list[bytes]:
    data = path.read_bytes()
    return [data[start + 12 : start + 12 + length] for start, length in tfrecord_frames(data)]


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
    assert checked_array(parsed["objects"], np.int64, (2,)).tolist() == [3, 17]
    bboxes = checked_array(parsed["bboxes"], np.float32, (2, 4))
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
    listed = FILES[name]["examples"][index]
    parsed = parse(_records(name)[index], schema)
    assert parsed["image/encoded"] == bytes.fromhex(listed["image/encoded"][1][0])
    assert parsed["image/name"] == bytes.fromhex(listed["image/name"][1][0])
    assert parsed["width"] == listed["width"][1][0]
    assert parsed["height"] == listed["height"][1][0]
    objects = listed["objects"][1]
    assert checked_array(parsed["objects"], np.int64, (len(objects),)).tolist() == objects
    boxes = checked_array(parsed["bboxes"], np.float32, (len(listed["bboxes"][1]) // 4, 4))
    assert boxes.reshape(-1).view(np.uint32).tolist() == [
        float_bits(v) for v in listed["bboxes"][1]
    ]
    checked_array(parsed["absent"], np.float32, (0, 4))


# --- the notes' wire vectors --------------------------------------------------------------

WIRE_VECTORS = [
    pytest.param(
        {"a": i64(1, -1, 300), "b": f32(float_bits(1.5)), "c": [b"hi"]},
        "0a340a160a016112111a0f0a0d01ffffffffffffffffff01ac020a0d0a0162120812060a04"
        "0000c03f0a0b0a016312060a040a026869",
        id="abc",
    ),
    pytest.param({"x": i64(7)}, "0a0c0a0a0a017812051a030a0107", id="x7"),
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
    _assert_same_features(decode(bytes.fromhex("0a0d0a0b0a017812061a0408070809")), {"x": i64(7, 9)})


# --- decoding rules -----------------------------------------------------------------------

DECODING_CASES = [
    pytest.param(
        wire.example(
            wire.entry("x", wire.int64_feature(1)), wire.entry("x", wire.int64_feature(2, 3))
        ),
        {"x": i64(2, 3)},
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
        {"x": i64(1, 2)},
        id="same-list-twice-merges",
    ),
    pytest.param(
        wire.example(wire.entry("x", wire.int64_feature(1)))
        + wire.example(wire.entry("y", wire.bytes_feature(b"z"))),
        {"x": i64(1), "y": [b"z"]},
        id="two-features-fields-merge",
    ),
    pytest.param(
        wire.example(wire.entry("x", wire.int64_feature(7, -1, packed=False))),
        {"x": i64(7, -1)},
        id="unpacked-int64",
    ),
    pytest.param(
        wire.example(wire.entry("f", wire.float_feature(SNAN, 0x80000000, packed=False))),
        {"f": f32(SNAN, 0x80000000)},
        id="unpacked-float",
    ),
    pytest.param(
        wire.example(
            wire.entry(
                "x", wire.len_field(3, b"\x08\x07" + wire.len_field(1, b"\x01\x02") + b"\x08\x09")
            )
        ),
        {"x": i64(7, 1, 2, 9)},
        id="packed-between-unpacked",
    ),
    pytest.param(
        wire.example(wire.entry("x", wire.int64_feature(1) + b"\x20\x05"))
        + b"\x10\x05"
        + wire.len_field(9, b"?"),
        {"x": i64(1)},
        id="unknown-fields-skipped",
    ),
    pytest.param(
        wire.example(wire.entry("k", b""), wire.entry("x", wire.int64_feature(1))),
        {"x": i64(1)},
        id="feature-without-kind-left-out",
    ),
    pytest.param(
        wire.example(
            wire.len_field(1, wire.len_field(1, b"k")), wire.entry("x", wire.int64_feature(1))
        ),
        {"x": i64(1)},
        id="entry-without-value-left-out",
    ),
    pytest.param(
        wire.example(wire.len_field(1, wire.len_field(2, wire.int64_feature(4)))),
        {"": i64(4)},
        id="entry-without-key-is-empty-name",
    ),
    pytest.param(
        wire.example(
            wire.entry("i", wire.len_field(3, b"")),
            wire.entry("f", wire.len_field(2, b"")),
            wire.entry("b", wire.len_field(1, b"")),
        ),
        {"i": i64(), "f": f32(), "b": []},
        id="empty-lists-keep-kinds",
    ),
    pytest.param(
        wire.example(
            wire.entry("naïve/ключ", wire.float_feature(0x7F800000, 0x80000000, 0x00000001)),
            wire.entry("neg", wire.int64_feature(INT64_MIN, INT64_MAX, -1)),
        ),
        {"naïve/ключ": f32(0x7F800000, 0x80000000, 1), "neg": i64(INT64_MIN, INT64_MAX, -1)},
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
        _assert_same_features(decode(view), {"x": i64(7)})  # type: ignore[arg-type]


# --- properties ---------------------------------------------------------------------------


@given(feature_dicts())
@with_pins
def test_decode_inverts_encode(features: dict[str, Any]) -> None:
    _assert_same_features(decode(encode(features)), features)


@given(feature_dicts())
@with_pins
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
    _assert_same_features(decode(raw), {"f": f32(*bits), "i": i64(*ints)})


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


# --- encoding: kinds and refusals ---------------------------------------------------------

ENCODE_KINDS = [
    pytest.param([1, 2], wire.int64_feature(1, 2), id="int-list"),
    pytest.param((True, 2, np.int8(-3)), wire.int64_feature(1, 2, -3), id="bools-count-as-ints"),
    pytest.param(range(3), wire.int64_feature(0, 1, 2), id="range"),
    pytest.param(
        [1, 2.5], wire.float_feature(float_bits(1.0), float_bits(2.5)), id="numbers-with-float"
    ),
    pytest.param([0.1], wire.float_feature(float_bits(0.1)), id="float-rounded-to-float32"),
    pytest.param(7, wire.int64_feature(7), id="int-scalar"),
    pytest.param(2.5, wire.float_feature(float_bits(2.5)), id="float-scalar"),
    pytest.param(np.float32(1.5), wire.float_feature(float_bits(1.5)), id="numpy-float-scalar"),
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
        wire.float_feature(float_bits(1.0), 0x7F800000, 0xFF800000),
        id="float64-rounds-out-of-range-to-inf",
    ),
    pytest.param(
        np.array([1.5], dtype=np.float16), wire.float_feature(float_bits(1.5)), id="float16"
    ),
    pytest.param(f32(SNAN), wire.float_feature(SNAN), id="signalling-nan-kept"),
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
        {"k": [1.5, 10**400]},
        "k",
        "<an int of 1329 bits> is too large for a float",
        id="int-beyond-float",
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
