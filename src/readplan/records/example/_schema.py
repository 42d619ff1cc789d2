"""The entries of a parse schema: :class:`FixedLen` and :class:`VarLen` (``specs/example.md`` §4).

Each validates its dtype, shape and default when built, so that :func:`readplan.example.parse`
only checks records against it.  The documented import path is :mod:`readplan.example`.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeGuard

import numpy as np

from readplan._internal.frozen import init_fields
from readplan._internal.validate import INT64_MAX, preview
from readplan.errors import ConfigError
from readplan.records.example._kinds import BYTES, DTYPES, FLOAT32, INT64, NUMPY_DTYPE

__all__ = ["DTypeLike", "FixedLen", "VarLen"]

DTypeLike: TypeAlias = str | type | np.dtype[Any]
"""A feature type: ``"int64"``, ``"float32"``, ``"bytes"`` or the matching numpy dtype."""


@dataclass(frozen=True, init=False)
class FixedLen:
    """A feature with a fixed number of values, reshaped to ``shape``.

    Like TensorFlow's ``FixedLenFeature``: ``shape`` must be fully defined (no ``-1``; use
    :class:`VarLen` with a ``shape`` for a variable first dimension). A missing feature takes
    ``default`` (any nesting holding exactly ``prod(shape)`` values), or is an error when
    ``default`` is None. ``dtype`` is stored as its name, ``shape`` as a tuple and
    ``default`` as a flat tuple. See ``specs/example.md`` §4.
    """

    shape: tuple[int, ...]
    dtype: str
    default: Any = field(kw_only=True)

    def __init__(self, shape: Sequence[int], dtype: DTypeLike, *, default: Any = None) -> None:
        name, dims = _dtype_name(dtype), _shape_tuple(shape)
        if default is not None and _is_dtype(name) and _is_shape(dims, minimum=0):
            default = _flat_default(default, name, dims)
        init_fields(self, shape=dims, dtype=name, default=default)
        self.__post_init__()

    def __post_init__(self) -> None:
        _check_dtype(self.dtype)
        _check_shape(self.shape)
        if not _is_shape(self.shape, minimum=0):
            raise ConfigError(
                f"FixedLen shape {self.shape} has an unknown dimension; FixedLen needs a fully "
                "defined shape, use VarLen(dtype, shape=(-1, ...)) for a variable first "
                "dimension",
                field="shape",
                value=self.shape,
            )
        if self.default is not None:
            _default_tuple(self.default, self.dtype, self.shape)  # raises for a bad default


@dataclass(frozen=True, init=False)
class VarLen:
    """A feature with any number of values; missing means empty.

    ``shape`` is ``(-1,)`` for a flat array, or ``(-1, *inner)`` to split the values into rows
    of shape ``inner`` (like TensorFlow's ``FixedLenSequenceFeature(inner, allow_missing=True)``;
    e.g. ``(-1, 4)`` for bounding boxes). ``dtype`` is stored as its name and ``shape`` as a
    tuple. See ``specs/example.md`` §4.
    """

    dtype: str
    shape: tuple[int, ...] = field(kw_only=True)

    def __init__(self, dtype: DTypeLike, *, shape: Sequence[int] = (-1,)) -> None:
        init_fields(self, dtype=_dtype_name(dtype), shape=_shape_tuple(shape))
        self.__post_init__()

    def __post_init__(self) -> None:
        _check_dtype(self.dtype)
        _check_shape(self.shape)
        if not self.shape or self.shape[0] != -1 or not _is_shape(self.shape[1:], minimum=1):
            raise ConfigError(
                f"VarLen shape {self.shape} must be (-1, *inner) with every inner dimension >= 1,"
                " e.g. (-1,) or (-1, 4); the -1 stands for the number of rows",
                field="shape",
                value=self.shape,
            )


def _dtype_name(dtype: Any) -> Any:
    """The name of a dtype given as a name, numpy type or dtype; otherwise ``dtype`` as given."""
    if isinstance(dtype, str) and dtype in DTYPES:
        return dtype
    try:
        resolved = np.dtype(dtype)
    except (TypeError, ValueError):
        return dtype
    if resolved == np.int64:
        return INT64
    if resolved == np.float32:
        return FLOAT32
    return BYTES if resolved.kind == "S" else dtype


def _is_dtype(dtype: object) -> TypeGuard[str]:
    return isinstance(dtype, str) and dtype in DTYPES


def _check_dtype(dtype: object) -> None:
    if not _is_dtype(dtype):
        raise ConfigError(
            f"dtype {dtype!r} is not a tf.train.Example type; use 'int64', 'float32' or "
            "'bytes' (or np.int64, np.float32, np.bytes_)",
            field="dtype",
            value=dtype,
        )


def _shape_tuple(shape: Any) -> Any:
    """A sequence of integers (numpy's too) as a tuple of ints; otherwise ``shape`` as given."""
    if isinstance(shape, Sequence) and not isinstance(shape, (str, bytes)):
        try:
            return tuple(operator.index(dim) for dim in shape)
        except TypeError:
            pass
    return shape


def _check_shape(shape: object) -> None:
    if not (isinstance(shape, tuple) and all(type(dim) is int for dim in shape)):
        raise ConfigError(
            f"shape {shape!r} is not a tuple of ints; write e.g. () for a scalar or (3,) for "
            "three values",
            field="shape",
            value=shape,
        )


def _is_shape(dims: object, *, minimum: int) -> TypeGuard[tuple[int, ...]]:
    return isinstance(dims, tuple) and all(type(dim) is int and dim >= minimum for dim in dims)


def _flat_default(default: object, dtype: str, shape: tuple[int, ...]) -> Any:
    """``default`` as a flat tuple of ``dtype`` values, or as given for __post_init__ to refuse."""
    try:
        return _default_tuple(default, dtype, shape)
    except ConfigError:
        return default


def _default_tuple(default: object, dtype: str, shape: tuple[int, ...]) -> tuple[Any, ...]:
    try:
        flat = np.asarray(default, dtype=object if dtype == BYTES else None).reshape(-1)
    except ValueError as err:
        raise _bad_default(default, dtype, f"it is not a regular array ({err})") from err
    if flat.size != math.prod(shape):
        raise _bad_default(
            default,
            dtype,
            f"it holds {flat.size} values but shape {shape} needs {math.prod(shape)}",
        )
    if dtype == BYTES:
        if not all(isinstance(v, (bytes, str)) for v in flat):
            raise _bad_default(default, dtype, "it holds values that are not bytes or str")
        return tuple(v.encode("utf-8") if isinstance(v, str) else v for v in flat)
    allowed = "iub" if dtype == INT64 else "iubf"
    if flat.size == 0:
        return ()  # numpy reads [] as float64; an empty default has no values to convert
    if flat.dtype.kind not in allowed or (
        flat.size and flat.dtype.kind == "u" and int(flat.max()) > INT64_MAX
    ):
        raise _bad_default(default, dtype, f"its values ({flat.dtype}) do not convert exactly")
    with np.errstate(over="ignore"):
        return tuple(flat.astype(NUMPY_DTYPE[dtype]))


def _bad_default(default: object, dtype: str, why: str) -> ConfigError:
    return ConfigError(
        f"FixedLen default {preview(default)} cannot serve as a {dtype} value: {why}; give "
        "a value (or nested list) with exactly prod(shape) values of the feature's type",
        field="default",
        value=default,
    )
