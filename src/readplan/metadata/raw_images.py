"""TBL-RAW datasets (``specs/tbl.md`` §10): their marker and their one resize.

``readplan convert --raw`` stores every image resized by :func:`resize_image`, and decoding a
source dataset on the fly with the same function gives the stored pixels bit for bit.  The
converted ``dataset_info.json`` says so under :data:`RAW_KEY` (:class:`RawMarker`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from readplan import storage
from readplan._internal.arrays import U8Array
from readplan.errors import ConfigError, DatasetInfoError
from readplan.metadata._images import _import
from readplan.metadata.loader import INFO_FILE
from readplan.storage import StorageOptions

__all__ = ["RAW_KEY", "RESIZE", "RawMarker", "raw_marker", "resize_image", "resizer_version"]

RAW_KEY: Final = "readplanRaw"
"""The ``dataset_info.json`` key of a TBL-RAW dataset: ``{"imageFeature", "imageSize",
"resize", "pillow"}``."""

RESIZE = "pillow-bilinear-stretch"
"""The name of :func:`resize_image`'s method, as recorded in a converted ``dataset_info.json``."""


def resize_image(image: U8Array, size: int) -> U8Array:
    """``image`` (``(h, w, 3)`` uint8, as ``decode="tfds"`` yields it) stretched to
    ``(size, size, 3)``: Pillow's ``Image.fromarray(image, "RGB").resize((size, size),
    Image.Resampling.BILINEAR)``, the whole image, no crop, the aspect ratio not kept
    (Pillow's bilinear filter widens its support when it shrinks, so it averages every
    source pixel).  An image already ``size x size`` is returned as a copy of itself."""
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[-1] != 3:
        raise ConfigError(
            f"resize_image takes an (h, w, 3) uint8 image, got {image.dtype} of shape "
            f"{image.shape}",
            field="image",
            value=image.shape,
        )
    pil = _import("PIL.Image", "pillow", "resizing")
    resized = pil.fromarray(np.ascontiguousarray(image), "RGB").resize(
        (size, size), pil.Resampling.BILINEAR
    )
    out: U8Array = np.asarray(resized, dtype=np.uint8)
    return out


def resizer_version() -> str:
    """The version of the Pillow :func:`resize_image` runs on: its bilinear filter gave
    other pixels in other versions (12.3 and 13.0 differ), so a conversion records it."""
    pil = _import("PIL", "pillow", "resizing")
    return str(pil.__version__)


@dataclass(frozen=True)
class RawMarker:
    """What a TBL-RAW dataset's ``dataset_info.json`` holds under :data:`RAW_KEY`: the image
    feature stored as the samples' pixels, their side, the resize that made them and the
    Pillow version it ran on (None in a dataset that does not record it)."""

    image_feature: str
    image_size: int
    resize: str = RESIZE
    pillow: str | None = None

    def __post_init__(self) -> None:
        size = self.image_size
        if (
            not isinstance(self.image_feature, str)
            or isinstance(size, bool)
            or not isinstance(size, int)
            or not 1 <= size <= 65535
            or self.resize != RESIZE
            or not isinstance(self.pillow, (str, type(None)))
        ):
            raise DatasetInfoError(
                f"{RAW_KEY} must be {{imageFeature: a name, imageSize: 1..65535, resize: "
                f"{RESIZE!r}, pillow: a version (optional)}}, got {self.to_json()!r:.160}",
                field=RAW_KEY,
            )

    def to_json(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "imageFeature": self.image_feature,
            "imageSize": self.image_size,
            "resize": self.resize,
        }
        if self.pillow is not None:
            fields["pillow"] = self.pillow
        return fields


def raw_marker(dataset_dir: str, storage_options: StorageOptions = None) -> RawMarker | None:
    """The marker of the dataset in ``dataset_dir``, or None when it is not a TBL-RAW one."""
    path = storage.join(dataset_dir, INFO_FILE)
    fields = json.loads(storage.read_bytes(path, storage_options=storage_options))
    marker = fields.get(RAW_KEY) if isinstance(fields, dict) else None
    if marker is None:
        return None
    if not isinstance(marker, dict):
        raise DatasetInfoError(f"{path}: {RAW_KEY} must be an object", path=path, field=RAW_KEY)
    feature: Any = marker.get("imageFeature")
    size: Any = marker.get("imageSize")
    pillow: Any = marker.get("pillow")
    return RawMarker(feature, size, marker.get("resize", RESIZE), pillow)
