"""Request parameters of the viewer's API, typed and bounded (``specs/viewer.md`` §3)."""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus

__all__ = ["ApiError", "Params"]


class ApiError(Exception):
    """A request the API refuses; ``status`` is the HTTP status."""

    def __init__(self, message: str, status: HTTPStatus = HTTPStatus.BAD_REQUEST) -> None:
        super().__init__(message)
        self.status = status


class Params:
    """Typed access to a request's parameters, naming the one at fault."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self.values = values

    def text(self, name: str, default: str | None = None) -> str:
        value = self.values.get(name, default)
        if value is None:
            raise ApiError(f"parameter {name!r} is required")
        return value

    def integer(self, name: str, default: int | None, low: int, high: int) -> int:
        raw = self.values.get(name)
        if raw is None or raw == "":
            if default is None:
                raise ApiError(f"parameter {name!r} is required (an integer {low}..{high})")
            return default
        if not raw.lstrip("-").isdigit() or len(raw) > 20:
            raise ApiError(f"parameter {name!r} must be an integer {low}..{high}, got {raw!r}")
        value = int(raw)
        if not low <= value <= high:
            raise ApiError(f"parameter {name!r} is {value}; accepted: {low}..{high}")
        return value

    def optional_int(self, name: str, low: int, high: int) -> int | None:
        if self.values.get(name) in (None, ""):
            return None
        return self.integer(name, None, low, high)

    def flag(self, name: str, default: bool = False) -> bool:
        raw = self.values.get(name)
        if raw is None or raw == "":
            return default
        if raw not in ("0", "1", "true", "false"):
            raise ApiError(f"parameter {name!r} must be 0/1 or true/false, got {raw!r}")
        return raw in ("1", "true")
