"""TFDS's autocache decision: whether ``as_dataset`` caches the dataset it builds.

TFDS 4.9.10 (``DatasetBuilder._should_cache_ds``) caches a dataset with ``ds.cache()`` after
the interleave unless ``try_autocache`` is off, the dataset's size is unknown (0) or above
250 MiB, or the files are shuffled (reshuffling each epoch) while the split has more than
one shard. A cached dataset yields epoch 0's records again in every later epoch, so where
epoch 0's file shuffle could differ from a later one's, the later epochs take epoch 0's
file order. ``specs/order.md`` §8 is normative.
"""

from __future__ import annotations

from readplan.metadata.dataset_info import DatasetInfo
from readplan.planning.config import ReadConfig

__all__ = ["AUTOCACHE_MAX_BYTES", "tfds_autocaches"]

AUTOCACHE_MAX_BYTES = 250 * 2**20
"""TFDS caches datasets of at most this many bytes (the sum of the splits' ``numBytes``)."""


def tfds_autocaches(
    info: DatasetInfo, split_key: str | None, instructions: int, config: ReadConfig
) -> bool:
    """Whether TFDS caches ``as_dataset(split, shuffle_files, read_config)``'s dataset.

    ``split_key`` is the split as given when it is a plain string (TFDS looks it up by
    name), else None; ``instructions`` counts the split's file instructions before any
    sort function, which is TFDS's shard count of a split that is not a plain name.
    """
    if not config.try_autocache:
        return False
    size = sum(split.num_bytes for split in info.splits.values())
    if not size or size > AUTOCACHE_MAX_BYTES:
        return False
    named = info.splits.get(split_key) if split_key is not None else None
    shards = named.num_shards if named is not None else instructions
    return not (config.shuffle_files and config.reshuffle_each_iteration and shards > 1)
