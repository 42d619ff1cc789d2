"""How TFDS stores the leaves below Sequences: stacked, or as ragged tensors.

Encoding leaves each leaf below ``k`` Sequences as ``k`` levels of lists of its element
arrays; :func:`stored_entries` turns them into what TFDS's serializer writes: one stacked
array below one Sequence, and below two or more (its ``sequence_rank``) the
``<key>/ragged_flat_values`` and ``<key>/ragged_row_lengths_<k>`` entries of
``_add_ragged_fields`` (``specs/features.md`` §5).  TFDS reads a ragged leaf back only when
its stored shape has two or more unknown dimensions and the element's own shape is known;
other layouts below two Sequences are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from readplan.errors import FeatureError
from readplan.metadata._feature_types import (
    STRING,
    Audio,
    BBoxFeature,
    ClassLabel,
    Feature,
    Sequence,
    Shape,
    Tensor,
    Text,
)

__all__ = ["Layout", "layouts", "stored_entries"]


@dataclass(frozen=True)
class Layout:
    """One stored entry: the Sequence lengths above it and its element's shape and dtype."""

    lengths: tuple[int | None, ...]
    own: Shape
    dtype: Any
    plain: bool  # values in a tf.train.Example list (not an encoded file or buffer)
    feature: Feature


def leaf_tensor(feature: Feature) -> Tensor | None:
    """The Tensor a leaf is stored as; None for an Image (one encoded file)."""
    if isinstance(feature, Tensor):
        return feature
    if isinstance(feature, (Text, ClassLabel, BBoxFeature, Audio)):
        return feature.tensor
    return None


def layouts(
    feature: Feature | Mapping[str, Feature], key: str, lengths: tuple[int | None, ...] = ()
) -> dict[str, Layout]:
    """The layout of every entry key below ``feature`` (stored under ``key``)."""
    if isinstance(feature, Mapping):
        out: dict[str, Layout] = {}
        for name, inner in feature.items():
            out.update(layouts(inner, f"{key}/{name}" if key else name, lengths))
        return out
    if isinstance(feature, Sequence):
        return layouts(feature.feature, key, (*lengths, feature.length))
    tensor = leaf_tensor(feature)
    if tensor is None:
        return {key: Layout(lengths, (), object, False, feature)}
    if tensor.encoding == "none":
        dtype = object if tensor.dtype == STRING else np.dtype(tensor.dtype)
        return {key: Layout(lengths, tensor.shape, dtype, True, feature)}
    if tensor.shape.count(None) > 1:  # TFDS stores the buffer and the shape apart
        return {
            f"{key}/shape": Layout(lengths, (len(tensor.shape),), np.dtype("int32"), True, feature),
            f"{key}/value": Layout(lengths, (), object, False, feature),
        }
    return {key: Layout(lengths, (), object, False, feature)}


def stored_entries(key: str, value: Any, layout: Layout) -> dict[str, npt.NDArray[Any]]:
    """The entries TFDS writes for ``value``: the leaf's array, nested in one list per
    Sequence above it."""
    rank = len(layout.lengths)
    if rank == 0:
        return {key: value}
    shape = (*layout.lengths, *layout.own)
    if rank == 1:
        if layout.plain and shape.count(None) > 1:
            raise FeatureError(
                f"feature {key}: a Sequence of a Tensor of shape {layout.own} has the stored "
                f"shape {shape}, with more than one unknown dimension, which TFDS cannot "
                "read; give the Tensor a known shape or encoding='zlib'",
                feature=key,
                feature_type=type(layout.feature).tfds_class,
            )
        return {key: _stacked(key, value, layout)}
    if not layout.plain or shape.count(None) < 2 or None in layout.own:
        raise FeatureError(
            f"feature {key}: below {rank} Sequences a leaf of stored shape {shape} is written "
            "by TFDS as a ragged tensor it cannot read back (TFDS reads ragged tensors of "
            "plain Tensors with two or more unknown lengths and a known element shape); "
            "change the layout, e.g. an encoded Tensor",
            feature=key,
            feature_type=type(layout.feature).tfds_class,
        )
    flat: list[npt.NDArray[Any]] = []
    row_lengths: list[list[int]] = [[] for _ in range(rank)]
    _flatten(value, 0, flat, row_lengths)
    known = tuple(dim or 0 for dim in layout.own)  # known: checked above
    values = np.stack(flat) if flat else np.empty((0, *known), layout.dtype)
    out = {f"{key}/ragged_flat_values": values}
    for level in range(1, rank):
        out[f"{key}/ragged_row_lengths_{level - 1}"] = np.array(row_lengths[level], np.int64)
    return out


def _flatten(
    rows: list[Any], level: int, flat: list[npt.NDArray[Any]], row_lengths: list[list[int]]
) -> None:
    row_lengths[level].append(len(rows))
    if level == len(row_lengths) - 1:
        flat.extend(rows)
        return
    for row in rows:
        _flatten(row, level + 1, flat, row_lengths)


def _stacked(key: str, parts: list[npt.NDArray[Any]], layout: Layout) -> npt.NDArray[Any]:
    if not parts:
        return np.empty((0, *(dim or 0 for dim in layout.own)), layout.dtype)
    shapes = {part.shape for part in parts}
    if len(shapes) != 1:
        raise FeatureError(
            f"feature {key}: the elements of a Sequence have different shapes "
            f"{sorted(shapes)}; TFDS stacks them and fails too (a Sequence of Sequences "
            "stores elements of different lengths)",
            feature=key,
            feature_type=type(layout.feature).tfds_class,
        )
    return np.stack(parts)
