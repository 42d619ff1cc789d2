"""The records of one file as a gallery (``specs/viewer.md`` §3.3), for shards without a
dataset around them.

Records are read with :class:`readplan.RecordFile` (TFRecord, any compression; offsets from a
sidecar when there is one, else a header walk kept in memory: nothing is written) or
:class:`readplan.TblFile`, and decoded with :func:`readplan.example.decode`, or, when the
page names an image feature, through a schema with :func:`readplan.example.parse`:
``{image: FixedLen((), "bytes"), boxes: VarLen("float32", shape=(-1, 4)), labels:
VarLen("int64")}``, so that flattened box lists (ModelPack's YOLO boxes, TFRecord datasets
of detection models) are drawn as boxes.
"""

from __future__ import annotations

import io
import itertools
from typing import Any

import numpy as np

from readplan import storage
from readplan.errors import CorruptRecordError, MissingExtraError
from readplan.metadata._limits import value_cap
from readplan.records import tfrecord
from readplan.records.example import FixedLen, VarLen, decode, parse
from readplan.records.tbl import TblFile
from readplan.records.tfrecord import RecordFile
from readplan.viewer.examples import add_boxes, thumbnail, values_json

__all__ = ["BOX_FORMATS", "records_json"]

BOX_FORMATS = ("YOLO", "REL_YXYX", "REL_XYXY", "REL_XYWH")
_TBL_MAGIC = b"TBL\x02"
_IMAGE_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"BM")


def records_json(
    path: str,
    start: int,
    count: int,
    image: str | None = None,
    boxes: str | None = None,
    box_format: str = "YOLO",
    labels: str | None = None,
) -> dict[str, Any]:
    """Records ``start .. start + count - 1`` of the file, each as the page shows it."""
    raw, total = _records(path, start, count)
    shown = []
    for k, record in enumerate(raw):
        entry: dict[str, Any] = {
            "position": start + k,
            "tfds_id": f"{storage.basename(path)}#{start + k}",
            "fields": [],
            "images": [],
            "boxes": [],
        }
        if image:
            _schema_fields(record, image, boxes, box_format, labels, entry)
        else:
            _plain_fields(record, entry)
        shown.append(entry)
    return {"records": total, "damaged": total is None, "start": start, "examples": shown}


def _records(path: str, start: int, count: int) -> tuple[list[bytes], int | None]:
    """The records, and how many the file holds (None for a damaged file, whose undamaged
    records are numbered as skip mode delivers them)."""
    try:
        if storage.read_prefix(path, 4) == _TBL_MAGIC:
            with TblFile(path) as tf:
                skip = min(start, len(tf))
                return list(tf.read(skip=skip, take=min(count, len(tf) - skip))), len(tf)
        with RecordFile(path, compression="auto") as rf:
            total = len(rf)
            skip = min(start, total)
            return list(rf.read(skip=skip, take=min(count, total - skip))), total
    except CorruptRecordError:
        if storage.read_prefix(path, 4) == _TBL_MAGIC:
            with TblFile(path, on_corruption="skip") as tf:
                return list(itertools.islice(tf, start, start + count)), None
        records = tfrecord.read(path, compression="auto", on_corruption="skip")
        return list(itertools.islice(records, start, start + count)), None


def _plain_fields(record: bytes, entry: dict[str, Any]) -> None:
    """Every feature of a ``tf.train.Example``; bytes holding an image are shown as one."""
    for key, value in decode(record).items():
        field: dict[str, Any] = {"key": key}
        if isinstance(value, np.ndarray):
            field.update(type=str(value.dtype), shape=list(value.shape), values=values_json(value))
        else:
            field.update(type="bytes", shape=[len(value)])
            pictures = [v for v in value[:4] if v.startswith(_IMAGE_MAGIC)]
            if pictures:
                entry["images"].extend(_picture(key, v) for v in pictures)
                field["image"] = len(entry["images"]) - 1
            else:
                field["values"] = values_json(np.array(value[:16], dtype=object))
        entry["fields"].append(field)


def _schema_fields(
    record: bytes,
    image: str,
    boxes: str | None,
    box_format: str,
    labels: str | None,
    entry: dict[str, Any],
) -> None:
    schema: dict[str, FixedLen | VarLen] = {image: FixedLen((), "bytes")}
    if boxes:
        schema[boxes] = VarLen("float32", shape=(-1, 4))
    if labels:
        schema[labels] = VarLen("int64")
    parsed = parse(record, schema)
    encoded = parsed[image]
    assert isinstance(encoded, bytes)
    entry["images"].append(_picture(image, encoded))
    entry["fields"].append({"key": image, "type": "bytes", "shape": [], "image": 0})
    names = None
    if labels:
        label_values = np.asarray(parsed[labels])
        names = [str(v) for v in label_values.tolist()]
        entry["fields"].append(
            {"key": labels, "type": "int64", "shape": list(label_values.shape), "values": names}
        )
    if boxes:
        rows = np.asarray(parsed[boxes])
        add_boxes(box_format, rows, names, boxes, entry)
        entry["fields"].append(
            {
                "key": boxes,
                "type": box_format,
                "shape": list(rows.shape),
                "values": values_json(rows),
            }
        )


def _picture(key: str, data: bytes) -> dict[str, Any]:
    """An encoded image as a thumbnail (decoded with Pillow, for display only); bytes that
    Pillow cannot read give a placeholder naming why."""
    try:
        from PIL import Image as PILImage
    except ImportError as err:
        raise MissingExtraError(
            "showing images needs Pillow: pip install 'readplan[images]'", extra="images"
        ) from err
    try:
        with PILImage.open(io.BytesIO(data)) as opened:
            # Opening reads the header only: an image larger than a decoded value may be
            # (specs/features.md §6) is not decoded for a thumbnail.
            width, height = opened.size
            if width * height * 3 > value_cap(None):
                why = f"{width} x {height} pixels: larger than max_value_bytes allows"
                return {"key": key, "src": None, "width": width, "height": height, "error": why}
            pixels = np.asarray(opened.convert("RGB"))
    except (OSError, ValueError, PILImage.DecompressionBombError) as err:
        return {"key": key, "src": None, "width": 0, "height": 0, "error": str(err)}
    picture = thumbnail(pixels)
    picture["key"] = key
    return picture
