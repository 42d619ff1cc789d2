"""The data binding: which shard files a reader's state was in the middle of, as they were.

``specs/checkpoint.md`` §4 ("Data binding") is normative.  A reader's state lists, for
every shard file it held open when it saved, the file's size and the CRC32C of its first
and last 64 KiB (the same span an index sidecar binds to).  A reader restored from that
state checks each of those files when it opens it, before it reads a record: a file that
was rewritten in the meantime (a regenerated dataset) is a
:class:`~readplan.errors.CheckpointMismatchError`, not old records followed by new ones.
The check takes the file's binding as the reader opened it (``found``): its index
sidecar's, already checked against the file, or its ends read through the handle it reads
from, so a restore costs no lookup or read of its own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from readplan._internal.validate import INT64_MAX, preview
from readplan.errors import CheckpointError, CheckpointMismatchError
from readplan.records._binding import SPAN, binding_of
from readplan.storage import StorageOptions, close, open_read

__all__ = ["SPAN", "FileBinding", "ReaderBinding", "bind", "bindings_from_json", "to_json"]


@dataclass(frozen=True)
class FileBinding:
    """One shard file as a reader saw it: ``file_index`` into the plan's instructions."""

    file_index: int
    size: int
    checksum: int

    def to_json(self) -> list[int]:
        return [self.file_index, self.size, self.checksum]

    def check(self, path: str, now: FileBinding) -> None:
        """Refuse ``path``, whose binding is ``now``, if it is no longer the file this
        binding describes."""
        differences = {
            f"reader.files[{self.file_index}].{name}": (getattr(self, name), getattr(now, name))
            for name in ("size", "checksum")
            if getattr(self, name) != getattr(now, name)
        }
        if differences:
            listing = ", ".join(
                f"{name.rsplit('.', 1)[1]} {old} -> {new}"
                for name, (old, new) in differences.items()
            )
            raise CheckpointMismatchError(
                f"{path} changed since the state was saved ({listing}): the dataset was "
                "regenerated or the file rewritten, so resuming would follow records that "
                "were read from the old file with records of the new one. Start a new run "
                "on the new data, or restore the files the state was saved with.",
                differences=differences,
            )


def bind(path: str, file_index: int, storage_options: StorageOptions = None) -> FileBinding:
    """The binding of the file at ``path`` now: its size and the CRC32C of its ends.

    ``path`` is a local path or a storage URL (:mod:`readplan.storage`): one lookup, then
    the ends in exact reads (one ranged request for a file of at most 128 KiB, else two).
    """
    handle = open_read(path, storage_options=storage_options)
    try:
        size, checksum = binding_of(handle)
    finally:
        close(handle)
    return FileBinding(file_index, size, checksum)


def bindings_from_json(entries: Any, field: str) -> dict[int, FileBinding]:
    """The bindings of a state's ``reader.files`` list, each entry checked."""
    if not isinstance(entries, list):
        raise CheckpointError(
            f"{field} must be a list of [file_index, size, checksum], got {preview(entries)}",
            field=field,
        )
    out: dict[int, FileBinding] = {}
    for k, entry in enumerate(entries):
        if not (
            isinstance(entry, list)
            and len(entry) == 3
            and all(_is_count(value) for value in entry)
            and entry[2] < 1 << 32
        ):
            raise CheckpointError(
                f"{field}[{k}] must be [file_index, size, checksum] (non-negative integers, "
                f"the checksum a CRC32C), got {preview(entry)}",
                field=f"{field}[{k}]",
            )
        out[entry[0]] = FileBinding(*entry)
    return out


def to_json(bindings: Iterable[FileBinding]) -> list[list[int]]:
    """A state's ``reader.files`` list, sorted by file index."""
    return [b.to_json() for b in sorted(bindings, key=lambda b: b.file_index)]


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT64_MAX


class ReaderBinding:
    """A reader's data binding: the files a restored state names, each checked when the
    reader first opens it (:meth:`due`), and the bindings its own states give
    (``specs/checkpoint.md`` §4).  ``path(file_index)`` is where the reader opens a file."""

    def __init__(self, path: Callable[[int], str], storage_options: StorageOptions = None) -> None:
        self._path = path
        self._options = storage_options
        self._expected: dict[int, FileBinding] = {}
        self._bound: dict[int, FileBinding] = {}

    def restore(self, expected: Mapping[int, FileBinding]) -> None:
        """Start over from a state whose bindings are ``expected``."""
        self._expected, self._bound = dict(expected), {}

    def due(self, file_index: int) -> Callable[[tuple[int, int] | None], None] | None:
        """The check the restored state asks for before file ``file_index`` is read, or
        ``None`` (the state does not name the file, or it passed once).

        Call it with the file's ``(size, checksum)`` as the reader opened it, or with
        ``None`` to have the file read through a handle of its own.  It raises
        :class:`CheckpointMismatchError` naming the file if it changed since the state was
        saved, every time, until it passes once.
        """
        if file_index not in self._expected:
            return None
        return functools.partial(self._check, file_index)

    def _check(self, file_index: int, found: tuple[int, int] | None) -> None:
        expected = self._expected.get(file_index)
        if expected is None:
            return  # passed when the file was opened before
        path = self._path(file_index)
        if found is None:
            now = bind(path, file_index, self._options)
        else:
            now = FileBinding(file_index, *found)
        expected.check(path, now)
        # The file the reader reads is the one the state bound: a later state binds it
        # as it is, without reading it again.
        self._bound[file_index] = self._expected.pop(file_index)

    def to_json(self, held: Iterable[int]) -> list[list[int]]:
        """The ``reader.files`` list for a state holding the files ``held``: a file still to
        be checked keeps its restored binding, one bound before keeps that binding."""
        self._bound = {
            index: self._expected.get(index)
            or self._bound.get(index)
            or bind(self._path(index), index, self._options)
            for index in held
        }
        return to_json(self._bound.values())
