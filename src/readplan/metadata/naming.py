"""Shard layout and shard file names, as TFDS's writer makes them (``specs/splits.md`` §10)."""

from __future__ import annotations

import string

import numpy as np

from readplan._internal.validate import is_int
from readplan.errors import DatasetInfoError

__all__ = [
    "DEFAULT_FILEPATH_TEMPLATE",
    "SHARD_PLACEHOLDERS",
    "format_shard_name",
    "shard_lengths",
    "template_fields",
]

DEFAULT_FILEPATH_TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"

_MIN_SHARD_DIGITS = 5
_EXACT_DOUBLE = 1 << 53
_PLACEHOLDERS = ("DATASET", "SPLIT", "FILEFORMAT", "SHARD_INDEX", "NUM_SHARDS", "SHARD_X_OF_Y")
SHARD_PLACEHOLDERS = frozenset({"SHARD_INDEX", "SHARD_X_OF_Y"})


def shard_lengths(num_examples: int, num_shards: int) -> list[int]:
    """Shard lengths TFDS's (non-Beam) writer produces for ``num_examples`` in ``num_shards``.

    Shard ``k`` ends at ``round(num_examples * (k + 1) / num_shards)`` (ties to even on the
    double quotient).  Use it for synthetic layouts only: existing data is described by its
    ``dataset_info.json``.  See ``specs/splits.md`` §10.1.
    """
    for name, value in (("num_examples", num_examples), ("num_shards", num_shards)):
        if not is_int(value) or value < 0:
            raise DatasetInfoError(f"{name} must be a non-negative int, got {value!r}", field=name)
    if num_shards == 0:
        raise DatasetInfoError(
            "num_shards must be at least 1, got 0: every split is written to one or more shards",
            field="num_shards",
        )
    if num_examples == 0:
        raise DatasetInfoError(
            "No examples were yielded.\nnum_examples is 0: TFDS's writer refuses to write an "
            "empty split, so no shard layout exists for it.",
            field="num_examples",
        )
    if num_examples < num_shards:
        raise DatasetInfoError(
            f"num_examples ({num_examples}) < number_of_shards ({num_shards})\n"
            "TFDS's writer refuses to write fewer examples than shards (a shard would be "
            "empty); use at most num_examples shards.",
            field="num_shards",
        )
    if num_examples * num_shards < _EXACT_DOUBLE:
        # Every product is an exact double, so the division rounds as Python's does and
        # numpy's round, like Python's, sends ties to even.
        quotients = np.arange(1, num_shards + 1, dtype=np.int64) * num_examples / num_shards
        rounded = np.concatenate(([0], np.round(quotients).astype(np.int64)))
        lengths: list[int] = np.diff(rounded).tolist()
        return lengths
    ends = [round(num_examples * k / num_shards) for k in range(1, num_shards + 1)]
    return [end - start for start, end in zip([0, *ends[:-1]], ends)]


def template_fields(template: str) -> list[str]:
    """The placeholder names of ``template``, after checking it names a file in data_dir."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as err:
        raise DatasetInfoError(
            f"filepath template {template!r} is malformed ({err}); write placeholders as "
            f"{{NAME}} with NAME one of {', '.join(_PLACEHOLDERS)}",
            field="filepath_template",
        ) from None
    literal = "".join(text for text, _, _, _ in parsed)
    if "/" in literal or "\\" in literal or ".." in literal:
        raise DatasetInfoError(
            f"filepath template {template!r} would name a file outside the dataset directory "
            "(it contains '/', '\\' or '..'); shard files must sit directly in data_dir",
            field="filepath_template",
        )
    names = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in _PLACEHOLDERS or spec or conversion:
            raise DatasetInfoError(
                f"filepath template {template!r} cannot be formatted: placeholder {name!r} "
                f"(with conversion {conversion!r}, format {spec!r}) is not one of "
                f"{', '.join('{' + known + '}' for known in _PLACEHOLDERS)}, written bare",
                field="filepath_template",
            )
        names.append(name)
    return names


def format_shard_name(
    template: str | None,
    *,
    dataset: str,
    split: str,
    file_format: str,
    shard_index: int,
    num_shards: int,
) -> str:
    """The basename of shard ``shard_index`` of ``num_shards`` (``None``: TFDS's default)."""
    width = max(_MIN_SHARD_DIGITS, len(str(num_shards)))
    index_text = f"{shard_index:0{width}d}"
    count_text = f"{num_shards:0{width}d}"
    values = {
        "DATASET": dataset,
        "SPLIT": split,
        "FILEFORMAT": file_format,
        "SHARD_INDEX": index_text,
        "NUM_SHARDS": count_text,
        "SHARD_X_OF_Y": f"{index_text}-of-{count_text}",
    }
    return (template or DEFAULT_FILEPATH_TEMPLATE).format_map(values)
