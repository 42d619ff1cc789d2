"""Ranged reads pinned to the object version that was opened (``specs/storage.md`` §4).

Each store offers its own way to ask for "these bytes of that version, or fail":

* GCS: the object's ``generation`` (gcsfs reads exactly that generation; a replaced object's
  old generation is gone, so the read fails with 404);
* S3: the ``VersionId`` where the bucket keeps versions (the old version stays readable), else
  an ``If-Match`` on the ETag (a replaced object fails the condition with 412);
* HTTP(S): an ``If-Match`` on a strong ETag the server reported;
* any other store: no condition; the size and identity checks of a short or damaged read are
  all there is.

A read whose condition fails is reported by :class:`~readplan.storage.RemoteBlob` as an
:class:`~readplan.errors.ObjectChangedError` after it looks the object up again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Pin", "pin_for"]

# S3's version id of an object written while versioning was off or suspended: not one
# content (a later write replaces that "null" version in place).
_NULL_VERSION = "null"


@dataclass(frozen=True, slots=True)
class Pin:
    """How a ranged read names the version opened: ``condition`` is the request field
    (``generation``, ``VersionId``, ``If-Match``) and ``value`` its value; both ``None``
    for a store that offers no condition."""

    protocol: str
    condition: str | None = None
    value: str | None = None

    def describe(self) -> str:
        if self.condition is None:
            return f"{self.protocol}:// offers no pinned read; size and identity are checked"
        header = "If-Match" if self.condition == "IfMatch" else self.condition
        return f"its reads asked for {header} {self.value}"

    def read(self, fs: Any, path: str, start: int, stop: int) -> bytes:
        """Bytes ``[start, stop)`` of the pinned version in one ranged request."""
        if self.condition == "generation":
            return bytes(fs.cat_file(path, start=start, end=stop, generation=self.value))
        if self.condition in ("VersionId", "IfMatch"):
            return _s3_range(fs, path, start, stop, {self.condition: self.value})
        if self.condition == "If-Match":
            headers = {"If-Match": self.value}
            return bytes(fs.cat_file(path, start=start, end=stop, headers=headers))
        return bytes(fs.cat_file(path, start=start, end=stop))


def pin_for(fs: Any, info: Mapping[str, Any]) -> Pin:
    """The strongest pin the store of ``fs`` offers for the object described by ``info``
    (fsspec's ``info`` of it, taken when it was opened)."""
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    name = str(protocols[0])
    generation = info.get("generation")
    if "gs" in protocols and generation is not None:
        return Pin(name, "generation", str(generation))
    etag = info.get("ETag") or info.get("etag")
    if "s3" in protocols:
        version = info.get("VersionId")
        if version and version != _NULL_VERSION:
            return Pin(name, "VersionId", str(version))
        if etag:
            return Pin(name, "IfMatch", str(etag))
    if ("http" in protocols or "https" in protocols) and etag and not str(etag).startswith("W/"):
        # A weak ETag never matches in If-Match (RFC 9110 §13.1.1): it cannot pin.
        return Pin(name, "If-Match", str(etag))
    return Pin(name)


def _s3_range(fs: Any, path: str, start: int, stop: int, condition: dict[str, Any]) -> bytes:
    """s3fs's ranged GET with a condition it has no argument for (``IfMatch``), through its
    own client call (its error translation and retries included)."""
    from fsspec.asyn import sync  # type: ignore[import-untyped]

    bucket, key, _ = fs.split_path(path)

    async def get() -> bytes:
        response = await fs._call_s3(
            "get_object", Bucket=bucket, Key=key, Range=f"bytes={start}-{stop - 1}", **condition
        )
        body = response["Body"]
        try:
            return bytes(await body.read())
        finally:
            body.close()

    data: bytes = sync(fs.loop, get)
    return data
