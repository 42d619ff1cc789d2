"""Records to what ``tfds.as_numpy`` yields: one compiled step per leaf feature.

A features dict is flattened once into leaves (``objects/bbox``...), each knowing its
``tf.train.Example`` entry, its stored shape (with the leading dimensions its Sequences
add), how TensorFlow's parser reads it (``FixedLenFeature`` when every dimension is known,
``FixedLenSequenceFeature`` with one unknown dimension) and how it is decoded after
parsing. ``specs/features.md`` §3 is normative.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from readplan.errors import ConfigError, ExampleError, FeatureError
from readplan.metadata._encoded import encoded_step
from readplan.metadata._feature_types import (
    STRING,
    Audio,
    BBoxFeature,
    ClassLabel,
    Dataset,
    Feature,
    Image,
    Sequence,
    Shape,
    Tensor,
    Text,
    UnknownFeature,
    default_fill,
    stored_kind,
)
from readplan.metadata._images import decode_image
from readplan.metadata._limits import RAISE_CAP, Budget, check_capacity, value_cap
from readplan.metadata._ragged import check_lengths, nest_rows
from readplan.records import example

__all__ = [
    "Decoded",
    "SkipDecoding",
    "Unknown",
    "as_numpy",
    "cast_like_tf",
    "compile_decoder",
    "compile_steps",
    "is_plain",
    "parser",
]

Decoded: TypeAlias = dict[str, Any]
"""One decoded example: nested dicts of numpy scalars and arrays, and bytes."""

Unknown: TypeAlias = Literal["error", "raw"]


@dataclass(frozen=True)
class SkipDecoding:
    """Yield a feature as stored, like ``tfds.decode.SkipDecoding()``.

    For an :class:`Image` that is the encoded PNG/JPEG ``bytes`` (an object array of them
    inside a Sequence); other features are stored decoded and come out unchanged.
    """


_Path = tuple[str, ...]


@dataclass(frozen=True)
class _Leaf:
    """One leaf feature: where it is stored, how it is parsed and how it is decoded."""

    path: _Path
    feature: Feature
    shape: Shape
    dtype: str
    rank: int
    skip: bool
    cap: int
    """The decoder's ``max_value_bytes``: no value it decodes may be larger."""
    unstacked: bool = False  # inside a Dataset: elements are decoded one by one, not stacked
    inner: tuple[_Leaf, ...] = ()  # a Dataset's own leaves

    @property
    def key(self) -> str:
        return "/".join(self.path)


def compile_decoder(
    features: Mapping[str, Feature],
    decoders: Mapping[str, Any] | None,
    unknown: Unknown,
    max_value_bytes: int | None = None,
) -> Callable[[bytes], Decoded]:
    """The function decoding one serialized record of ``features``."""
    steps = [
        (leaf.path, step)
        for leaf, step in compile_steps(features, decoders, unknown, max_value_bytes)
    ]

    def decode(record: bytes) -> Decoded:
        stored = example.decode(record)
        out: Decoded = {}
        for path, step in steps:
            node = out
            for name in path[:-1]:
                node = node.setdefault(name, {})
            node[path[-1]] = step(stored)
        return out

    return decode


def compile_steps(
    features: Mapping[str, Feature],
    decoders: Mapping[str, Any] | None,
    unknown: Unknown,
    max_value_bytes: int | None = None,
) -> list[tuple[_Leaf, Callable[[Mapping[str, Any]], Any]]]:
    """Every leaf of ``features`` in the order its decoded example lists it, with its step
    (``max_value_bytes``: see :func:`~readplan.metadata._limits.value_cap`)."""
    cap = value_cap(max_value_bytes)
    if unknown not in ("error", "raw"):
        raise ConfigError(
            f"unknown must be 'error' or 'raw', got {unknown!r}", field="unknown", value=unknown
        )
    skipped = _skipped_paths(features, decoders or {}, ())
    leaves: list[_Leaf] = []
    _collect(features, (), (), skipped, unknown, cap, leaves)
    return [(leaf, _step(leaf)) for leaf in leaves]


def is_plain(leaf: _Leaf) -> bool:
    """Whether the leaf's step is only its parse (no image, raw-buffer or unknown decoding)."""
    if isinstance(leaf.feature, (UnknownFeature, Dataset)) or is_ragged(leaf):
        return False
    if isinstance(leaf.feature, Tensor) and leaf.feature.encoding != "none":
        return False
    return not (isinstance(leaf.feature, Image) and not leaf.skip)


def is_ragged(leaf: _Leaf) -> bool:
    """Whether TFDS stores the leaf as a ragged tensor (flat values and row lengths): a
    tensor below two or more Sequences, whatever their lengths."""
    return isinstance(leaf.feature, Tensor) and leaf.feature.encoding == "none" and leaf.rank > 1


# --- decoders -------------------------------------------------------------------------------


def _skipped_paths(
    features: Mapping[str, Feature], decoders: Mapping[str, Any], path: _Path
) -> frozenset[_Path]:
    if not isinstance(decoders, Mapping):
        raise _bad_decoders(path, decoders)
    skipped: set[_Path] = set()
    for name, decoder in decoders.items():
        where = (*path, str(name))
        if name not in features:
            raise ConfigError(
                f"decoders name {'/'.join(where)!r}, which is not a feature; the features "
                f"there are {sorted(features)}",
                field="decoders",
                value=name,
            )
        feature = _innermost(features[name])
        if isinstance(decoder, SkipDecoding):
            if isinstance(feature, Mapping):
                raise ConfigError(
                    f"decoders[{'/'.join(where)!r}] is SkipDecoding() for a dict of features; "
                    "give SkipDecoding() for the features inside it instead (as TFDS requires)",
                    field="decoders",
                    value=decoder,
                )
            skipped.add(where)
        elif isinstance(decoder, Mapping) and isinstance(feature, Mapping):
            skipped |= _skipped_paths(feature, decoder, where)
        else:
            raise _bad_decoders(where, decoder)
    return frozenset(skipped)


def _bad_decoders(path: _Path, value: object) -> ConfigError:
    return ConfigError(
        f"decoders at {'/'.join(path) or 'the top level'} is {value!r:.80}; decoders is a "
        "dict shaped like the features, with readplan.SkipDecoding() for features to yield "
        "as stored",
        field="decoders",
        value=value,
    )


def _innermost(feature: Feature) -> Feature:
    while isinstance(feature, Sequence):
        feature = feature.feature
    return feature


# --- flattening ------------------------------------------------------------------------------


def _collect(
    features: Mapping[str, Feature],
    path: _Path,
    outer: Shape,
    skipped: frozenset[_Path],
    unknown: Unknown,
    cap: int,
    out: list[_Leaf],
) -> None:
    for name, feature in features.items():
        where = (*path, name)
        dims = outer
        while isinstance(feature, Sequence) and not isinstance(feature, Dataset):
            dims = (*dims, feature.length)
            feature = feature.feature
        if isinstance(feature, Dataset):
            out.append(_dataset_leaf(where, feature, dims, skipped, unknown, cap))
        elif isinstance(feature, Mapping):
            _collect(feature, where, dims, skipped, unknown, cap, out)
        else:
            out.append(_leaf(where, feature, dims, where in skipped, unknown, cap))


def _dataset_leaf(
    path: _Path,
    dataset: Dataset,
    dims: Shape,
    skipped: frozenset[_Path],
    unknown: Unknown,
    cap: int,
) -> _Leaf:
    if dims:
        raise _unsupported(path, dataset, "a Dataset inside a Sequence or another Dataset")
    inner: list[_Leaf] = []
    as_sequence = Sequence(dataset.feature, dataset.length)
    _collect({path[-1]: as_sequence}, path[:-1], (), skipped, unknown, cap, inner)
    if any(isinstance(leaf.feature, Dataset) for leaf in inner):
        raise _unsupported(path, dataset, "a Dataset inside a Dataset (TFDS cannot nest them)")
    flat = tuple(replace(leaf, unstacked=True) for leaf in inner)
    return _Leaf(path, dataset, (), STRING, 0, False, cap, inner=flat)


def _leaf(
    path: _Path, feature: Feature, dims: Shape, skip: bool, unknown: Unknown, cap: int
) -> _Leaf:
    encoded = isinstance(feature, Image) or (
        isinstance(feature, Tensor) and feature.encoding != "none"
    )
    if encoded and len(dims) > 1:
        # TFDS stores them as ragged entries of encoded bytes and cannot decode them.
        raise _unsupported(path, feature, "an encoded value below two Sequences")
    if isinstance(feature, Image):
        check_capacity("/".join(path), "Image", (*dims, *feature.shape), 1)
        return _Leaf(path, feature, dims, STRING, len(dims), skip, cap)
    if isinstance(feature, UnknownFeature):
        if unknown == "error" and not skip:
            what = feature.reason or "a type readplan does not decode"
            raise FeatureError(
                f"feature {'/'.join(path)} is a {feature.python_class_name}: {what}; pass "
                "unknown='raw' (or decoders={...: SkipDecoding()} for this feature) to "
                "receive its tf.train.Example entries undecoded",
                feature="/".join(path),
                feature_type=feature.python_class_name,
            )
        return _Leaf(path, feature, dims, STRING, len(dims), skip, cap)
    tensor = feature if isinstance(feature, Tensor) else _tensor_of(feature)
    itemsize = np.dtype(object if tensor.dtype == STRING else tensor.dtype).itemsize
    check_capacity("/".join(path), tensor.tfds_class, (*dims, *tensor.shape), itemsize)
    if tensor.encoding != "none":
        # One buffer of raw values per element (per Sequence entry).
        return _Leaf(path, tensor, dims, STRING, len(dims), skip, cap)
    return _Leaf(path, tensor, (*dims, *tensor.shape), tensor.dtype, len(dims), skip, cap)


def _tensor_of(feature: Feature) -> Tensor:
    if isinstance(feature, (Text, ClassLabel, BBoxFeature, Audio)):
        return feature.tensor
    raise _unsupported((), feature, f"feature type {type(feature).__name__}")


def _unsupported(path: _Path, feature: Feature, what: str) -> FeatureError:
    return FeatureError(
        f"feature {'/'.join(path)}: {what} is not decoded by readplan; read the records "
        "undecoded or leave this feature out",
        feature="/".join(path),
        feature_type=type(feature).tfds_class,
    )


# --- decoding steps ---------------------------------------------------------------------------


_Stored = Mapping[str, example.FeatureValue]
_Step = Callable[[_Stored], Any]


def _step(leaf: _Leaf) -> _Step:
    if isinstance(leaf.feature, Dataset):
        return _dataset_step(leaf)
    if is_ragged(leaf):
        return _ragged_step(leaf)
    if isinstance(leaf.feature, UnknownFeature):
        prefix = leaf.key + "/"
        return lambda stored: {
            k: v for k, v in stored.items() if k == leaf.key or k.startswith(prefix)
        }
    if isinstance(leaf.feature, Tensor) and leaf.feature.encoding != "none":
        return encoded_step(leaf, parser, _elementwise)
    parse = parser(leaf)
    if isinstance(leaf.feature, Image) and not leaf.skip:
        return _image_step(leaf, parse)
    return lambda stored: as_numpy(parse(stored))


def parser(leaf: _Leaf) -> Callable[[_Stored], npt.NDArray[Any]]:
    """TensorFlow's parse of one entry: checked, shaped like ``leaf.shape`` and cast."""
    unknown_dims = leaf.shape.count(None)
    kind = stored_kind(leaf.dtype)
    if unknown_dims > 1:
        raise _unsupported(
            leaf.path,
            leaf.feature,
            f"shape {leaf.shape} (more than one unknown dimension, which TFDS stores only for "
            "a Sequence of Sequences of a fixed-shape tensor, as a ragged tensor)",
        )
    inner = tuple(dim for dim in leaf.shape if dim is not None)
    size = math.prod(inner)
    if unknown_dims == 1 and size == 0:
        raise _unsupported(leaf.path, leaf.feature, f"shape {leaf.shape} (no values per row)")
    target = tuple(-1 if dim is None else dim for dim in leaf.shape)
    optional = isinstance(leaf.feature, Tensor) and leaf.feature.optional
    numpy_dtype = np.dtype(object) if leaf.dtype == STRING else np.dtype(leaf.dtype)
    default = _default(leaf, numpy_dtype)

    def parse(stored: _Stored) -> npt.NDArray[Any]:
        values = stored.get(leaf.key)
        if values is None:
            if unknown_dims == 0 and not optional:
                raise ExampleError(
                    f"feature {leaf.key!r} is missing from the record; the dataset's "
                    f"features.json declares it with shape {leaf.shape}, so TFDS requires it",
                    key=leaf.key,
                )
            array = default(stored)
        else:
            array = _checked(leaf, kind, values)
        count = array.size
        if (unknown_dims == 0 and count != size) or (unknown_dims == 1 and count % size):
            raise ExampleError(
                f"feature {leaf.key!r} holds {count} values, which do not fill shape "
                f"{leaf.shape} (from features.json); the record does not match its dataset's "
                "features",
                key=leaf.key,
            )
        return cast_like_tf(array.reshape(target), numpy_dtype)

    return parse


def _default(leaf: _Leaf, numpy_dtype: np.dtype[Any]) -> Callable[[_Stored], npt.NDArray[Any]]:
    """What an absent entry parses to: TFDS's default (empty for an unknown dimension), or
    a FeatureError when that default is larger than ``leaf.cap``."""
    shape = tuple(dim or 0 for dim in leaf.shape)
    size = math.prod(shape) * numpy_dtype.itemsize
    fill = default_fill(leaf.dtype)

    def default(stored: _Stored) -> npt.NDArray[Any]:
        if size > leaf.cap:
            raise FeatureError(
                f"feature {leaf.key}: the record does not hold this optional feature, and its "
                f"default (shape {leaf.shape}, {size} bytes) is larger than "
                f"max_value_bytes={leaf.cap}; {RAISE_CAP}",
                feature=leaf.key,
                feature_type=type(leaf.feature).tfds_class,
            )
        return np.full(shape, fill, dtype=numpy_dtype)

    return default


_TINY32 = np.finfo(np.float32).tiny


def cast_like_tf(values: npt.NDArray[Any], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """``values`` (as parsed: int64, float32 or bytes) cast to ``dtype`` as TensorFlow does.

    float32 -> float16 overflows to inf silently; float32 -> float64 flushes float32
    subnormals to zero of the same sign (TensorFlow's CPU kernels run with denormals
    flushed).
    """
    if dtype == np.float64 and values.dtype == np.float32:
        wide = values.astype(np.float64)
        subnormal = (wide != 0) & (np.abs(wide) < _TINY32)
        if subnormal.any():
            wide[subnormal] = np.copysign(0.0, wide[subnormal])
        return wide
    with np.errstate(over="ignore"):
        return values.astype(dtype, copy=False)


_KIND_OF_LIST = {"i": "int64", "f": "float32"}


def _checked(leaf: _Leaf, kind: str, values: example.FeatureValue) -> npt.NDArray[Any]:
    # readplan.example gives int64 arrays, float32 arrays or lists of bytes.
    found = "bytes" if isinstance(values, list) else _KIND_OF_LIST[values.dtype.kind]
    if found != kind:
        raise ExampleError(
            f"feature {leaf.key!r} is stored as a {found} list but features.json declares "
            f"{leaf.dtype}, which TFDS stores as {kind}; the record does not match its "
            "dataset's features",
            key=leaf.key,
        )
    if isinstance(values, list):
        array = np.empty(len(values), dtype=object)
        array[:] = values
        return array
    return values


def as_numpy(array: npt.NDArray[Any]) -> Any:
    """A scalar as ``tfds.as_numpy`` gives it (numpy scalar, or bytes); arrays unchanged."""
    if array.ndim == 0:
        return array[()]
    return array


def _image_step(leaf: _Leaf, parse: Callable[[_Stored], npt.NDArray[Any]]) -> _Step:
    image = leaf.feature
    assert isinstance(image, Image)
    channels = image.shape[-1]
    where = leaf.key

    def one(data: bytes, budget: int) -> npt.NDArray[Any]:
        pixels = decode_image(
            data,
            channels=channels,
            dtype=image.dtype,
            where=where,
            shape=image.shape,
            max_bytes=budget,
        )
        if pixels.ndim != len(image.shape) or any(
            want not in (None, got) for want, got in zip(image.shape, pixels.shape)
        ):
            raise FeatureError(
                f"feature {where}: the image decodes to shape {pixels.shape}, but "
                f"features.json declares {image.shape}",
                feature=where,
                feature_type="Image",
            )
        return pixels

    return _elementwise(leaf, parse, one, image.shape, image.dtype)


def _elementwise(
    leaf: _Leaf,
    parse: Callable[[_Stored], npt.NDArray[Any]],
    one: Callable[[bytes, int], npt.NDArray[Any]],
    element_shape: Shape,
    dtype: str,
) -> _Step:
    """Decode each stored bytes element with ``one``, given what is left of ``leaf.cap``
    for it; a Sequence stacks the results (their sum is bounded by the cap)."""

    def step(stored: _Stored) -> Any:
        encoded = parse(stored)
        if leaf.rank == 0:
            return one(bytes(encoded[()]), leaf.cap)
        budget = Budget(leaf.cap)
        if leaf.unstacked:
            # A Dataset decodes each element on its own: shapes may differ between them.
            return [stacked(element, budget) for element in encoded]
        return stacked(encoded, budget)

    def stacked(encoded: npt.NDArray[Any], budget: Budget) -> npt.NDArray[Any]:
        if encoded.ndim == 0:
            return budget.spend(one(bytes(encoded[()]), budget.left))
        flat = [budget.spend(one(bytes(data), budget.left)) for data in encoded.reshape(-1)]
        if not flat:
            # TFDS's empty sequence: the element's unknown dimensions become 0.
            empty = (*encoded.shape, *(0 if dim is None else dim for dim in element_shape))
            return np.zeros(empty, dtype=dtype)
        shapes = {values.shape for values in flat}
        if len(shapes) > 1:
            raise FeatureError(
                f"feature {leaf.key}: the elements of one sequence decode to different shapes "
                f"{sorted(shapes)}; TFDS stacks them and fails too",
                feature=leaf.key,
                feature_type=type(leaf.feature).tfds_class,
            )
        return np.stack(flat).reshape(*encoded.shape, *flat[0].shape)

    return step


# --- ragged tensors and nested datasets ------------------------------------------------------


def _ragged_step(leaf: _Leaf) -> _Step:
    """A Sequence of Sequences: TFDS's ``<key>/ragged_flat_values`` and
    ``<key>/ragged_row_lengths_<k>`` entries, as nested object arrays of rows, or one array
    when every Sequence below the outermost has a fixed length."""
    inner = leaf.shape[leaf.rank :]
    if None in inner:
        raise _unsupported(
            leaf.path, leaf.feature, f"shape {leaf.shape} (a ragged tensor of {inner} elements)"
        )
    flat = parser(replace(leaf, path=(*leaf.path, "ragged_flat_values"), shape=(None, *inner)))
    lengths = [
        parser(
            _Leaf(
                (*leaf.path, f"ragged_row_lengths_{k}"),
                Tensor((None,), "int64"),
                (None,),
                "int64",
                1,
                False,
                leaf.cap,
            )
        )
        for k in range(leaf.rank - 1)
    ]

    levels = leaf.shape[: leaf.rank]
    dense = None not in levels[1:]

    def step(stored: _Stored) -> npt.NDArray[Any]:
        rows: npt.NDArray[Any] = flat(stored)
        counts_of = [lengths[k](stored) for k in range(len(lengths))]
        check_lengths(leaf.key, levels, counts_of, len(rows))
        if dense:
            return rows.reshape(len(counts_of[0]), *levels[1:], *inner)
        return nest_rows(rows, counts_of)

    return step


def _dataset_step(leaf: _Leaf) -> _Step:
    """A nested Dataset: its leaves decoded as a Sequence, then cut into its elements."""
    inner = [(child.path[len(leaf.path) :], _step(child)) for child in leaf.inner]

    def step(stored: _Stored) -> list[Any]:
        values = [(where, decode(stored)) for where, decode in inner]
        counts = {len(value) for _, value in values}
        if len(counts) > 1:
            raise ExampleError(
                f"feature {leaf.key!r}: the Dataset's features hold different numbers of "
                f"elements {sorted(counts)}; TFDS cuts them into elements and fails too",
                key=leaf.key,
            )
        elements: list[Any] = []
        for i in range(counts.pop() if counts else 0):
            if len(values) == 1 and not values[0][0]:
                elements.append(values[0][1][i])
                continue
            element: Decoded = {}
            for where, value in values:
                node = element
                for name in where[:-1]:
                    node = node.setdefault(name, {})
                node[where[-1]] = value[i]
            elements.append(element)
        return elements

    return step
