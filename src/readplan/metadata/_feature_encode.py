"""Python and numpy values to ``tf.train.Example`` records, as TFDS's ``encode_example`` does.

The inverse of ``_feature_decode``: each leaf feature checks and converts its value (a
ClassLabel name to its index, a string to UTF-8, an array to PNG/JPEG bytes, a Tensor to
its dtype and shape, or to its raw buffer when encoded), Sequences stack their elements,
and every leaf becomes one entry named by its path. ``specs/features.md`` §5 is normative.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Mapping
from collections.abc import Sequence as ListLike
from typing import Any

import numpy as np
import numpy.typing as npt

from readplan import storage
from readplan._internal.validate import a_type
from readplan.errors import FeatureError
from readplan.metadata._feature_types import (
    STRING,
    Audio,
    BBoxFeature,
    ClassLabel,
    Feature,
    Image,
    Sequence,
    Shape,
    Tensor,
    Text,
)
from readplan.metadata._image_encode import encode_image
from readplan.metadata._images import image_format
from readplan.metadata._sequence_layout import layouts, stored_entries
from readplan.records import example

__all__ = ["encode_example", "example_entries"]

_Entries = dict[str, npt.NDArray[Any]]
_BBOX_ORDERED = {"REL_YXYX": (0, 2, 1, 3), "YXYX": (0, 2, 1, 3), "REL_XYXY": (1, 3, 0, 2)}
_BBOX_RELATIVE = ("REL_YXYX", "REL_XYXY")


def encode_example(features: Mapping[str, Feature], value: Any) -> bytes:
    """One example (a dict shaped like ``features``) as a serialized ``tf.train.Example``."""
    return example.encode(example_entries(features, value))


def example_entries(features: Mapping[str, Feature], value: Any) -> dict[str, Any]:
    """The ``{name: values}`` that :func:`readplan.example.encode` serializes for ``value``."""
    where = layouts(features, "")
    out: dict[str, Any] = {}
    for key, values in _encode_dict(features, value, "").items():
        for name, array in stored_entries(key, values, where[key]).items():
            out[name] = _stored(array)
    return out


def _stored(array: npt.NDArray[Any]) -> Any:
    if array.dtype == object:
        return list(array.reshape(-1))
    if array.dtype == np.uint64:
        return array.view(np.int64)  # TFDS bitcasts: tf.train.Example has no uint64
    if array.dtype == np.bool_:
        return array.astype(np.int64)
    return array


def _error(where: str, message: str, feature: Feature) -> FeatureError:
    return FeatureError(
        f"feature {where}: {message}", feature=where, feature_type=type(feature).tfds_class
    )


def _encode(feature: Feature, value: Any, where: str) -> _Entries:
    if isinstance(feature, Mapping):
        return _encode_dict(feature, value, f"{where}/")
    if isinstance(feature, Sequence):
        return _encode_sequence(feature, value, where)
    encoder = _LEAF_ENCODERS.get(type(feature))
    if encoder is None:
        raise _error(where, f"cannot write {a_type(feature)} feature", feature)
    return encoder(feature, value, where)


def _encode_dict(features: Mapping[str, Feature], value: Any, prefix: str) -> _Entries:
    where = prefix.rstrip("/") or "(top level)"
    if not isinstance(value, Mapping):
        raise FeatureError(
            f"feature {where}: an example of a FeaturesDict is a dict with keys "
            f"{sorted(features)}, got {value!r:.80}",
            feature=where,
            feature_type="FeaturesDict",
        )
    unknown = sorted(str(key) for key in value if key not in features)
    if unknown:
        raise FeatureError(
            f"feature {where}: the example has keys {unknown} that the features do not "
            f"declare; declared: {sorted(features)}",
            feature=where,
            feature_type="FeaturesDict",
        )
    out: _Entries = {}
    for name, feature in features.items():
        if name not in value:
            # As in TFDS: an absent optional Tensor is given as None, never left out.
            raise _error(
                prefix + name,
                "is missing from the example (give None for an optional Tensor without a value)",
                feature,
            )
        out.update(_encode(feature, value[name], prefix + name))
    return out


def _encode_sequence(feature: Sequence, value: Any, where: str) -> _Entries:
    """Each leaf's values as a list of the elements' (stacked by :func:`stored_entries`)."""
    elements = _elements(feature, value, where)
    if feature.length is not None and len(elements) != feature.length:
        raise _error(
            where, f"holds {len(elements)} elements but its length is {feature.length}", feature
        )
    encoded = [_encode(feature.feature, element, where) for element in elements]
    out: dict[str, Any] = {}
    for key in layouts(feature.feature, where):
        try:
            out[key] = [entries[key] for entries in encoded]
        except KeyError:
            raise _error(
                key, "an optional Tensor inside a Sequence must be given in every element", feature
            ) from None
    return out


def _elements(feature: Sequence, value: Any, where: str) -> list[Any]:
    """The elements of ``value``: a list, or (a Sequence of a dict) a dict of lists."""
    if isinstance(feature.feature, Mapping) and isinstance(value, Mapping):
        columns = {name: _as_list(column, f"{where}/{name}") for name, column in value.items()}
        lengths = {len(column) for column in columns.values()}
        if len(lengths) > 1:
            raise _error(
                where, f"the dict's lists have different lengths {sorted(lengths)}", feature
            )
        count = lengths.pop() if lengths else 0
        return [{name: column[k] for name, column in columns.items()} for k in range(count)]
    return _as_list(value, where)


def _as_list(value: Any, where: str) -> list[Any]:
    if isinstance(value, np.ndarray) and value.ndim >= 1:
        return list(value)
    if isinstance(value, ListLike) and not isinstance(value, (str, bytes, bytearray)):
        return list(value)
    raise FeatureError(
        f"feature {where}: a Sequence takes a list or an array, got {value!r:.80}", feature=where
    )


def _tensor(feature: Tensor, value: Any, where: str) -> _Entries:
    if value is None and feature.optional:
        return {}  # absent from the record, as TFDS leaves it
    if feature.encoding == "none" and sum(dim is None for dim in feature.shape) > 1:
        raise _error(
            where,
            f"a Tensor of shape {feature.shape} (more than one unknown dimension) needs "
            "encoding='zlib' or 'bytes', as in TFDS",
            feature,
        )
    array = _array(feature, value, where)
    if feature.encoding == "none":
        return {where: array}
    data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    if feature.encoding == "zlib":
        data = zlib.compress(data)
    if sum(dim is None for dim in feature.shape) > 1:
        return {
            f"{where}/shape": np.array(array.shape, np.int32),
            f"{where}/value": _bytes_array([data]).reshape(()),
        }
    return {where: _bytes_array([data]).reshape(())}


def _array(feature: Tensor, value: Any, where: str) -> npt.NDArray[Any]:
    """``value`` as an array of the Tensor's dtype and shape, checked as TFDS checks it."""
    dtype = feature.dtype
    if dtype == STRING:
        array = _string_array(feature, value, where)
    elif isinstance(value, np.ndarray) and value.dtype != np.dtype(dtype):
        raise _error(
            where,
            f"the array's dtype is {value.dtype} but the feature's is {dtype}; convert it "
            f"(array.astype(np.{dtype})) as TFDS requires",
            feature,
        )
    elif dtype == "bool" and _holds_text(value):
        raise _error(where, f"{value!r:.80} is text, not a bool", feature)
    else:
        try:
            array = np.asarray(value, dtype=dtype)
        except (TypeError, ValueError, OverflowError) as err:
            raise _error(where, f"{value!r:.80} is not {dtype} ({err})", feature) from None
    _check_shape(feature, array.shape, where)
    return array


def _holds_text(value: Any) -> bool:
    if isinstance(value, (str, bytes)):
        return True
    return isinstance(value, np.ndarray) and value.dtype.kind in "SUO"


def _string_array(feature: Feature, value: Any, where: str) -> npt.NDArray[Any]:
    array = np.asarray(value, dtype=object)
    flat = array.reshape(-1)
    for k, item in enumerate(flat):
        if isinstance(item, str):
            flat[k] = item.encode("utf-8")
        elif isinstance(item, (bytes, bytearray, np.bytes_)):
            flat[k] = bytes(item)
        else:
            raise _error(where, f"holds {item!r:.60}, not bytes or str", feature)
    return array


def _bytes_array(values: list[bytes]) -> npt.NDArray[Any]:
    array = np.empty(len(values), object)
    array[:] = values
    return array


def _check_shape(feature: Feature, shape: tuple[int, ...], where: str) -> None:
    declared: Shape = getattr(feature, "shape", ())
    if len(shape) == len(declared) and all(d is None or d == s for d, s in zip(declared, shape)):
        return
    raise _error(where, f"the value's shape {shape} does not match {declared}", feature)


def _text(feature: Text, value: Any, where: str) -> _Entries:
    if isinstance(value, str):
        return {where: _bytes_array([value.encode("utf-8")]).reshape(())}
    if isinstance(value, (bytes, bytearray)):
        return {where: _bytes_array([bytes(value)]).reshape(())}
    raise _error(where, f"Text takes str or bytes, got {value!r:.80}", feature)


def _class_label(feature: ClassLabel, value: Any, where: str) -> _Entries:
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8")
    if isinstance(value, str):
        try:
            return {where: np.array(feature.str2int(value), np.int64)}
        except FeatureError as err:
            raise _error(where, str(err), feature) from None
    is_index = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if is_index and -1 <= value < feature.num_classes:  # -1 is TFDS's "no label"
        return {where: np.array(value, np.int64)}
    raise _error(
        where,
        f"{value!r:.80} is not a class: give a name of {feature.names!r:.120} or an index "
        f"in [-1, {feature.num_classes})",
        feature,
    )


def _bbox(feature: BBoxFeature, value: Any, where: str) -> _Entries:
    if isinstance(value, np.ndarray) and value.shape == (4,):
        value = value.astype(np.float64).tolist()  # TFDS converts arrays before its checks
    if not isinstance(value, ListLike) or len(value) != 4:
        raise _error(
            where, f"a box is 4 floats (or tfds.features.BBox), got {value!r:.80}", feature
        )
    relative = feature.bbox_format in _BBOX_RELATIVE
    for coordinate in value:
        if relative and not isinstance(coordinate, (float, np.floating)):
            raise _error(where, f"box coordinates are floats, got {value!r:.80}", feature)
        if relative and not 0.0 <= coordinate <= 1.0:
            raise _error(where, f"box coordinates are within [0, 1], got {value!r:.80}", feature)
    order = _BBOX_ORDERED.get(feature.bbox_format or "")
    if order is not None and (
        value[order[1]] < value[order[0]] or value[order[3]] < value[order[2]]
    ):
        raise _error(
            where, f"box {value!r:.80} ends before it starts ({feature.bbox_format})", feature
        )
    return {where: np.array(value, np.float32)}


def _audio(feature: Audio, value: Any, where: str) -> _Entries:
    return _tensor(feature.tensor, value, where)


def _image(feature: Image, value: Any, where: str) -> _Entries:
    if isinstance(value, np.ndarray):
        data = _encode_array(feature, value, where)
    elif isinstance(value, (bytes, bytearray)):
        data = bytes(value)
    elif isinstance(value, (str, os.PathLike)):
        data = storage.read_bytes(value)
    elif callable(getattr(value, "read", None)):
        data = value.read()
    elif callable(getattr(value, "getdata", None)) and hasattr(value, "mode"):
        # A PIL image: its pixels, encoded as an array would be.
        data = _encode_array(feature, np.asarray(value).reshape(_pil_shape(value)), where)
    else:
        raise _error(
            where,
            f"an Image takes a (height, width, channels) array, PNG/JPEG bytes, a file path or "
            f"a file object, got {value!r:.80}",
            feature,
        )
    found = image_format(data)
    if found not in ("png", "jpeg"):
        raise _error(where, f"the image is {found}, not PNG or JPEG (what readplan reads)", feature)
    return {where: _bytes_array([data]).reshape(())}


def _pil_shape(image: Any) -> tuple[int, int, int]:
    width, height = image.size
    return height, width, len(image.getbands())


def _encode_array(feature: Image, value: npt.NDArray[Any], where: str) -> bytes:
    if value.dtype != np.dtype(feature.dtype):
        raise _error(
            where, f"the image's dtype is {value.dtype}, the feature's {feature.dtype}", feature
        )
    _check_shape(feature, value.shape, where)
    if feature.dtype == "float32":
        if feature.encoding_format == "jpeg":
            raise _error(where, "float32 images are stored as PNG only", feature)
        # TFDS bitcasts each float to 4 uint8 channels of a PNG.
        pixels = np.ascontiguousarray(value, np.dtype("<f4")).view(np.uint8)
        return encode_image(pixels, "png", where)
    return encode_image(value, feature.encoding_format or "png", where)


_LEAF_ENCODERS: dict[type, Callable[[Any, Any, str], _Entries]] = {
    Tensor: _tensor,
    **dict.fromkeys(Tensor.__subclasses__(), _tensor),
    Text: _text,
    ClassLabel: _class_label,
    BBoxFeature: _bbox,
    Audio: _audio,
    Image: _image,
}
