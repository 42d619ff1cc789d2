"""TFDS features: the model of a dataset's ``features.json`` and decoding records with it.

``DatasetInfo.features`` is a :class:`FeaturesDict` loaded from the dataset directory's
``features.json`` (and its ``*.labels.txt`` class names); ``features.decode(record)`` gives,
per record, exactly what ``tfds.as_numpy(builder.as_dataset(...))`` yields. The normative
text is ``specs/features.md``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from collections.abc import Sequence as Records
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from readplan import storage
from readplan._internal.frozen import init_fields
from readplan.errors import ConfigError, FeatureError
from readplan.metadata._feature_batch import compile_batch_decoder
from readplan.metadata._feature_decode import Decoded, SkipDecoding, Unknown, compile_decoder
from readplan.metadata._feature_encode import encode_example, example_entries
from readplan.metadata._feature_json import FEATURES_FILE, read_features
from readplan.metadata._feature_types import (
    AS_FEATURE,
    DTYPES,
    Audio,
    BBoxFeature,
    ClassLabel,
    Dataset,
    DefaultNames,
    Feature,
    Image,
    LabeledImage,
    Scalar,
    Sequence,
    Shape,
    Tensor,
    Text,
    UnknownFeature,
)
from readplan.metadata._limits import value_cap

__all__ = [
    "DTYPES",
    "FEATURES_FILE",
    "Audio",
    "BBoxFeature",
    "ClassLabel",
    "Dataset",
    "Decoded",
    "DefaultNames",
    "Feature",
    "FeaturesDict",
    "Image",
    "LabeledImage",
    "Scalar",
    "Sequence",
    "Shape",
    "SkipDecoding",
    "Tensor",
    "Text",
    "Unknown",
    "UnknownFeature",
    "load_features",
]


@dataclass(frozen=True, eq=False, init=False)
class FeaturesDict(Feature, Mapping[str, Feature]):
    """``tfds.features.FeaturesDict``: named features, yielded as a dict with sorted keys.

    Build it from a mapping (plain nested dicts become FeaturesDicts, as in TFDS), or get it
    as ``DatasetInfo.features``. See ``specs/features.md`` §1.
    """

    tfds_class: ClassVar[str] = "FeaturesDict"

    features: Mapping[str, Any]

    def __init__(self, features: Mapping[str, Any]) -> None:
        init_fields(self, features=_sorted_features(features))
        self.__post_init__()

    def __post_init__(self) -> None:
        if not isinstance(self.features, Mapping):
            raise FeatureError(
                f"FeaturesDict needs a mapping of names to features, got {self.features!r:.80}",
                feature_type="FeaturesDict",
            )
        for name, feature in self.features.items():
            _check_entry(name, feature)

    @functools.cached_property
    def _entries(self) -> tuple[tuple[str, Feature], ...]:
        return tuple(self.features.items())

    def __hash__(self) -> int:
        return hash(self._entries)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FeaturesDict) and self._entries == other._entries

    def __getitem__(self, key: str) -> Feature:
        return self.features[key]  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[str]:
        return iter(self.features)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        inner = ", ".join(f"{name!r}: {feature!r}" for name, feature in self._entries)
        return f"FeaturesDict({{{inner}}})"

    def serialize_example(self, example: Mapping[str, Any]) -> bytes:
        """``example`` (a dict shaped like the features) as one serialized
        ``tf.train.Example``, encoded as TFDS's ``serialize_example`` does
        (``specs/features.md`` §5); a value that breaks its feature is a FeatureError naming it."""
        return encode_example(self, example)

    def encode_example(self, example: Mapping[str, Any]) -> dict[str, Any]:
        """The ``{entry name: values}`` :meth:`serialize_example` serializes (with
        :func:`readplan.example.encode`): one entry per leaf, named by its path."""
        return example_entries(self, example)

    def decode(
        self,
        record: bytes,
        *,
        decoders: Mapping[str, Any] | None = None,
        unknown: Unknown = "error",
        max_value_bytes: int | None = None,
    ) -> Decoded:
        """One serialized record as ``tfds.as_numpy`` yields it (``specs/features.md`` §3).

        ``decoders`` is shaped like the features, with :class:`SkipDecoding` for features
        to yield as stored (an image's encoded bytes). ``unknown="raw"`` yields features of
        types readplan does not model as their undecoded ``tf.train.Example`` entries
        instead of raising :class:`~readplan.errors.FeatureError`. No decoded value (an
        image, an inflated Tensor, an absent optional's default) may be larger than
        ``max_value_bytes`` (None: ``$READPLAN_MAX_VALUE_BYTES``, else 256 MiB;
        ``specs/features.md`` §6); a larger one is a FeatureError before it is allocated.
        """
        return self.decoder(decoders=decoders, unknown=unknown, max_value_bytes=max_value_bytes)(
            record
        )

    def decoder(
        self,
        *,
        decoders: Mapping[str, Any] | None = None,
        unknown: Unknown = "error",
        max_value_bytes: int | None = None,
    ) -> Callable[[bytes], Decoded]:
        """The function ``decode`` applies, built once (reuse it for many records)."""
        return _decoder(self, _freeze(decoders), unknown, value_cap(max_value_bytes))

    def batch_decoder(
        self,
        *,
        decoders: Mapping[str, Any] | None = None,
        unknown: Unknown = "error",
        max_value_bytes: int | None = None,
    ) -> Callable[[Records[bytes]], list[Decoded]]:
        """A function decoding a batch of records: per record exactly what :meth:`decoder`'s
        function gives (or the first failing record's error), read through
        :func:`readplan.example.decode_batch`'s columns (``specs/features.md`` §3.10)."""
        return _batch_decoder(self, _freeze(decoders), unknown, value_cap(max_value_bytes))


def _check_entry(name: object, feature: object) -> None:
    if not _valid_name(name):
        raise FeatureError(
            f"feature name {name!r} must be a non-empty str without '/' ('/' joins "
            "nested names in the stored records)",
            feature=str(name),
            feature_type="FeaturesDict",
        )
    if not isinstance(feature, Feature):
        raise FeatureError(
            f"feature {name!r} is {feature!r:.80}, not a Feature",
            feature=str(name),
            feature_type="FeaturesDict",
        )


def _valid_name(name: object) -> bool:
    return isinstance(name, str) and bool(name) and "/" not in name


def _sorted_features(features: object) -> object:
    """``features`` as a dict sorted by name, nested plain mappings as FeaturesDicts.

    Entries are converted in name order up to the first one ``__post_init__`` refuses, so
    the first bad entry is reported whether it or a later nested mapping is wrong.
    """
    if not isinstance(features, Mapping):
        return features
    converted: dict[Any, Any] = {}
    valid = True
    for name, feature in sorted(features.items(), key=lambda item: str(item[0])):
        valid = valid and _valid_name(name)
        if valid:
            feature = as_feature(feature)
        valid = valid and isinstance(feature, Feature)
        converted[name] = feature
    return converted


def as_feature(value: Any) -> Any:
    """``value`` as TFDS reads a feature: a plain dict is a FeaturesDict, a numpy type
    (``np.int64``, ``np.dtype("float32")``) a scalar Tensor; anything else as given."""
    if isinstance(value, Mapping) and not isinstance(value, Feature):
        return FeaturesDict(value)
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        dtype = np.dtype(value)
        return Tensor((), "string" if dtype.kind in "SUO" else dtype.name)
    return value


AS_FEATURE.append(as_feature)


def _freeze(decoders: Mapping[str, Any] | None) -> Any:
    if decoders is None:
        return None
    if not isinstance(decoders, Mapping):
        raise ConfigError(
            f"decoders must be a dict shaped like the features, got {decoders!r:.80}",
            field="decoders",
            value=decoders,
        )
    return tuple(
        sorted(
            ((str(k), _freeze(v) if isinstance(v, Mapping) else v) for k, v in decoders.items()),
            key=lambda item: item[0],
        )
    )


def _thaw(frozen: Any) -> Any:
    if isinstance(frozen, tuple):
        return {k: _thaw(v) for k, v in frozen}
    return frozen


@functools.lru_cache(maxsize=64)
def _decoder(
    features: FeaturesDict, decoders: Any, unknown: Unknown, cap: int
) -> Callable[[bytes], Decoded]:
    return compile_decoder(features, _thaw(decoders), unknown, cap)


@functools.lru_cache(maxsize=64)
def _batch_decoder(
    features: FeaturesDict, decoders: Any, unknown: Unknown, cap: int
) -> Callable[[Records[bytes]], list[Decoded]]:
    return compile_batch_decoder(features, _thaw(decoders), unknown, cap)


def load_features(
    dataset_dir: storage.PathLike, *, storage_options: storage.StorageOptions = None
) -> FeaturesDict | None:
    """The features declared in ``<dataset_dir>/features.json``; None when there is none.

    ``dataset_dir`` is a local path or a storage URL (``specs/storage.md``), reached with
    ``storage_options``.
    ClassLabel names come from the ``*.labels.txt`` files next to it. A malformed file is a
    :class:`~readplan.errors.FeatureError` naming it; feature types readplan does not model
    load as :class:`UnknownFeature`.
    """
    directory = storage.to_str(dataset_dir)
    loaded = read_features(directory, FeaturesDict, storage_options)
    if loaded is not None and not isinstance(loaded, FeaturesDict):
        # A featuresDict field under another class name declares that class, not a dict.
        file = storage.join(directory, FEATURES_FILE)
        raise FeatureError(
            f"{file}: feature (top level): the top-level feature must be a FeaturesDict, "
            f"got {type(loaded).__name__}",
            feature="",
            path=file,
        )
    return loaded
