"""Telling URLs from local paths, and joining/splitting both (``specs/storage.md``).

A URL is ``protocol://...`` (a protocol of at least two characters, so a Windows drive
letter is never one) or an fsspec chain ``a::b://...``.  ``file://`` URLs are local paths.
URLs are joined with ``/`` whatever the operating system; local paths with ``os.path``.
"""

from __future__ import annotations

import os
import re

from readplan.errors import ConfigTypeError

__all__ = ["PathLike", "basename", "is_remote", "join", "parent", "protocol", "to_str"]

PathLike = str | os.PathLike[str]

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)(?:::[A-Za-z][A-Za-z0-9+.-]*)*://")
_FILE = "file://"


def to_str(path: PathLike) -> str:
    """``path`` as a string; a ``file://`` URL becomes the local path it names."""
    text = os.fspath(path)
    if not isinstance(text, str):
        raise ConfigTypeError(
            f"paths must be str or os.PathLike[str], got {type(text).__name__}",
            field="path",
            value=path,
        )
    if text.startswith(_FILE):
        return text[len(_FILE) :]
    return text


def protocol(path: PathLike) -> str | None:
    """The URL's (first) protocol, ``None`` for a local path."""
    match = _URL.match(to_str(path))
    return None if match is None else match.group(1)


def is_remote(path: PathLike) -> bool:
    """Whether ``path`` is a URL served by fsspec rather than a local path."""
    return protocol(path) is not None


def join(base: PathLike, *names: str) -> str:
    """``base`` followed by ``names``: ``/``-joined for URLs, ``os.path.join`` otherwise."""
    text = to_str(base)
    if not is_remote(text):
        return os.path.join(text, *names)
    parts = [text.rstrip("/")] + [name.strip("/") for name in names]
    return "/".join(parts)


def basename(path: PathLike) -> str:
    """The last component of ``path``."""
    text = to_str(path)
    if not is_remote(text):
        return os.path.basename(text)
    return text.rstrip("/").rsplit("/", 1)[-1]


def parent(path: PathLike) -> str:
    """``path`` without its last component."""
    text = to_str(path)
    if not is_remote(text):
        return os.path.dirname(text)
    return text.rstrip("/").rsplit("/", 1)[0]
