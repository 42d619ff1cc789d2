"""The feature model written back as TFDS writes it: ``features.json`` and ``*.labels.txt``.

The inverse of ``_feature_json``: the protobuf JSON form of TFDS's ``Feature`` message
(int64 numbers as decimal strings, fields at their default left out, keys sorted, 4-space
indent), and one ``<stem>.labels.txt`` per ClassLabel whose names are not the default
``"0"``, ``"1"``, ... (``specs/features.md`` §1 and §5).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from readplan._internal.validate import a_type
from readplan.errors import FeatureError
from readplan.metadata._feature_types import (
    Audio,
    BBoxFeature,
    ClassLabel,
    DefaultNames,
    Feature,
    Image,
    Scalar,
    Sequence,
    Shape,
    Tensor,
    Text,
)

__all__ = ["features_json", "label_files"]

_PACKAGE = "tensorflow_datasets.core.features."


def features_json(features: Mapping[str, Feature]) -> str:
    """The text of ``features.json`` for ``features``, as ``FeaturesDict.save_config`` writes it."""
    return json.dumps(_declare(features, "(top level)"), indent=4, sort_keys=True)


def label_files(features: Mapping[str, Feature]) -> dict[str, str]:
    """``{file name: text}`` of the ClassLabel names files, as ``save_metadata`` writes them."""
    out: dict[str, str] = {}
    _collect_labels(features, (), out)
    return out


def _collect_labels(feature: Any, stem: tuple[str, ...], out: dict[str, str]) -> None:
    if isinstance(feature, Mapping):
        for name, inner in feature.items():
            _collect_labels(inner, (*stem, name), out)
    elif isinstance(feature, Sequence):
        _collect_labels(feature.feature, stem, out)
    elif isinstance(feature, ClassLabel) and not isinstance(feature.names, DefaultNames):
        out[f"{'-'.join(stem)}.labels.txt"] = "".join(f"{name}\n" for name in feature.names)


def _shape(shape: Shape) -> dict[str, Any]:
    if not shape:
        return {}
    return {"dimensions": [str(-1 if dim is None else dim) for dim in shape]}


def _declare(feature: Any, where: str) -> dict[str, Any]:
    if isinstance(feature, Mapping):
        inner = {name: _declare(f, f"{where}/{name}") for name, f in feature.items()}
        return _typed("features_dict.FeaturesDict", "featuresDict", {"features": inner})
    if isinstance(feature, Sequence):
        content: dict[str, Any] = {"feature": _declare(feature.feature, where)}
        content["length"] = str(-1 if feature.length is None else feature.length)
        return _typed("sequence_feature.Sequence", "sequence", content)
    if isinstance(feature, Scalar):
        return _typed("scalar.Scalar", "tensor", _tensor(feature))
    if isinstance(feature, Tensor):
        return _typed("tensor_feature.Tensor", "tensor", _tensor(feature))
    if isinstance(feature, Text):
        return _typed("text_feature.Text", "text", {})
    if isinstance(feature, ClassLabel):
        count = {"numClasses": str(feature.num_classes)} if feature.num_classes else {}
        return _typed("class_label_feature.ClassLabel", "classLabel", count)
    if isinstance(feature, Image):
        return _typed("image_feature.Image", "image", _image(feature))
    if isinstance(feature, BBoxFeature):
        box = {"dtype": "float32", "shape": _shape((4,))}
        if feature.bbox_format:
            box["bboxFormat"] = feature.bbox_format
        return _typed("bounding_boxes.BBoxFeature", "boundingBox", box)
    if isinstance(feature, Audio):
        return _typed("audio_feature.Audio", "audio", _audio(feature))
    raise FeatureError(
        f"feature {where}: {a_type(feature)} cannot be written to features.json",
        feature=where,
    )


def _typed(class_name: str, field: str, content: dict[str, Any]) -> dict[str, Any]:
    return {"pythonClassName": _PACKAGE + class_name, field: content}


def _tensor(feature: Tensor) -> dict[str, Any]:
    content: dict[str, Any] = {
        "dtype": feature.dtype,
        "encoding": feature.encoding,
        "shape": _shape(feature.shape),
    }
    if feature.optional:
        content["optional"] = True
    return content


def _image(feature: Image) -> dict[str, Any]:
    content: dict[str, Any] = {"dtype": feature.dtype, "shape": _shape(feature.shape)}
    if feature.encoding_format:
        content["encodingFormat"] = feature.encoding_format
    if feature.use_colormap:
        content["useColormap"] = True
    return content


def _audio(feature: Audio) -> dict[str, Any]:
    # Audio spells its encoding by the enum's name ("NONE"), Tensor by its value ("none").
    content: dict[str, Any] = {
        "dtype": feature.dtype,
        "encoding": feature.encoding.upper(),
        "shape": _shape(feature.shape),
    }
    if feature.sample_rate is not None:
        content["sampleRate"] = str(feature.sample_rate)
    if feature.file_format:
        content["fileFormat"] = feature.file_format
    return content
