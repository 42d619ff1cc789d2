"""Tensors stored as raw bytes: ``Tensor(..., encoding="bytes" | "zlib")``.

TFDS writes the array's little-endian buffer (zlib-compressed for ``"zlib"``) as one bytes
value, and, when more than one dimension is unknown, the shape next to it as
``<path>/shape`` (int32) with the buffer as ``<path>/value``. Reading it back is
``tf.io.decode_raw`` and a reshape. ``specs/features.md`` §3.9 is normative.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from readplan.errors import ExampleError, FeatureError
from readplan.metadata._feature_types import STRING, Tensor

if TYPE_CHECKING:
    from readplan.metadata._feature_decode import _Leaf

__all__ = ["encoded_step"]

_Stored = Mapping[str, Any]
_Step = Callable[[_Stored], Any]
_Parse = Callable[[_Stored], npt.NDArray[Any]]
_Elementwise = Callable[..., _Step]


def encoded_step(
    leaf: _Leaf, parser: Callable[[_Leaf], _Parse], elementwise: _Elementwise
) -> _Step:
    """The decoding step of an encoded Tensor leaf (``parser`` reads one entry)."""
    tensor = leaf.feature
    assert isinstance(tensor, Tensor)
    if tensor.dtype == "uint32":
        # tf.io.decode_raw has no uint32, so TFDS cannot read these either.
        raise _refused(leaf, "an encoded uint32 Tensor (TensorFlow's decode_raw has no uint32)")
    if tensor.shape.count(None) > 1:
        return _dynamic_step(leaf, tensor, parser)
    parse = parser(leaf)
    if leaf.skip:
        return lambda stored: _stored_value(parse(stored))
    target = tuple(-1 if dim is None else dim for dim in tensor.shape)
    return elementwise(
        leaf,
        parse,
        lambda data, budget: _values(leaf, data, target, budget),
        tensor.shape,
        tensor.dtype,
    )


def _dynamic_step(leaf: _Leaf, tensor: Tensor, parser: Callable[[_Leaf], _Parse]) -> _Step:
    if leaf.rank:
        raise _refused(leaf, "a Sequence of a Tensor with more than one unknown dimension")
    rank = len(tensor.shape)
    parse_shape = parser(
        dataclasses.replace(
            leaf,
            path=(*leaf.path, "shape"),
            feature=Tensor((rank,), "int32"),
            shape=(rank,),
            dtype="int32",
        )
    )
    parse_value = parser(
        dataclasses.replace(
            leaf, path=(*leaf.path, "value"), feature=Tensor((), STRING), shape=(), dtype=STRING
        )
    )
    if leaf.skip:
        return lambda stored: {"shape": parse_shape(stored), "value": parse_value(stored)[()]}

    def step(stored: _Stored) -> npt.NDArray[Any]:
        dims = tuple(int(dim) for dim in parse_shape(stored))
        if (
            any(want not in (None, got) for want, got in zip(tensor.shape, dims))
            or min(dims, default=0) < 0
        ):
            raise ExampleError(
                f"feature {leaf.key!r} stores shape {dims}, which does not fit {tensor.shape} "
                "(from features.json); the record does not match its dataset's features",
                key=leaf.key,
            )
        return _values(leaf, bytes(parse_value(stored)[()]), dims, leaf.cap)

    return step


def _stored_value(array: npt.NDArray[Any]) -> Any:
    return array[()] if array.ndim == 0 else array


def _values(leaf: _Leaf, data: bytes, shape: tuple[int, ...], budget: int) -> npt.NDArray[Any]:
    """The array of one buffer: ``shape`` (``-1``: any length) of the leaf's dtype, at most
    ``budget`` bytes."""
    tensor = leaf.feature
    assert isinstance(tensor, Tensor)
    key = leaf.key
    stored = np.dtype("int64" if tensor.dtype == "uint64" else tensor.dtype).newbyteorder("<")
    holds = math.prod(shape) * stored.itemsize if -1 not in shape else None
    if holds is not None and holds > budget:
        raise _too_large(leaf, f"shape {shape} takes {holds} bytes", budget)
    if tensor.encoding == "zlib":
        data = _inflate(leaf, data, budget if holds is None else holds, by_cap=holds is None)
    elif len(data) > budget:
        raise _too_large(leaf, f"the buffer holds {len(data)} bytes", budget)
    if len(data) % stored.itemsize:
        raise ExampleError(
            f"feature {key!r} holds {len(data)} bytes, not a whole number of {tensor.dtype} values",
            key=key,
        )
    flat = np.frombuffer(data, stored).view(np.dtype(tensor.dtype).newbyteorder("<"))
    try:
        values: npt.NDArray[Any] = flat.reshape(shape).astype(tensor.dtype)
    except ValueError as err:
        raise ExampleError(
            f"feature {key!r} holds {flat.size} {tensor.dtype} values, which do not fill "
            f"shape {shape} (features.json declares {tensor.shape})",
            key=key,
        ) from err
    return values


def _inflate(leaf: _Leaf, data: bytes, limit: int, *, by_cap: bool) -> bytes:
    """``data`` decompressed, refused once it passes ``limit`` bytes (one more is inflated
    to tell "exactly full" from "too much"): a few compressed bytes can inflate to
    gigabytes, so nothing beyond what the value may hold is produced."""
    key = leaf.key
    shape = leaf.feature.shape if isinstance(leaf.feature, Tensor) else ()
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as err:
        raise ExampleError(
            f"feature {key!r} is declared zlib-encoded but does not decompress ({err})", key=key
        ) from err
    if len(out) > limit:
        if by_cap:
            raise _too_large(leaf, f"the buffer inflates to over {limit} bytes", limit)
        raise ExampleError(
            f"feature {key!r} inflates to more than the {limit} bytes its shape holds "
            f"(features.json declares {shape}); the record does not match its dataset's "
            "features",
            key=key,
        )
    if not inflater.eof:
        raise ExampleError(
            f"feature {key!r} is declared zlib-encoded but does not decompress (incomplete "
            "or truncated stream)",
            key=key,
        )
    return out


def _too_large(leaf: _Leaf, what: str, budget: int) -> FeatureError:
    return FeatureError(
        f"feature {leaf.key}: {what}, more than the {budget} bytes the value may take "
        f"(max_value_bytes={leaf.cap} bounds a decoded value, a Sequence's elements "
        "together); nothing more was decoded. If the value is genuine, pass a larger "
        "max_value_bytes to the decoder or set $READPLAN_MAX_VALUE_BYTES "
        "(specs/features.md §6)",
        feature=leaf.key,
        feature_type="Tensor",
    )


def _refused(leaf: _Leaf, what: str) -> FeatureError:
    return FeatureError(
        f"feature {leaf.key}: {what} is not decoded by readplan; read it with "
        "decoders={...: SkipDecoding()}",
        feature=leaf.key,
        feature_type="Tensor",
    )
