"""fsspec filesystems for URLs, loaded only when a URL is used (``specs/storage.md``).

fsspec's own configuration applies unchanged: ``FSSPEC_<PROTOCOL>_<OPTION>`` environment
variables and config files give defaults, ``storage_options`` adds to them per call.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from readplan.errors import ConfigError, MissingExtraError

__all__ = ["EXTRA", "filesystem"]

EXTRA = "remote"
_INSTALL = f"pip install 'readplan[{EXTRA}]'"


def _fsspec(url: str) -> Any:
    try:
        return importlib.import_module("fsspec.core")
    except ImportError as err:
        raise MissingExtraError(
            f"{url}: reading URLs needs fsspec, which is not installed; install the "
            f"optional extra with `{_INSTALL}` (fsspec, gcsfs, s3fs), or give a local path",
            extra=EXTRA,
            package="fsspec",
        ) from err


def filesystem(url: str, storage_options: Mapping[str, Any] | None) -> tuple[Any, str]:
    """``(fsspec filesystem, path within it)`` for ``url``."""
    options = _options(storage_options)
    core = _fsspec(url)
    try:
        return core.url_to_fs(url, **options)  # type: ignore[no-any-return]
    except ImportError as err:
        raise MissingExtraError(
            f"{url}: fsspec has no installed implementation for this protocol ({err}); "
            f"`{_INSTALL}` brings gcsfs (gs://) and s3fs (s3://), other protocols need "
            "their own fsspec package",
            extra=EXTRA,
        ) from err
    except ValueError as err:
        raise ConfigError(
            f"{url}: fsspec does not accept this URL ({err}); known protocols are those "
            "of fsspec.available_protocols()",
            field="url",
            value=url,
        ) from err


def _options(storage_options: Mapping[str, Any] | None) -> dict[str, Any]:
    if storage_options is None:
        return {}
    if not isinstance(storage_options, Mapping) or not all(
        isinstance(key, str) for key in storage_options
    ):
        raise ConfigError(
            "storage_options must be a mapping of fsspec option names to values (passed "
            f"to the filesystem as keyword arguments), got {storage_options!r:.80}",
            field="storage_options",
            value=storage_options,
        )
    return dict(storage_options)
