"""What a reader delivers per record: bytes, ``tf.train.Example`` features, or TFDS examples.

``specs/reader.md`` (the ``record`` field and "Batches") and ``specs/features.md`` are
normative. A :class:`RecordDecoder` decodes one record, or a batch at once through
:func:`readplan.example.decode_batch`'s columns with exactly the one-record results, or
collates a batch straight from those columns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import pairwise
from typing import Any, Literal

from readplan.errors import ConfigError, ExampleError, FeatureError
from readplan.metadata._feature_batch import compile_leaf_decoder
from readplan.metadata.features import (
    Audio,
    Feature,
    FeaturesDict,
    Image,
    SkipDecoding,
    load_features,
)
from readplan.metadata.features import Sequence as SequenceFeature
from readplan.plan import ReadPlan
from readplan.reading.collate import Ragged, collate, collate_leaves
from readplan.reading.items import LazyRecords
from readplan.records import example
from readplan.records.example import _many
from readplan.records.example._leaves import LeafBatch
from readplan.records.example._rows import NotRegularError
from readplan.storage import StorageOptions

__all__ = [
    "RecordDecoder",
    "check_no_decoders",
    "dataset_features",
    "decodes_media",
    "example_decoder",
    "record_decoder",
    "tfds_decoder",
]


@dataclass(frozen=True)
class RecordDecoder:
    """``one`` decodes a record; ``many`` a batch, giving per record exactly ``one``'s result
    (or raising, when some record does not decode); ``leaves`` (when given) a non-empty
    batch as leaves, raising when ``many`` would not decode it through its columns.  A
    record is its bytes, or a TBL-RAW dataset's ``raw_records.RawRecord``."""

    one: Callable[[Any], Any]
    many: Callable[[Sequence[Any]], list[Any]]
    leaves: Callable[[Sequence[bytes]], LeafBatch] | None = None
    media: bool = False
    """Whether it decodes images or audio: a record's decode is then long enough that
    decode workers take batches one at a time (``specs/reader.md`` §7)."""

    def __call__(self, raw: bytes) -> Any:
        return self.one(raw)

    def decode_all(self, records: Sequence[bytes]) -> tuple[list[Any], Exception | None]:
        """The records decoded, up to the first one that does not decode, and its error."""
        try:
            return self.many(records), None
        except (ExampleError, FeatureError):
            pass  # one record at a time finds the first failing record and its error
        return self._one_at_a_time(records)

    def _one_at_a_time(self, records: Sequence[bytes]) -> tuple[list[Any], Exception | None]:
        decoded: list[Any] = []
        try:
            decoded.extend(map(self.one, records))
        except (ExampleError, FeatureError) as err:
            return decoded, err
        return decoded, None

    def collate_all(
        self, records: Sequence[bytes], ragged: Ragged, padding_values: Mapping[str, Any] | None
    ) -> tuple[Sequence[Any], dict[str, Any] | None, Exception | None]:
        """The records decoded and ``collate``'s batch of them (``specs/reader.md``,
        "Batches"); or the records before the first one that does not decode, None and its
        error.  A batch the leaves decode is collated from them, its records made only when
        read (:class:`LazyRecords`); any other is decoded and collated record by record."""
        if self.leaves is None:
            # No leaves (a TBL-RAW dataset's records): decoded at once, then collated.
            decoded, error = self.decode_all(records)
        else:
            try:
                leaves = self.leaves(records)
            except (ExampleError, FeatureError, NotRegularError):
                decoded, error = self._one_at_a_time(records)
            else:
                return self._from_leaves(len(records), leaves, ragged, padding_values)
        if error is not None:
            return decoded, None, error
        return decoded, collate(decoded, ragged=ragged, padding_values=padding_values), None

    @staticmethod
    def _from_leaves(
        n: int, leaves: LeafBatch, ragged: Ragged, padding_values: Mapping[str, Any] | None
    ) -> tuple[Sequence[Any], dict[str, Any] | None, Exception | None]:
        lazy = LazyRecords(n, leaves.records)
        try:
            features = collate_leaves(leaves, ragged=ragged, padding_values=padding_values)
        except NotRegularError:
            # Records of different structures: collate names the first that differs.
            features = collate(list(lazy), ragged=ragged, padding_values=padding_values)
        return lazy, features, None

    def collate_parts(
        self,
        records: Sequence[bytes],
        bounds: Sequence[int],
        ragged: Ragged,
        padding_values: Mapping[str, Any] | None,
    ) -> list[tuple[Sequence[Any], dict[str, Any]]] | None:
        """:meth:`collate_all` of each part ``records[bounds[k]:bounds[k + 1]]`` (every part
        non-empty), from one leaf decode of all the records: fewer, longer steps, most of
        them in the compiled kernel (``specs/reader.md`` §7). None when some record does not
        decode leaf by leaf; each part then goes through :meth:`collate_all`, which says which
        record and how."""
        try:
            if self.leaves is None:
                raise NotRegularError
            leaves = self.leaves(records)
        except (ExampleError, FeatureError, NotRegularError):
            return None
        parts: list[tuple[Sequence[Any], dict[str, Any]]] = []
        for start, stop in pairwise(bounds):
            part = leaves.sliced(start, stop)
            lazy, features, _ = self._from_leaves(stop - start, part, ragged, padding_values)
            assert features is not None  # collated from leaves, never an error
            parts.append((lazy, features))
        return parts


def record_decoder(
    decode: bool | Literal["tfds"] | Mapping[str, Any] | None,
    decoders: Mapping[str, Any] | None,
    plan: ReadPlan,
    data_dir: str | None,
    storage_options: StorageOptions = None,
) -> RecordDecoder | None:
    """The decoder a reader applies to its records, or None to deliver bytes; the features
    of a dataset in a store are read with ``storage_options``."""
    if decode == "tfds":
        return tfds_decoder(dataset_features(plan, data_dir, storage_options), decoders)
    check_no_decoders(decode, decoders)
    return example_decoder(decode)


def check_no_decoders(decode: object, decoders: Mapping[str, Any] | None) -> None:
    """``decoders`` apply to TFDS feature decoding only."""
    if decoders is not None:
        raise ConfigError(
            "decoders apply to decode='tfds' (decoding with the dataset's features.json); "
            f"got decode={decode!r:.40}",
            field="decoders",
            value=decoders,
        )


def example_decoder(
    decode: bool | Literal["tfds"] | Mapping[str, Any] | None,
) -> RecordDecoder | None:
    """Bytes (None), ``tf.train.Example`` features (True) or a schema's parse (a mapping)."""
    if decode is None or decode is False:
        return None
    if decode is True:
        return RecordDecoder(example.decode, _many.decode_many, _many.decode_leaves)
    if isinstance(decode, Mapping):
        schema = dict(decode)
        return RecordDecoder(
            partial(example.parse, schema=schema),
            partial(_many.parse_many, schema=schema),
            partial(_many.parse_leaves, schema=schema),
        )
    raise ConfigError(
        f"decode must be 'tfds' (as tfds.as_numpy yields), None/False (bytes), True (decoded "
        "tf.train.Example features) or a schema mapping of readplan.example.FixedLen/VarLen, "
        f"got {decode!r:.80}",
        field="decode",
        value=decode,
    )


def dataset_features(
    plan: ReadPlan, data_dir: str | None, storage_options: StorageOptions
) -> FeaturesDict:
    """The features ``decode="tfds"`` decodes with: the plan's, or ``data_dir``'s
    ``features.json``; a ConfigError when there are none."""
    features = plan.info.resolve_features(storage_options)
    if features is None and data_dir is not None:
        features = load_features(data_dir, storage_options=storage_options)
    if features is None:
        where = data_dir or plan.info.data_dir
        raise ConfigError(
            f"decode='tfds' needs the dataset's features.json, and {where or 'the plan'} has "
            "none (a DatasetInfo from the catalog or built by hand has no features unless "
            "given features=...); use decode=True for the raw tf.train.Example features",
            field="decode",
            value="tfds",
        )
    return features


def tfds_decoder(features: FeaturesDict, decoders: Mapping[str, Any] | None) -> RecordDecoder:
    """Records decoded with ``features`` (and TFDS's per-feature ``decoders``)."""
    return RecordDecoder(
        features.decoder(decoders=decoders),
        features.batch_decoder(decoders=decoders),
        compile_leaf_decoder(features, decoders, "error", tables=True),
        media=decodes_media(features, decoders),
    )


def decodes_media(feature: Feature, decoders: object) -> bool:
    """Whether decoding ``feature`` with ``decoders`` decodes an image or an audio file
    (a feature under :class:`SkipDecoding` is delivered as stored)."""
    if isinstance(decoders, SkipDecoding):
        return False
    if isinstance(feature, FeaturesDict):
        inner = decoders if isinstance(decoders, Mapping) else {}
        return any(decodes_media(sub, inner.get(name)) for name, sub in feature.items())
    if isinstance(feature, SequenceFeature):
        return decodes_media(feature.feature, decoders)
    if isinstance(feature, Image):
        return True
    return isinstance(feature, Audio) and feature.file_format is not None
