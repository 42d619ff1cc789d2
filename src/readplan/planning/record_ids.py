"""The file part of TFDS's ``tfds_id`` (``specs/order.md`` §5, "Record ids").

A record's ``tfds_id`` is ``<prefix>__<record index>``.  When every file lies in one
directory the prefix is the file's base name and is named on demand, so a plan of 10^5 or
10^6 files never formats every file name to identify the records it delivers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from readplan._internal.arrays import IntArray
from readplan.errors import ConfigError, ConfigTypeError
from readplan.planning.instructions import InstructionTable

__all__ = ["PrefixTable", "RecordIds", "tfds_id_prefixes"]

PrefixTable: TypeAlias = "Mapping[int, str] | tuple[str, ...]"
"""Files' ``tfds_id`` prefixes by file index: a cache of some of them, or all of them."""

# At most this many prefixes are kept named (a plan may have millions of files).
_NAMED = 1 << 12


class RecordIds:
    """The ``tfds_id`` prefixes of ``table``'s files.

    ``shard_names`` says the table's file names are its dataset's shard names: those sit
    directly in the dataset's directory (their templates and names hold no "/",
    :mod:`readplan.metadata.naming`), so every prefix is a base name.  File names from
    elsewhere (a sort function) are compared all together.
    """

    def __init__(self, table: InstructionTable, *, shard_names: bool) -> None:
        self._table = table
        self._one_directory = shard_names
        # Prefixes named lately: a reader names the same open files batch after batch.
        self._named: dict[int, str] = {}

    @cached_property
    def all(self) -> tuple[str, ...]:
        """Every file's prefix, in instruction order."""
        return tuple(tfds_id_prefixes([fi.filename for fi in self._table]))

    def ids(self, file_index: npt.ArrayLike, record_index: npt.ArrayLike) -> list[str]:
        """``<prefix>__<record index>`` of each record; the two sequences are 1-D integers
        of one length and every file index names one of the table's files."""
        files = _index_array(file_index, "file_index")
        records = _index_array(record_index, "record_index")
        if files.shape != records.shape:
            raise ConfigError(
                f"file_index and record_index must have one length, got {files.size} and "
                f"{records.size}",
                field="record_index",
                value=records.size,
            )
        outside = (files < 0) | (files >= len(self._table))
        if outside.any():
            raise ConfigError(
                f"file_index {int(files[outside][0])} names no file: the plan has "
                f"{len(self._table)} (valid: 0..{len(self._table) - 1})",
                field="file_index",
                value=int(files[outside][0]),
            )
        return [f"{p}__{r}" for p, r in zip(self.of(files), records.tolist())]

    def of(self, file_index: IntArray | list[int]) -> list[str]:
        """The prefix of each of the files ``file_index`` (an array, or its ``tolist()``)."""
        indices = file_index.tolist() if isinstance(file_index, np.ndarray) else file_index
        if not self._one_directory:
            return list(map(self.all.__getitem__, indices))
        try:  # a reader names the same open files batch after batch: hits are the rule
            return list(map(self._named.__getitem__, indices))
        except KeyError:
            wanted = set(indices)
            self._name(wanted.difference(self._named), wanted)
            return list(map(self._named.__getitem__, indices))

    def table(self, file_index: IntArray | None = None) -> PrefixTable:
        """A table ``t`` with ``t[f]`` the prefix of each file ``f`` of ``file_index``
        (of the files named lately when it is ``None``; of every file without one directory)."""
        if not self._one_directory:
            return self.all
        if file_index is not None:
            indices = set(file_index.tolist())
            self._name(indices.difference(self._named), indices)
        return self._named

    def _name(self, missing: set[int], wanted: set[int]) -> None:
        """Names the ``missing`` files of the ``wanted`` ones; when too many are named the
        cache starts again from the wanted files."""
        named = self._named
        if len(named) + len(missing) > _NAMED:
            named.clear()
            missing = wanted
        table = self._table
        named.update((f, os.path.basename(table.filename(f))) for f in missing)


def tfds_id_prefixes(filenames: Sequence[str]) -> list[str]:
    """The shortest path tail that tells files apart once their common part is removed."""
    dirs = [os.path.dirname(name) for name in filenames]
    if len(set(dirs)) <= 1:
        return [os.path.basename(name) for name in filenames]
    # A character-level suffix on purpose: TFDS compares directory strings, not paths.
    common = os.path.commonprefix([d[::-1] for d in dirs])[::-1]  # noqa: RUF071
    prefixes = []
    for directory, name in zip(dirs, filenames):
        head = directory[: len(directory) - len(common)]
        run = head.rsplit("/", 1)[-1]
        prefixes.append(f"{run}{common}/{os.path.basename(name)}" if run else name)
    return prefixes


def _index_array(values: npt.ArrayLike, field: str) -> IntArray:
    """``values`` as a 1-D int64 array, or a ConfigError naming ``field``."""
    array = np.asarray(values)
    if array.ndim != 1 or not (array.size == 0 or np.issubdtype(array.dtype, np.integer)):
        raise ConfigTypeError(
            f"{field} must be a 1-D sequence of integers, got {values!r:.80}",
            field=field,
            value=values,
        )
    return array.astype(np.int64, copy=False)
