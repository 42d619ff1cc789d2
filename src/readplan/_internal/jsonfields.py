"""Typed access to a parsed JSON object whose every error names the dotted field path.

Used by every loader of a JSON document (``dataset_info.json``, checkpoints): the error
class is the loader's own, built by the ``error`` callable from a message and the field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from readplan._internal.validate import is_int, preview

__all__ = ["MISSING", "JsonFields"]

ErrorFactory = Callable[[str, str], Exception]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

_KIND_NAMES: dict[type, str] = {str: "string", dict: "object", list: "array", bool: "true or false"}


class JsonFields:
    """One JSON object at ``where`` (``""`` for the top level).

    ``error(message, field)`` builds the exception raised for a problem with ``field``.
    """

    def __init__(self, document: Any, where: str, error: ErrorFactory) -> None:
        self.error = error
        self.where = where
        if not isinstance(document, dict):
            raise error(
                f"{where or 'the top level'} must be a JSON object, got {type(document).__name__}",
                where or "$",
            )
        self.document: dict[str, Any] = document

    def field(self, name: str) -> str:
        """The dotted path of ``name`` inside this object."""
        return f"{self.where}.{name}" if self.where else name

    def fail(self, name: str, message: str) -> Exception:
        """The loader's error for field ``name``."""
        return self.error(message, self.field(name))

    def raw(self, name: str) -> Any:
        """The value of ``name``, or :data:`MISSING`."""
        return self.document.get(name, MISSING)

    def get(self, name: str, kind: type, *, optional: bool = False) -> Any:
        """The value of ``name``, of JSON type ``kind`` (``int``: a non-negative integer).

        ``optional``: a missing field or ``null`` gives ``None``.
        """
        value = self.raw(name)
        if value is MISSING or (value is None and optional):
            if optional:
                return None
            raise self.fail(name, f"field {self.field(name)!r} is missing")
        if kind is int:
            return self.non_negative(name, value)
        if kind is bool and not isinstance(value, bool):
            raise self.fail(
                name, f"field {self.field(name)!r} must be true or false, got {preview(value)}"
            )
        if not isinstance(value, kind):
            raise self.fail(
                name,
                f"field {self.field(name)!r} must be a JSON {_KIND_NAMES.get(kind, kind.__name__)}"
                f", got {preview(value)}",
            )
        return value

    def non_negative(self, name: str, value: Any) -> int:
        """``value`` (found at ``name``) as a non-negative integer."""
        if not is_int(value) or value < 0:
            raise self.fail(
                name,
                f"field {self.field(name)!r} must be a non-negative integer, got {preview(value)}",
            )
        return value

    def child(self, name: str, *, optional: bool = False) -> JsonFields | None:
        """The object at ``name`` as :class:`JsonFields` (``None`` if optional and absent)."""
        value = self.get(name, dict, optional=optional)
        return None if value is None else JsonFields(value, self.field(name), self.error)
