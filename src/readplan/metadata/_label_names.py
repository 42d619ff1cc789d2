"""Class names from a text file, one per line, as TFDS's ``ClassLabel(names_file=...)`` and
its ``*.labels.txt`` files hold them (``specs/features.md`` §1.4)."""

from __future__ import annotations

import os

from readplan import storage
from readplan.errors import FeatureError

__all__ = ["names_in_file"]


def names_in_file(path: str | os.PathLike[str]) -> list[str]:
    """The names in ``path`` (a path or URL): every line stripped, empty ones dropped."""
    try:
        text = storage.read_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise FeatureError(
            f"ClassLabel names_file {os.fspath(path)!r} cannot be read: {err}",
            feature_type="ClassLabel",
            path=os.fspath(path),
        ) from err
    return [name.strip() for name in text.split("\n") if name.strip()]
