"""``readplan inspect`` for TBL v2 files (specs/tbl.md): the summary of one file.

Every sample is read in skip mode (so damage is listed, not fatal) and the metadata
section is walked; the first samples are also decoded as ``tf.train.Example`` when they
are (a converted TFDS dataset), by the same feature summary as TFRecord files use; in a
TBL-RAW shard (``specs/tbl.md`` §10) their metadata blocks are, the records less the image.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from readplan import storage
from readplan.errors import ReadplanError
from readplan.metadata.raw_images import RawMarker, raw_marker
from readplan.records import tbl
from readplan.records.tfrecord import CorruptionReport

__all__ = ["format_tbl_summary", "inspect_tbl", "is_tbl"]

_MAGIC = b"TBL\x02"
_TOP_DIMENSIONS = 5


def is_tbl(path: str) -> bool:
    """Whether ``path`` (a local path or a URL) starts with the TBL v2 magic (its content
    decides, not its name)."""
    return storage.read_prefix(path, len(_MAGIC)) == _MAGIC


def inspect_tbl(
    path: str, examples: int, report: CorruptionReport
) -> tuple[dict[str, Any], list[bytes]]:
    """The summary of ``path`` and its first ``examples`` undamaged samples; damage goes to
    ``report``.

    Raises :class:`~readplan.errors.CorruptTblError` when the header is damaged.
    """
    with tbl.TblFile(path, on_corruption="skip", report=report) as tf:
        head: list[bytes] = []
        for sample in tf:
            if len(head) < examples:
                head.append(sample)
        with_metadata = sum(tf.metadata(i) is not None for i in range(len(tf)))
        entries = tf.entries
        sound = np.ones(len(tf), dtype=bool)
        sound[tf.damaged] = False
        summary: dict[str, Any] = {
            "path": path,
            "container": "tbl",
            "compression": "lz4" if tf.compressed else None,
            "file_bytes": storage.stat(path).size,
            "records": len(tf),
            "compressed_samples": int((entries["flags"][sound] & 1).sum()),
            "samples_with_metadata": with_metadata,
        }
    summary.update(_sizes(entries[sound]))
    summary["formats"] = dict(
        sorted(
            Counter(
                tbl.FORMATS[c] for c in entries["format"][sound] if c < len(tbl.FORMATS)
            ).items()
        )
    )
    summary["dimensions"] = _dimensions(entries[sound])
    marker = _raw_marker_beside(path)
    if marker is not None:
        # A TBL-RAW shard: its samples are pixels, its records' other features metadata.
        summary["raw_image"] = {"feature": marker.image_feature, "size": marker.image_size}
        head = _metadata_head(path, sound, report, len(head))
    return summary, head


def _raw_marker_beside(path: str) -> RawMarker | None:
    """The TBL-RAW marker of the dataset ``path`` belongs to, if it is one's shard."""
    try:
        return raw_marker(storage.parent(path))
    except (ReadplanError, OSError, ValueError):
        return None  # not a dataset's file, or unusable metadata


def _metadata_head(
    path: str, sound: np.ndarray[Any, Any], report: CorruptionReport, n: int
) -> list[bytes]:
    """The metadata blocks of the first ``n`` undamaged samples (the records less the image)."""
    lost = {e.record_index for e in report.events if e.records_lost and e.path == path}
    wanted = [i for i in np.flatnonzero(sound).tolist() if i not in lost][:n]
    with tbl.TblFile(path, on_corruption="skip") as tf:
        return [block.data if (block := tf.metadata(i)) else b"" for i in wanted]


def _sizes(entries: np.ndarray[Any, Any]) -> dict[str, Any]:
    stored = entries["size"].astype(np.int64)
    raw = entries["uncompressed_size"].astype(np.int64)
    if len(entries) == 0:
        return {"record_bytes": None, "stored_bytes": 0, "compression_ratio": None}
    return {
        "record_bytes": {
            "total": int(raw.sum()),
            "min": int(raw.min()),
            "median": float(np.median(raw)),
            "max": int(raw.max()),
        },
        "stored_bytes": int(stored.sum()),
        "compression_ratio": float(raw.sum() / stored.sum()) if stored.sum() else None,
    }


def _dimensions(entries: np.ndarray[Any, Any]) -> list[dict[str, int]]:
    """The most common (width, height) pairs with their counts, most common first."""
    pairs = Counter(zip(entries["width"].tolist(), entries["height"].tolist()))
    return [
        {"width": w, "height": h, "samples": n} for (w, h), n in pairs.most_common(_TOP_DIMENSIONS)
    ]


def format_tbl_summary(summary: dict[str, Any]) -> list[str]:
    """The lines that ``inspect`` prints for a TBL file, before features and damage."""
    lines = [
        summary["path"],
        "  container:   TBL v2",
        f"  compression: {summary['compression'] or 'none'} "
        f"({summary['compressed_samples']:,} samples stored compressed)",
        f"  file size:   {summary['file_bytes']:,} bytes",
        f"  samples:     {summary['records']:,} ({summary['samples_with_metadata']:,} with "
        "metadata)",
    ]
    sizes = summary["record_bytes"]
    if sizes is not None:
        ratio = summary["compression_ratio"]
        lines.append(
            f"  sample size: total {sizes['total']:,} / min {sizes['min']:,} / median "
            f"{sizes['median']:,.0f} / max {sizes['max']:,} bytes; stored "
            f"{summary['stored_bytes']:,} bytes" + (f" (ratio {ratio:.2f})" if ratio else "")
        )
    formats = ", ".join(f"{name} {count:,}" for name, count in summary["formats"].items())
    lines.append(f"  formats:     {formats or 'none'}")
    dims = ", ".join(
        f"{d['width']}x{d['height']} ({d['samples']:,})" for d in summary["dimensions"]
    )
    lines.append(f"  dimensions:  {dims or 'none'}")
    raw = summary.get("raw_image")
    if raw is not None:
        size = raw["size"]
        lines.append(
            f"  raw images:  {raw['feature']!r}, {size} x {size} x 3 uint8 (TBL-RAW: the "
            "features are each sample's metadata)"
        )
    return lines
