"""TBL-RAW conversion: a TFDS image dataset decoded once into RAW_U8 samples (``specs/tbl.md`` §10).

``convert(src, dst, raw=True, image_size=S)`` (:mod:`readplan.convert`) turns every record
of a dataset with exactly one ``Image`` feature into one RAW_U8 sample: the image decoded
as ``decode="tfds"`` decodes it and stretched to ``S x S`` by
:func:`readplan.metadata.resize.resize_image`, and, as the sample's metadata block (type
``protobuf``), the record's ``tf.train.Example`` without the image's entry.  The converted
``features.json`` gives the image the shape ``(S, S, 3)``; ``dataset_info.json`` records
the conversion (:class:`~readplan.metadata.raw_images.RawMarker`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from readplan.errors import ConfigError
from readplan.metadata._feature_decode import Decoded
from readplan.metadata.features import FeaturesDict, Image, Sequence
from readplan.metadata.raw_images import RawMarker, resize_image, resizer_version
from readplan.records import example

__all__ = ["MAX_IMAGE_SIZE", "RawImages", "raw_images"]

MAX_IMAGE_SIZE: Final = 65535
"""A TBL index entry's width and height are 16-bit."""


@dataclass(frozen=True)
class RawImages:
    """How each record of a dataset becomes a RAW_U8 sample: its image feature ``feature``
    decoded by ``decode`` and resized to ``size x size``."""

    feature: str
    size: int
    features: FeaturesDict

    def __post_init__(self) -> None:
        if self.feature not in self.features:
            raise ConfigError(
                f"{self.feature!r} is not a feature of the dataset ({sorted(self.features)})",
                field="feature",
                value=self.feature,
            )

    def samples(self, records: Iterable[bytes]) -> Iterator[tuple[bytes, bytes]]:
        """Per record: its ``size x size x 3`` pixels, and the record without the image."""
        decode = FeaturesDict({self.feature: self.features[self.feature]}).decoder()
        for record in records:
            yield self.pixels(decode(record)), self.metadata(record)

    def pixels(self, decoded: Decoded) -> bytes:
        image = decoded[self.feature]
        return resize_image(image, self.size).tobytes()

    def metadata(self, record: bytes) -> bytes:
        entries = example.decode(record)
        entries.pop(self.feature, None)
        return example.encode(entries)

    @property
    def marker(self) -> RawMarker:
        """What the converted ``dataset_info.json`` records of this conversion."""
        return RawMarker(self.feature, self.size, pillow=resizer_version())

    def features_json(self, text: bytes) -> bytes:
        """The source's ``features.json`` with the image's shape ``(size, size, 3)``."""
        fields = json.loads(text)
        try:
            image = fields["featuresDict"]["features"][self.feature]["image"]
        except (KeyError, TypeError) as err:
            raise ConfigError(
                f"features.json has no top-level Image entry {self.feature!r}",
                field="features.json",
                value=self.feature,
            ) from err
        image["shape"] = {"dimensions": [str(self.size), str(self.size), "3"]}
        return json.dumps(fields, indent=2, ensure_ascii=False).encode("utf-8")


def raw_images(features: FeaturesDict | None, image_size: object) -> RawImages:
    """The conversion of a dataset with ``features`` to ``image_size`` pixels square; a
    dataset without exactly one top-level uint8 RGB ``Image`` feature is a ConfigError
    naming its image features."""
    if isinstance(image_size, bool) or not isinstance(image_size, int):
        raise ConfigError(
            f"image_size must be an int in 1..{MAX_IMAGE_SIZE} with raw=True, got "
            f"{image_size!r:.40}",
            field="image_size",
            value=image_size,
        )
    if not 1 <= image_size <= MAX_IMAGE_SIZE:
        raise ConfigError(
            f"image_size={image_size} is outside 1..{MAX_IMAGE_SIZE} (a TBL sample's width "
            "and height are 16-bit)",
            field="image_size",
            value=image_size,
        )
    if features is None:
        raise ConfigError(
            "raw=True decodes the dataset's images with its features.json, and the source has none",
            field="raw",
            value=True,
        )
    found = list(_image_paths(features, ""))
    top = [name for name in found if name in features]
    if len(found) != 1 or not top:
        raise ConfigError(
            "raw=True converts a dataset with exactly one Image feature at the top level; "
            f"this one has {len(found)}: {found or 'none'} (features: {sorted(features)})",
            field="raw",
            value=found,
        )
    _check_rgb(top[0], features[top[0]])
    return RawImages(top[0], image_size, features)


def _image_paths(feature: Any, path: str) -> Iterator[str]:
    if isinstance(feature, Image):
        yield path
    elif isinstance(feature, Sequence):
        yield from _image_paths(feature.feature, path)
    elif isinstance(feature, FeaturesDict):
        for name, inner in feature.items():
            yield from _image_paths(inner, f"{path}/{name}" if path else name)


def _check_rgb(name: str, feature: Any) -> None:
    shape, dtype = feature.shape, feature.dtype
    if dtype != "uint8" or len(shape) != 3 or shape[-1] != 3:
        raise ConfigError(
            f"raw=True stores RGB uint8 images (RAW_U8: h x w x 3 bytes); the Image "
            f"feature {name!r} is {dtype} of shape {shape}",
            field="raw",
            value=name,
        )
