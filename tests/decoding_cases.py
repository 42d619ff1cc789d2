"""Datasets of given records and their one-record decodes, for the decoding readers' tests.

``write_dataset`` writes records as a TFDS layout, ``features_plan`` rows of given TFDS
features; ``leaf_calls`` counts a decoding reader's leaf decodes; ``one_at_a_time`` applies
a one-record decoder until it fails (the reference every batched decoding is compared
with); ``decodable_skips`` gives the decoders under which drawn TFDS features decode
without an image extra.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from readplan import DatasetInfo, Reader, ReadPlan, tfrecord
from readplan import write_dataset as write_rows
from readplan.errors import ExampleError, FeatureError
from readplan.metadata.features import FeaturesDict
from tests.strategies import image_skips

FAILURES = (ExampleError, FeatureError)


def write_dataset(directory: Path, records: list[bytes], shards: int, **info: Any) -> DatasetInfo:
    """A split ``train`` of ``records`` cut into ``shards`` files (the first may be empty)."""
    cut = [len(records) * k // shards for k in range(shards + 1)]
    lengths = [cut[k + 1] - cut[k] for k in range(shards)]
    made = DatasetInfo("made", {"train": lengths}, data_dir=str(directory), **info)
    for k in range(shards):
        tfrecord.write(made.shard_path("train", k), records[cut[k] : cut[k + 1]])
    return made


def features_plan(directory: Path, features: FeaturesDict, rows: Iterable[Any]) -> ReadPlan:
    """The plan of split ``train`` of ``rows`` written with ``features``, 8 per shard."""
    info = write_rows(
        directory,
        name="made",
        version="1.0.0",
        features=features,
        splits={"train": rows},
        examples_per_shard=8,
    )
    return ReadPlan(info, "train")


def leaf_calls(reader: Reader) -> list[int]:
    """The record count of each leaf decode ``reader`` (a ``decode="tfds"`` reader) makes
    from now on, in order."""
    assert reader._decode is not None
    leaves = reader._decode.leaves
    assert leaves is not None
    calls: list[int] = []

    def counted(records: Any) -> Any:
        calls.append(len(records))
        return leaves(records)

    object.__setattr__(reader._decode, "leaves", counted)
    return calls


def one_at_a_time(one: Callable[[Any], Any], raw: list[Any]) -> tuple[list[Any], Any]:
    """The records decoded by ``one`` up to the first that fails, and its error."""
    decoded: list[Any] = []
    try:
        decoded.extend(map(one, raw))
    except FAILURES as err:
        return decoded, err
    return decoded, None


def decodable_skips(features: FeaturesDict, records: list[bytes]) -> dict[str, Any] | None:
    """The decoders skipping every image, or None when there is nothing to decode: no records,
    or features readplan refuses to decode at all (tests/test_features_batch.py)."""
    skips = image_skips(features)
    try:
        features.decoder(decoders=skips)
    except FeatureError:
        return None
    return skips if records else None
