"""Durable, atomic replacement of a local file: the old contents or the new, never half.

The bytes go to a temporary file in the target's folder (so the rename stays on one file
system), are fsynced, renamed over the target, and the folder is fsynced so the rename
itself survives a crash.  The file gets the permissions a normal ``open(path, "w")``
would give (``0o666`` less the umask), not ``mkstemp``'s private ``0o600``: index
sidecars and checkpoints of a shared dataset must stay readable by its other users.
Temporaries left behind by writers that were killed on this host are removed by the next
write to the same target.  Every error names the user's path, never the temporary.

Only a regular file (or nothing) is ever replaced: a symbolic link is followed to the
regular file it names, whose folder then holds the temporary (the link stays a link); a
FIFO, a device, a socket, a directory, a dangling link or a link to any of them is refused
with :class:`~readplan.errors.StorageError` before anything is written, and left as it was.
"""

from __future__ import annotations

import os
import secrets
import socket
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from readplan.errors import StorageError

__all__ = ["atomic_output", "atomic_write", "replaceable_target"]

_SUFFIX = ".tmp"


def atomic_write(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably."""
    with atomic_output(path) as handle:
        handle.write(data)


@contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary file whose contents replace ``path`` atomically and durably on a normal exit.

    Leaving the block by an exception removes the temporary and leaves ``path`` as it was.
    """
    target = replaceable_target(path)
    folder = target.parent
    _remove_stale_temporaries(folder, target.name)
    temporary = folder / f"{_prefix(target.name)}{os.getpid()}.{secrets.token_hex(4)}{_SUFFIX}"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as err:
        raise _named(err, target) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException as err:
        temporary.unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise _named(err, target) from None
        raise
    _fsync_folder(folder)


def replaceable_target(path: str | os.PathLike[str]) -> Path:
    """The regular file an atomic write of ``path`` replaces: ``path`` itself when it is one
    or does not exist, the file a symbolic link resolves to; anything else is refused."""
    target = Path(path)
    try:
        status = os.lstat(target)
    except FileNotFoundError:
        return target
    except OSError as err:
        raise _named(err, target) from None
    if stat.S_ISREG(status.st_mode):
        return target
    if stat.S_ISLNK(status.st_mode):
        try:
            resolved = Path(os.path.realpath(target, strict=True))
            status = os.stat(resolved)
        except OSError as err:
            what = f"a symbolic link that does not resolve ({err.strerror})"
            raise _refused(target, what) from None
        if stat.S_ISREG(status.st_mode):
            return resolved
        raise _refused(target, f"a symbolic link to {resolved}, {_kind(status.st_mode)}")
    raise _refused(target, _kind(status.st_mode))


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _refused(target: Path, what: str) -> StorageError:
    return StorageError(
        f"{target}: refusing to write over it: it is {what}; a file is written only over a "
        "regular file or where nothing exists (to write to standard output, give '-' where "
        "the command accepts it)",
        url=os.fspath(target),
        operation="write",
    )


def _prefix(name: str) -> str:
    # The host is part of the name: a pid says nothing about a writer on another machine
    # sharing the folder, so only this host's dead writers are cleaned up.
    return f".{name}.{socket.gethostname()}."


def _remove_stale_temporaries(folder: Path, name: str) -> None:
    prefix = _prefix(name)
    try:
        candidates = [p for p in folder.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return  # an unreadable folder: the write itself reports the problem
    for candidate in candidates:
        pid = candidate.name[len(prefix) :].split(".", 1)[0]
        if candidate.name.endswith(_SUFFIX) and pid.isdigit() and not _alive(int(pid)):
            candidate.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process (or not a pid we can ask about): keep it
    return True


def _named(err: OSError, target: Path) -> OSError:
    """The same OSError class, naming the user's path instead of the temporary."""
    return type(err)(err.errno, err.strerror or str(err), os.fspath(target))


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory descriptors
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)
