"""An item's fields as the tuple the item kernels' tests compare: (record, epoch, position,
file_index, record_index, prefix), the prefix being the tfds_id before ``__<record_index>``."""

from __future__ import annotations

from typing import Any


def row(item: Any) -> tuple[Any, ...]:
    suffix = f"__{item.record_index}"
    assert item.tfds_id.endswith(suffix), item.tfds_id
    prefix = item.tfds_id[: -len(suffix)]
    return (item.record, item.epoch, item.position, item.file_index, item.record_index, prefix)
