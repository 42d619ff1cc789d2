"""What the viewer may serve: the paths given on the command line and what lies under them.

``specs/viewer.md`` §4.  Each command-line argument is a :class:`Root`; the page names a
file by root number and a relative path, and :meth:`Root.resolve` refuses anything that
would leave the root: absolute paths, ``..`` and ``.`` components, backslashes, NUL, and
local symbolic links pointing out (checked on the real path, after every link is followed).
Roots are classified once, at startup: a TFDS dataset directory (it holds
``dataset_info.json``), a directory of datasets (found at most three levels down), a
TFRecord or TBL file, or a saved reader state / checkpoint (JSON).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from readplan import storage
from readplan.errors import CheckpointError, ConfigError
from readplan.metadata.loader import INFO_FILE
from readplan.state.codec import parse_json
from readplan.state.limits import read_state_file

__all__ = ["ForbiddenPathError", "Kind", "Root", "classify", "safe_parts"]

Kind = Literal["dataset", "directory", "file", "state"]
_DATASET_DEPTH = 3
_MAX_DATASETS = 200
_STATE_PROBE_BYTES = 4096


class ForbiddenPathError(ConfigError):
    """A requested path lies outside every root given on the command line."""


@dataclass(frozen=True)
class Root:
    """One command-line argument: ``number`` is its place, ``path`` as given."""

    number: int
    path: str
    kind: Kind
    datasets: tuple[str, ...] = field(default=())  # relative paths (directory roots)

    @property
    def remote(self) -> bool:
        return storage.is_remote(self.path)

    def resolve(self, relative: str) -> str:
        """The path of ``relative`` under this root; :class:`ForbiddenPathError` if it would
        leave it."""
        parts = safe_parts(relative)
        if not parts:
            return self.path
        if self.kind in ("file", "state"):
            raise ForbiddenPathError(
                f"{self.path} is a file: only the file itself is served, not {relative!r}",
                field="path",
                value=relative,
            )
        if self.remote:
            return storage.join(self.path, *parts)
        target = os.path.join(self.path, *parts)
        real_root = os.path.realpath(self.path)
        real = os.path.realpath(target)
        if os.path.commonpath([real_root, real]) != real_root:
            raise ForbiddenPathError(
                f"{relative!r} leads out of {self.path} (through a symbolic link); only what "
                "lies under the paths given on the command line is served",
                field="path",
                value=relative,
            )
        return target


def safe_parts(relative: str) -> list[str]:
    """The components of a relative path; :class:`ForbiddenPathError` if it could escape."""
    if "\\" in relative or "\x00" in relative or relative.startswith("/") or ":" in relative:
        raise ForbiddenPathError(
            f"path {relative!r} must be relative, with '/' separators, and no ':' or NUL",
            field="path",
            value=relative,
        )
    parts = [part for part in relative.split("/") if part]
    if any(part in (".", "..") for part in parts):
        raise ForbiddenPathError(
            f"path {relative!r} has a '.' or '..' component; name files under a root directly",
            field="path",
            value=relative,
        )
    return parts


def classify(number: int, path: str) -> Root:
    """The :class:`Root` of command-line argument ``path`` (checked to exist)."""
    path = storage.to_str(path)
    if not storage.is_remote(path):
        path = os.path.abspath(path)
    if storage.isdir(path):
        if storage.isfile(storage.join(path, INFO_FILE)):
            return Root(number, path, "dataset")
        return Root(number, path, "directory", tuple(_datasets_under(path)))
    if not storage.isfile(path):
        raise FileNotFoundError(f"{path}: no such file or directory")
    return Root(number, path, "state" if _is_state(path) else "file")


def _is_state(path: str) -> bool:
    """A JSON document that is a readplan checkpoint or reader state."""
    head = storage.read_prefix(path, _STATE_PROBE_BYTES)
    if not head.lstrip().startswith(b"{"):
        return False
    try:
        document = parse_json(read_state_file(path))
    except CheckpointError:  # not JSON, nested past a state's depth, or too large for one
        return False
    return isinstance(document, dict) and document.get("format") == "readplan-checkpoint"


def _datasets_under(root: str) -> list[str]:
    """Dataset directories below a local or remote directory, breadth first, bounded."""
    found: list[str] = []
    level = [""]
    for _ in range(_DATASET_DEPTH):
        below: list[str] = []
        for relative in level:
            for full, is_dir in storage.listdir(storage.join(root, relative) if relative else root):
                name = storage.basename(full)
                child = f"{relative}/{name}" if relative else name
                if name.startswith(".") or not is_dir or os.path.islink(full):
                    continue
                if storage.isfile(storage.join(full, INFO_FILE)):
                    found.append(child)
                else:
                    below.append(child)
                if len(found) >= _MAX_DATASETS:
                    return found
        level = below
    return found
