"""Putting a converted file in place without ever replacing one (``specs/tbl.md`` §9).

A conversion's unit of work writes one file (a shard, or a copied file such as
``features.json``) and then *publishes* it under its final name.  Publishing is atomic and
never replaces anything: when the name is already taken, the file there is kept if it holds
exactly the bytes this conversion writes (a unit retried or run twice by a pipeline runner,
or a rerun after an interruption) and refused otherwise, with a :class:`ConfigError` naming
it (a user's file is never overwritten).  So any number of runs of the same unit leave the
same file, and a reader never sees a partial one:

* a local target is written in a private folder beside it
  (``.readplan-unit-<random>/<name>``, on the same file system), flushed to disk and
  hard-linked to its name (``link``, unlike ``rename``, fails where a file exists); the
  private folder is then removed (:func:`remove_leftovers` removes those of killed units);
* an object-store target is written to a local temporary file and uploaded in one piece
  (a store makes an object visible only once it is complete).
"""

from __future__ import annotations

import errno
import filecmp
import os
import shutil
import tempfile
from collections.abc import Callable

from readplan import storage
from readplan.errors import ConfigError

__all__ = ["publish", "publish_bytes", "remove_leftovers"]

_PRIVATE = ".readplan-unit-"
# Where a file system has no hard links, publishing falls back to checking and renaming.
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK}


def publish(write: Callable[[str], object], target: str) -> None:
    """Call ``write(path)`` to write a file at a temporary local ``path``, then publish it as
    ``target`` (a local path or a URL) as the module says."""
    remote = storage.is_remote(target)
    folder = None if remote else os.path.dirname(target) or "."
    with tempfile.TemporaryDirectory(prefix=_PRIVATE, dir=folder) as private:
        temporary = os.path.join(private, storage.basename(target))
        write(temporary)
        if remote:
            with open(temporary, "rb") as handle:
                _put_object(handle.read(), target)
            return
        _flush(temporary)
        _link(temporary, target)
    _flush(folder or ".")


def publish_bytes(data: bytes, target: str) -> None:
    """Publish ``data`` as ``target`` (a file copied into a converted dataset)."""

    def write(path: str) -> None:
        with open(path, "wb") as out:
            out.write(data)

    publish(write, target)


def remove_leftovers(folder: str) -> None:
    """Remove the private folders that units killed before publishing left in the local
    ``folder`` (a finished conversion holds none)."""
    for entry in os.listdir(folder):
        path = os.path.join(folder, entry)
        if entry.startswith(_PRIVATE) and os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)


def _link(temporary: str, target: str) -> None:
    try:
        os.link(temporary, target)
    except FileExistsError:
        _check_same(temporary, target)
    except OSError as err:
        if err.errno not in _NO_LINKS:
            raise
        # No hard links here: two units racing for the name write the same bytes, so the
        # window between the check and the rename cannot change what the name holds.
        if os.path.lexists(target):
            _check_same(temporary, target)
        else:
            os.rename(temporary, target)


def _check_same(temporary: str, target: str) -> None:
    if not (os.path.isfile(target) and filecmp.cmp(temporary, target, shallow=False)):
        raise _taken(target)


def _put_object(data: bytes, target: str) -> None:
    if storage.exists(target):
        if storage.read_bytes(target) != data:
            raise _taken(target)
        return
    storage.write_bytes(target, data)


def _taken(target: str) -> ConfigError:
    return ConfigError(
        f"{target} already exists and is not the file this conversion writes there; it was "
        "not replaced: remove it, or convert into an empty directory",
        field="dst_dir",
        value=target,
    )


def _flush(path: str) -> None:
    """Make ``path`` (a file, or the folder a name was added to) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
