"""Decoded examples as the viewer's JSON (``specs/viewer.md`` §3.3).

Examples come from :class:`readplan.Reader` with ``decode="tfds"``: the same records, ids and
decoded values a training job gets.  Each is walked along the dataset's features tree into
fields a page can show: images as PNG thumbnails (Pillow, the ``images`` extra), class
labels with their names, text, tensors (shape, dtype and the first values), and boxes
(``BBoxFeature``, also inside a ``Sequence``) in relative ``[ymin, xmin, ymax, xmax]``.
"""

from __future__ import annotations

import base64
import io
import itertools
import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from readplan.errors import MissingExtraError
from readplan.metadata.features import (
    BBoxFeature,
    ClassLabel,
    Feature,
    FeaturesDict,
    Image,
    Sequence,
    Text,
)
from readplan.plan import ReadPlan
from readplan.reading.items import Item
from readplan.reading.reader import Reader
from readplan.records.tfrecord import CorruptionReport

__all__ = [
    "THUMBNAIL_PIXELS",
    "add_boxes",
    "example_json",
    "read_examples",
    "thumbnail",
    "values_json",
]

THUMBNAIL_PIXELS = 192
"""The longest side of an image thumbnail."""
_VALUES_SHOWN = 16
_EXACT = 2**53


def read_examples(plan: ReadPlan, epoch: int, start: int, count: int) -> Iterator[Item]:
    """Up to ``count`` decoded items of ``plan``'s epoch ``epoch`` from position ``start``.

    Damaged records are skipped (and not shown), so that a damaged shard still shows the
    rest; the reader starts from a checkpoint, so no earlier record is read.
    """
    checkpoint = plan.checkpoint(epoch, start)
    report = CorruptionReport()
    reader = Reader(
        plan,
        decode="tfds",
        epochs=epoch + 1,
        start=checkpoint,
        on_corruption="skip",
        report=report,
    )
    with reader:
        items = itertools.islice(reader, count) if count else iter(())
        yield from items


def example_json(plan: ReadPlan, item: Item) -> dict[str, Any]:
    """One decoded item as the page shows it: where it is, and its fields."""
    features = plan.info.features
    out: dict[str, Any] = {
        "position": item.position,
        "epoch": item.epoch,
        "tfds_id": item.tfds_id,
        "file_index": item.file_index,
        "record_index": item.record_index,
        "fields": [],
        "images": [],
        "boxes": [],
    }
    if features is not None:
        _walk(features, item.record, "", out)
    return out


def _walk(feature: Feature, value: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(feature, FeaturesDict):
        for key, sub in feature.items():
            _walk(sub, value[key], f"{path}/{key}" if path else key, out)
    elif isinstance(feature, Sequence) and isinstance(feature.feature, FeaturesDict):
        _sequence_of_dicts(feature.feature, value, path, out)
    else:
        out["fields"].append(_leaf(feature, value, path, out))


def _sequence_of_dicts(inner: FeaturesDict, value: Mapping[str, Any], path: str, out: Any) -> None:
    """A ``Sequence(FeaturesDict)``: boxes get the class names of a sibling ClassLabel."""
    boxes = [key for key, sub in inner.items() if isinstance(sub, BBoxFeature)]
    labels = [key for key, sub in inner.items() if isinstance(sub, ClassLabel)]
    for key in boxes:
        names = None
        if labels:
            label = inner[labels[0]]
            assert isinstance(label, ClassLabel)
            names = [_class_name(label, int(v)) for v in np.asarray(value[labels[0]]).ravel()]
        add_boxes(_bbox_format(inner[key]), np.asarray(value[key]), names, f"{path}/{key}", out)
    for key, sub in inner.items():
        leaf_path = f"{path}/{key}"
        if isinstance(sub, (FeaturesDict, Sequence)):
            _walk(sub, value[key], leaf_path, out)
        else:
            out["fields"].append(_leaf(sub, value[key], leaf_path, out, boxed=key in boxes))


def _leaf(feature: Feature, value: Any, path: str, out: Any, boxed: bool = False) -> Any:
    field: dict[str, Any] = {"key": path, "type": feature.tfds_class or type(feature).__name__}
    array = np.asarray(value)
    field["shape"] = list(array.shape)
    field["dtype"] = str(array.dtype) if array.dtype.kind not in "SOU" else "string"
    if isinstance(feature, Image) and array.ndim == 3:
        image = thumbnail(array)
        image["key"] = path
        out["images"].append(image)
        field["image"] = len(out["images"]) - 1
    elif isinstance(feature, ClassLabel):
        field["values"] = [int(v) for v in array.ravel()[:_VALUES_SHOWN]]
        field["names"] = [_class_name(feature, v) for v in field["values"]]
    elif isinstance(feature, Text):
        field["text"] = [_text(v) for v in array.ravel()[:_VALUES_SHOWN]]
    elif isinstance(feature, BBoxFeature) and not boxed:
        add_boxes(_bbox_format(feature), array, None, path, out)
        field["values"] = values_json(array)
    else:
        field["values"] = values_json(array)
    return field


def _class_name(label: ClassLabel, index: int) -> str | None:
    return label.names[index] if 0 <= index < len(label.names) else None


def _bbox_format(feature: Feature) -> str:
    return getattr(feature, "bbox_format", None) or "REL_YXYX"


def add_boxes(
    fmt: str, boxes: Any, names: list[str | None] | list[str] | None, path: str, out: Any
) -> None:
    """Boxes of format ``fmt`` (TFDS's names, or ``YOLO``: relative centre x, centre y,
    width, height) in ``[ymin, xmin, ymax, xmax]``; absolute ones are kept for the page to
    scale by the image's size."""
    rows = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    for k, row in enumerate(rows.tolist()):
        box = _as_yxyx(fmt, row)
        if box is None:
            continue
        label = names[k] if names is not None and k < len(names) else None
        relative = "REL" in fmt or fmt == "YOLO"
        out["boxes"].append({"key": path, "yxyx": box, "relative": relative, "label": label})


def _as_yxyx(fmt: str, row: list[float]) -> list[float] | None:
    if not all(math.isfinite(v) for v in row):
        return None
    a, b, c, d = row
    if fmt == "YOLO":
        return [b - d / 2, a - c / 2, b + d / 2, a + c / 2]
    order = fmt.removeprefix("REL_")
    if order == "YXYX":
        return [a, b, c, d]
    if order == "XYXY":
        return [b, a, d, c]
    if order == "XYWH":
        return [b, a, b + d, a + c]
    return None


def values_json(array: np.ndarray[Any, Any]) -> list[Any]:
    flat = array.ravel()[:_VALUES_SHOWN]
    if array.dtype.kind in "SO":
        return [_text(v) for v in flat]
    if array.dtype.kind == "f":
        return [float(v) if math.isfinite(v) else str(v) for v in flat.tolist()]
    if array.dtype.kind == "c":
        return [str(v) for v in flat.tolist()]
    # JavaScript numbers are exact to 2**53 only: larger integers are sent as text.
    return [v if isinstance(v, bool) or abs(v) <= _EXACT else str(v) for v in flat.tolist()]


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def thumbnail(pixels: np.ndarray[Any, Any]) -> dict[str, Any]:
    """An image as a PNG data URI at most :data:`THUMBNAIL_PIXELS` on its longest side."""
    try:
        from PIL import Image as PILImage
    except ImportError as err:
        raise MissingExtraError(
            "showing images needs Pillow: pip install 'readplan[images]'", extra="images"
        ) from err
    height, width = int(pixels.shape[0]), int(pixels.shape[1])
    if pixels.dtype != np.uint8:
        pixels = np.clip(pixels.astype(np.float64) * (255 / max(1.0, float(pixels.max()))), 0, 255)
        pixels = pixels.astype(np.uint8)
    channels = pixels.shape[2]
    picture = PILImage.fromarray(pixels[..., 0] if channels == 1 else pixels[..., :3])
    picture.thumbnail((THUMBNAIL_PIXELS, THUMBNAIL_PIXELS))
    if max(picture.size) < 96:  # tiny images are scaled up so they can be seen
        scale = 96 // max(picture.size)
        picture = picture.resize((picture.width * scale, picture.height * scale), 0)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    uri = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    return {"src": uri, "width": width, "height": height}
