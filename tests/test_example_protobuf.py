"""readplan.example against the protobuf runtime: TensorFlow's declaration judges the bytes,
and readplan's own descriptor is the one specs/example.proto declares.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from hypothesis import given

from readplan.example import encode
from readplan.records.example import _pb as _example_pb
from tests import example_wire as wire
from tests.example_values import QUIET_PINNED_FEATURE_DICTS, with_pins
from tests.strategies import feature_dicts

SPEC_PROTO = Path(__file__).parents[1] / "specs" / "example.proto"


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
@with_pins
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
@functools.partial(with_pins, pins=QUIET_PINNED_FEATURE_DICTS)
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
    assert wire.split_entries(encode(features)) == sorted(
        wire.split_entries(judged), key=wire.entry_key
    )


@given(feature_dicts())
@with_pins
def test_encode_writes_entries_in_code_point_order(features: dict[str, Any]) -> None:
    names = [
        wire.entry_key(entry).decode("utf-8") for entry in wire.split_entries(encode(features))
    ]
    assert names == sorted(features)


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
