"""``readplan inspect --examples N``: the first records of a file, decoded and described.

With a ``features.json`` beside the file (a TFDS dataset directory), records are decoded
as TFDS yields them (``specs/features.md``), images left encoded and shown as their format
and size; otherwise as plain ``tf.train.Example`` entries (``specs/example.md``). Each
value is described by its dtype, shape and values, cut to a readable length.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from readplan import storage
from readplan.errors import ReadplanError
from readplan.metadata._images import image_format
from readplan.metadata.features import (
    ClassLabel,
    FeaturesDict,
    Image,
    Sequence,
    SkipDecoding,
    load_features,
)
from readplan.records import example

__all__ = ["describe_examples", "format_examples"]

_SHOWN_VALUES = 16
_SHOWN_BYTES = 60
_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # SOF markers
_PNG_CHANNELS = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}


def describe_examples(
    path: str, records: list[bytes], without: str | None = None
) -> dict[str, Any]:
    """``{"decoded_with": ..., "examples": [...]}``: each record's values described; the
    feature ``without`` (a TBL-RAW shard's image, not in its metadata) left out."""
    features = _features_beside(path)
    if features is not None and without is not None:
        features = FeaturesDict({k: v for k, v in features.items() if k != without})
    labels = {} if features is None else _class_labels(features, "")
    if features is None:
        decode = _plain
        how = "tf.train.Example"
    else:
        decoder = features.decoder(decoders=_skip_images(features), unknown="raw")
        how = "features.json"

        def decode(raw: bytes) -> dict[str, Any]:
            return _flatten(decoder(raw))

    described = []
    for number, raw in enumerate(records):
        try:
            values = decode(raw)
        except ReadplanError as err:
            described.append({"record": number, "error": str(err)})
            continue
        shown = {key: _describe(v) for key, v in values.items()}
        for key, label in labels.items():
            if key in shown and "values" in shown[key]:
                shown[key]["names"] = [_name(label, v) for v in shown[key]["values"]]
        described.append({"record": number, "values": shown})
    return {"decoded_with": how, "examples": described}


def _class_labels(features: Mapping[str, Any], prefix: str) -> dict[str, ClassLabel]:
    """The ClassLabel leaves by entry name (Sequences add nothing to the name)."""
    found: dict[str, ClassLabel] = {}
    for name, feature in features.items():
        while isinstance(feature, Sequence):
            feature = feature.feature
        if isinstance(feature, ClassLabel):
            found[prefix + name] = feature
        elif isinstance(feature, Mapping):
            found.update(_class_labels(feature, f"{prefix}{name}/"))
    return found


def _name(label: ClassLabel, index: object) -> str | None:
    if isinstance(index, int) and 0 <= index < label.num_classes:
        return label.int2str(index)
    return None


def _features_beside(path: str) -> FeaturesDict | None:
    try:
        return load_features(storage.parent(path))
    except (ReadplanError, OSError):
        return None  # not a dataset's file, or unusable metadata: show the raw entries


def _skip_images(features: Mapping[str, Any]) -> dict[str, Any]:
    """A decoders dict leaving every image (and sequence of images) encoded."""
    skipped: dict[str, Any] = {}
    for name, feature in features.items():
        inner = feature.feature if isinstance(feature, Sequence) else feature
        if isinstance(inner, Image):
            skipped[name] = SkipDecoding()
        elif isinstance(inner, Mapping):
            nested = _skip_images(inner)
            if nested:
                skipped[name] = nested
    return skipped


def _plain(raw: bytes) -> dict[str, Any]:
    return dict(example.decode(raw))


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flatten(inner, f"{prefix}{key}/"))
        return out
    return {prefix[:-1]: value}


def _describe(value: Any) -> dict[str, Any]:
    if isinstance(value, bytes):
        found = image_format(value)
        if found in ("png", "jpeg"):
            return _image(value, found)
        return {"dtype": "bytes", "shape": [], "values": [_text(value)]}
    array = np.asarray(value, dtype=object if isinstance(value, list) else None)
    flat = array.reshape(-1)
    if array.dtype == object and flat.size and all(_is_image(v) for v in flat):
        images = [_describe(v) for v in flat]
        return {"dtype": "images", "shape": list(array.shape), "images": images}
    # A plain Example's bytes_list is a list of bytes; TFDS yields object arrays.
    dtype = "bytes" if isinstance(value, list) else str(array.dtype)
    values = [_shown(v) for v in flat[:_SHOWN_VALUES]]
    out: dict[str, Any] = {"dtype": dtype, "shape": list(array.shape), "values": values}
    if flat.size > _SHOWN_VALUES:
        out["values_shown"] = _SHOWN_VALUES
    return out


def _shown(value: Any) -> Any:
    """A value as JSON shows it: text for bytes, a float's shortest repr in its own
    precision, non-finite floats as strings."""
    if isinstance(value, bytes):
        return _text(value)
    if isinstance(value, np.floating):
        return float(str(value)) if np.isfinite(value) else str(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _is_image(value: object) -> bool:
    return isinstance(value, bytes) and image_format(value) in ("png", "jpeg")


def _text(data: bytes) -> str:
    text = data.decode("utf-8", errors="backslashreplace")
    return text if len(text) <= _SHOWN_BYTES else text[: _SHOWN_BYTES - 3] + "..."


def _image(data: bytes, kind: str) -> dict[str, Any]:
    size = _png_size(data) if kind == "png" else _jpeg_size(data)
    out: dict[str, Any] = {"dtype": "image", "format": kind, "bytes": len(data)}
    if size is not None:
        width, height, channels = size
        out["shape"] = [height, width, channels]  # as the decoded array's
    return out


def _png_size(data: bytes) -> tuple[int, int, int] | None:
    if len(data) < 26:
        return None
    width, height = struct.unpack(">II", data[16:24])
    channels = _PNG_CHANNELS.get(data[25])
    return None if channels is None else (width, height, channels)


def _jpeg_size(data: bytes) -> tuple[int, int, int] | None:
    """Width, height and components from the JPEG's frame header (SOFn)."""
    at = 2
    while at + 9 < len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        length = struct.unpack(">H", data[at + 2 : at + 4])[0]
        if marker in _JPEG_FRAMES:
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height, data[at + 9]
        at += 2 + length
    return None


def format_examples(described: dict[str, Any]) -> list[str]:
    """The text ``inspect --examples N`` prints for :func:`describe_examples`'s result."""
    lines = [
        f"  first {len(described['examples'])} examples (decoded with {described['decoded_with']}):"
    ]
    for entry in described["examples"]:
        if "error" in entry:
            lines.append(f"    example {entry['record']}: {entry['error']}")
            continue
        lines.append(f"    example {entry['record']}:")
        values = entry["values"]
        width = max([len(key) for key in values] + [1])
        for key, value in values.items():
            lines.append(f"      {key:<{width}}  {_one_line(value)}")
    return lines


def _one_line(value: dict[str, Any]) -> str:
    if value["dtype"] == "image":
        shape = f" {tuple(value['shape'])}" if "shape" in value else ""
        return f"image   {value['format']}{shape}, {value['bytes']:,} bytes"
    if value["dtype"] == "images":
        parts = "; ".join(_one_line(image).removeprefix("image   ") for image in value["images"])
        return f"images  {tuple(value['shape'])}: {parts}"
    shape = "()" if not value["shape"] else str(tuple(value["shape"]))
    shown = value["values"]
    more = " ..." if "values_shown" in value else ""
    names = value.get("names")
    if names is not None:  # a class index with its name: 1 (dog)
        shown = [f"{v!r} ({n})" if n is not None else repr(v) for v, n in zip(shown, names)]
    else:
        shown = [repr(v) for v in shown]
    body = shown[0] if not value["shape"] else "[" + ", ".join(shown) + more + "]"
    return f"{value['dtype']:<7} {shape:<8} {body}"
