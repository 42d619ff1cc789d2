"""The tf.train.Example message classes, built from descriptors at import time.

This mirrors ``specs/example.proto`` (a test compares the two field by field). The
definitions live in a private descriptor pool under the package ``readplan.example``: loading
TensorFlow's own ``tensorflow.Example`` in the same process can therefore never clash with
them, and no protoc step is needed at install time.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message, message_factory

__all__ = ["FILE", "PACKAGE", "Example", "Features"]

PACKAGE = "readplan.example"

_Field = descriptor_pb2.FieldDescriptorProto


def _file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="readplan/example.proto", package=PACKAGE, syntax="proto3"
    )

    example = proto.message_type.add(name="Example")
    _message_field(example, "features", 1, "Features")

    features = proto.message_type.add(name="Features")
    entry = features.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, label=_Field.LABEL_OPTIONAL, type=_Field.TYPE_STRING)
    _message_field(entry, "value", 2, "Feature")
    _message_field(features, "feature", 1, "Features.FeatureEntry", repeated=True)

    feature = proto.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for number, (name, type_name) in enumerate(
        (("bytes_list", "BytesList"), ("float_list", "FloatList"), ("int64_list", "Int64List")),
        start=1,
    ):
        _message_field(feature, name, number, type_name, oneof_index=0)

    # proto3 packs repeated scalars by default; `packed` is set explicitly to match the spec.
    for name, scalar in (
        ("BytesList", _Field.TYPE_BYTES),
        ("FloatList", _Field.TYPE_FIXED32),
        ("Int64List", _Field.TYPE_INT64),
    ):
        values = proto.message_type.add(name=name).field.add(
            name="value", number=1, label=_Field.LABEL_REPEATED, type=scalar
        )
        if scalar != _Field.TYPE_BYTES:
            values.options.packed = True
    return proto


def _message_field(
    owner: descriptor_pb2.DescriptorProto,
    name: str,
    number: int,
    type_name: str,
    *,
    repeated: bool = False,
    oneof_index: int | None = None,
) -> None:
    field = owner.field.add(
        name=name,
        number=number,
        label=_Field.LABEL_REPEATED if repeated else _Field.LABEL_OPTIONAL,
        type=_Field.TYPE_MESSAGE,
        type_name=f".{PACKAGE}.{type_name}",
    )
    if oneof_index is not None:
        field.oneof_index = oneof_index


FILE = _file_descriptor()
_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(FILE)

Example: type[message.Message] = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName(f"{PACKAGE}.Example")
)
Features: type[message.Message] = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName(f"{PACKAGE}.Features")
)
