"""Reading ``features.json`` and ``*.labels.txt`` into the feature model.

``features.json`` is the protobuf JSON form of TFDS's ``Feature`` message: each feature names
its Python class (``pythonClassName``) and holds one content field (``tensor``, ``image``,
``featuresDict``...); int64 numbers are decimal strings and default values are left out.
Files are read through :mod:`readplan.storage`, so a dataset directory may be a URL.
``specs/features.md`` §1 is normative.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, cast

from readplan import storage
from readplan._internal.validate import INT64_MAX, INT64_MIN
from readplan.errors import FeatureError
from readplan.metadata._feature_types import (
    Audio,
    BBoxFeature,
    ClassLabel,
    Dataset,
    Feature,
    Image,
    ImageFormat,
    LabeledImage,
    Scalar,
    Sequence,
    Tensor,
    Text,
    UnknownFeature,
)
from readplan.metadata._limits import MAX_FEATURE_DEPTH, value_cap

__all__ = ["FEATURES_FILE", "MakeDict", "read_features"]

FEATURES_FILE = "features.json"
_PACKAGE = "tensorflow_datasets.core.features."
_DECIMAL = re.compile(r"-?[0-9]+")
# int64's extremes have 19 digits: longer numbers are refused before Python converts them
# (which it refuses itself beyond 4,300 digits, with a bare ValueError).
_MAX_DIGITS = 20
_Path = tuple[str, ...]


MakeDict = Callable[[dict[str, Feature]], Feature]
"""Builds the FeaturesDict type (defined by the public module, which builds on this one)."""


class _Context:
    """Where a declaration sits: the file, the label-file reader and the dict type."""

    def __init__(
        self, file: str, labels: Callable[[str], list[str] | None], make_dict: MakeDict
    ) -> None:
        self.file = file
        self.labels = labels
        self.make_dict = make_dict
        self.depth = 0  # of the declaration being read: dicts and Sequences nest

    def error(self, path: _Path, message: str, feature_type: str | None = None) -> FeatureError:
        where = "/".join(path) or "(top level)"
        return FeatureError(
            f"{self.file}: feature {where}: {message}",
            feature="/".join(path),
            feature_type=feature_type,
            path=self.file,
        )


def read_features(
    directory: str, make_dict: MakeDict, storage_options: storage.StorageOptions = None
) -> Feature | None:
    """The features of the dataset in ``directory``, or None without a ``features.json``."""
    file = storage.join(directory, FEATURES_FILE)
    try:
        raw = _read_bounded(file, storage_options)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise FeatureError(f"cannot read {file}: {err}", path=file) from err
    try:
        declaration = json.loads(raw, parse_int=_json_int)
    except RecursionError:
        raise FeatureError(
            f"{file} nests JSON values too deeply to read; TFDS writes features nested a few "
            f"levels deep (readplan reads at most {MAX_FEATURE_DEPTH})",
            path=file,
        ) from None
    except (ValueError, UnicodeDecodeError) as err:
        raise FeatureError(
            f"{file} is not valid JSON ({err}); TFDS writes it next to dataset_info.json",
            path=file,
        ) from err
    context = _Context(file, lambda stem: _read_labels(directory, stem, storage_options), make_dict)
    if isinstance(declaration, dict) and "type" in declaration and "content" in declaration:
        raise context.error(
            (),
            "this is the legacy {type, content} layout written by TFDS before 4.0, which "
            "readplan does not read; regenerate the metadata with a recent TFDS",
        )
    if not isinstance(declaration, dict) or "featuresDict" not in declaration:
        raise context.error((), "the top-level feature must be a FeaturesDict")
    try:
        return _feature(declaration, (), (), context)
    except RecursionError:  # JSON nested deeply inside a feature's other fields
        raise context.error((), "nests JSON values too deeply to read") from None


def _read_bounded(file: str, storage_options: storage.StorageOptions) -> bytes:
    """The file's bytes, refused past the decoded-value bound (``max_value_bytes``' default,
    specs/features.md §6): metadata of a few kilobytes is read, never a device or a
    runaway file whole."""
    cap = value_cap(None)
    raw = storage.read_prefix(file, cap + 1, storage_options=storage_options)
    if len(raw) > cap:
        raise FeatureError(
            f"{file} is larger than {cap} bytes (TFDS writes kilobytes); if it is genuine, "
            "set $READPLAN_MAX_VALUE_BYTES higher",
            path=file,
        )
    return raw


class _LongNumber(str):
    """A JSON number too long for int64, kept as its text for :func:`_int` to refuse, located."""

    __slots__ = ()


def _json_int(text: str) -> int | str:
    return _LongNumber(text) if len(text) > _MAX_DIGITS else int(text)


def _read_labels(
    directory: str, stem: str, storage_options: storage.StorageOptions
) -> list[str] | None:
    file = storage.join(directory, f"{stem}.labels.txt")
    try:
        text = _read_bounded(file, storage_options).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise FeatureError(f"cannot read class names from {file}: {err}", path=file) from err
    # TFDS strips every line and drops empty ones.
    return [name.strip() for name in text.split("\n") if name.strip()]


def _feature(value: Any, path: _Path, names: _Path, context: _Context) -> Feature:
    """One declaration; ``names`` is the dict-key chain that names its label file."""
    if context.depth >= MAX_FEATURE_DEPTH:
        raise context.error(
            path,
            f"features nest more than {MAX_FEATURE_DEPTH} levels deep (dicts and Sequences); "
            "TFDS datasets nest a few",
        )
    context.depth += 1
    try:
        return _declared(value, path, names, context)
    finally:
        context.depth -= 1


def _declared(value: Any, path: _Path, names: _Path, context: _Context) -> Feature:
    if not isinstance(value, dict):
        raise context.error(path, f"expected a JSON object, got {value!r:.80}")
    class_name = value.get("pythonClassName")
    if not isinstance(class_name, str) or not class_name:
        raise context.error(path, "has no pythonClassName")
    short = class_name.removeprefix(_PACKAGE).rsplit(".", 1)[-1]
    parser = _PARSERS.get(class_name.removeprefix(_PACKAGE))
    kept = {k: v for k, v in value.items() if k not in ("description", "valueRange")}
    declared = json.dumps(kept, sort_keys=True)
    if parser is None:
        return UnknownFeature(class_name, declared)
    field_name, parse = parser
    content = value.get(field_name)
    if short == "Text" and isinstance(value.get("jsonFeature"), dict):
        return UnknownFeature(class_name, declared, _encoded_text(value["jsonFeature"]))
    if not isinstance(content, dict):
        raise context.error(
            path, f"a {short} needs a {field_name!r} object, got {content!r:.80}", short
        )
    try:
        return parse(content, path, names, context)
    except FeatureError as err:
        if err.path is not None:
            raise
        # A declaration TFDS accepts but readplan's model does not: it loads, and refuses
        # when decoded, so the dataset's other features still decode.
        return UnknownFeature(class_name, declared, str(err))


def _encoded_text(content: dict[str, Any]) -> str:
    return (
        f"features.json declares a Text with a deprecated text encoder ({content.get('json')}): "
        "its records hold the integer token ids of a tfds.deprecated.text encoder whose "
        "vocabulary features.json does not hold, and TFDS 4.9.10 refuses to load it too "
        "(\"Deprecated encoder not supported\"); read its ids with unknown='raw'"
    )


def _int(
    content: Mapping[str, Any], key: str, default: int | None, path: _Path, c: _Context
) -> Any:
    value = content.get(key)
    if value is None:
        return default
    if isinstance(value, _LongNumber) or (isinstance(value, str) and len(value) > _MAX_DIGITS):
        raise c.error(
            path, f"{key} is a number of {len(value)} digits ({value[:24]}...), not an int64"
        )
    if isinstance(value, str) and _DECIMAL.fullmatch(value):
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and INT64_MIN <= value <= INT64_MAX:
        return value
    raise c.error(path, f"{key} must be an int64 (a number or decimal string), got {value!r:.80}")


def _str(content: Mapping[str, Any], key: str, path: _Path, c: _Context) -> str | None:
    value = content.get(key)
    if value is None or isinstance(value, str):
        return value or None
    raise c.error(path, f"{key} must be a string, got {value!r:.80}")


def _shape(content: Mapping[str, Any], path: _Path, c: _Context) -> tuple[int | None, ...]:
    shape = content.get("shape", {})
    dims = shape.get("dimensions", []) if isinstance(shape, dict) else None
    if not isinstance(dims, list):
        raise c.error(path, f"shape must be {{'dimensions': [...]}}, got {shape!r:.80}")
    out: list[int | None] = []
    for dim in dims:
        number = _int({"shape dimension": dim}, "shape dimension", None, path, c)
        if number is None or number < -1:
            raise c.error(path, f"shape dimension {dim!r} must be -1 (unknown) or >= 0")
        out.append(None if number == -1 else number)
    return tuple(out)


def _dtype(content: Mapping[str, Any], path: _Path, c: _Context) -> str:
    dtype = _str(content, "dtype", path, c)
    if dtype is None:
        raise c.error(path, "has no dtype")
    return dtype


def _encoding(content: Mapping[str, Any], path: _Path, c: _Context) -> Any:
    # Tensor writes the enum's value ("none"), Audio its name ("NONE"); TFDS lower-cases both.
    return (_str(content, "encoding", path, c) or "none").lower()


def _tensor(cls: type[Tensor]) -> Callable[[dict[str, Any], _Path, _Path, _Context], Feature]:
    def parse(content: dict[str, Any], path: _Path, names: _Path, c: _Context) -> Feature:
        # minimum/maximum only document the values; they do not change decoding.
        optional = content.get("optional", False)
        if cls is Scalar:
            return Scalar(dtype=_dtype(content, path, c), optional=optional)
        return cls(
            _shape(content, path, c),
            _dtype(content, path, c),
            _encoding(content, path, c),
            optional=optional,
        )

    return parse


def _class_label(content: dict[str, Any], path: _Path, names: _Path, c: _Context) -> Feature:
    num_classes = _int(content, "numClasses", 0, path, c)
    stem = "-".join(names)
    labels = c.labels(stem)
    if labels is not None and len(labels) != num_classes:
        raise c.error(
            path,
            f"{stem}.labels.txt lists {len(labels)} names but features.json says "
            f"numClasses={num_classes}; the two files disagree",
            "ClassLabel",
        )
    return ClassLabel(num_classes, tuple(labels or ()))


def _image(content: dict[str, Any], path: _Path, names: _Path, c: _Context) -> Feature:
    return _image_of(content, _shape(content, path, c), path, c)


def _labeled_image(content: dict[str, Any], path: _Path, names: _Path, c: _Context) -> Feature:
    image = _image_of(content, _shape(content, path, c) or (None, None, 1), path, c)
    label = content.get("label")
    num_classes = _int(label, "numClasses", 0, path, c) if isinstance(label, dict) else None
    labels = c.labels("-".join(names))
    if labels is not None and num_classes is not None and len(labels) != num_classes:
        raise c.error(
            path,
            f"{'-'.join(names)}.labels.txt lists {len(labels)} names but features.json says "
            f"numClasses={num_classes}; the two files disagree",
            "LabeledImage",
        )
    return LabeledImage(
        image.shape,
        image.dtype,
        image.encoding_format,
        num_classes=num_classes,
        names=labels or (),
    )


def _image_of(
    content: dict[str, Any], shape: tuple[int | None, ...], path: _Path, c: _Context
) -> Image:
    """An Image (or a Video's frame, whose ``shape`` is given) from its ``content``."""
    dtype = _str(content, "dtype", path, c) or "uint8"
    # Any string is passed on: Image refuses one outside ImageFormat, naming it.
    encoding = cast("ImageFormat | None", _str(content, "encodingFormat", path, c))
    return Image(shape or (None, None, 3), dtype, encoding, bool(content.get("useColormap", False)))


def _bbox(content: dict[str, Any], path: _Path, names: _Path, c: _Context) -> Feature:
    return BBoxFeature(_str(content, "bboxFormat", path, c))


def _text(content: dict[str, Any], path: _Path, names: _Path, c: _Context) -> Feature:
    return Text()


def _audio(content: dict[str, Any], path: _Path, names: _Path, c: _Context) -> Feature:
    if content.get("lazyDecode"):
        # Encoded audio files, decoded by ffmpeg in TFDS: outside what readplan decodes.
        return UnknownFeature(_PACKAGE + "audio_feature.Audio", json.dumps(content))
    return Audio(
        _shape(content, path, c),
        _dtype(content, path, c),
        _int(content, "sampleRate", None, path, c),
        _str(content, "fileFormat", path, c),
        _encoding(content, path, c),
    )


def _video(content: dict[str, Any], path: _Path, names: _Path, c: _Context) -> Feature:
    # TFDS's Video is a Sequence of Image frames (shape (frames, height, width, channels)).
    shape = _shape(content, path, c)
    if shape and len(shape) != 4:
        raise c.error(path, f"a Video shape is (frames, height, width, channels), not {shape}")
    return Sequence(_image_of(content, shape[1:], path, c), shape[0] if shape else None)


def _sequence(content: dict[str, Any], path: _Path, names: _Path, c: _Context) -> Feature:
    length = _int(content, "length", 0, path, c)
    inner = _feature(content.get("feature"), path, names, c)
    return Sequence(inner, None if length == -1 else length)


def _dataset(content: dict[str, Any], path: _Path, names: _Path, c: _Context) -> Feature:
    sequence = _sequence(content, path, names, c)
    assert isinstance(sequence, Sequence)
    return Dataset(sequence.feature, sequence.length)


def _languages(content: dict[str, Any], path: _Path, c: _Context) -> list[str]:
    languages = content.get("languages", [])
    if not isinstance(languages, list) or not all(isinstance(x, str) for x in languages):
        raise c.error(path, f"languages must be a list of strings, got {languages!r:.80}")
    return languages


def _translation(content: dict[str, Any], path: _Path, names: _Path, c: _Context) -> Feature:
    # TFDS's Translation is a FeaturesDict of one Text per language.
    return c.make_dict({language: Text() for language in _languages(content, path, c)})


def _variable_translation(
    content: dict[str, Any], path: _Path, names: _Path, c: _Context
) -> Feature:
    # TFDS's TranslationVariableLanguages is a Sequence of {language, translation} texts.
    _languages(content, path, c)
    return Sequence(c.make_dict({"language": Text(), "translation": Text()}))


def _features_dict(content: dict[str, Any], path: _Path, names: _Path, c: _Context) -> Feature:
    entries = content.get("features", {})
    if not isinstance(entries, dict):
        raise c.error(path, f"features must be an object, got {entries!r:.80}", "FeaturesDict")
    return c.make_dict(
        {
            name: _feature(entry, (*path, name), (*names, name.replace("/", ".")), c)
            for name, entry in entries.items()
        }
    )


_PARSERS: dict[str, tuple[str, Callable[[dict[str, Any], _Path, _Path, _Context], Feature]]] = {
    "features_dict.FeaturesDict": ("featuresDict", _features_dict),
    "tensor_feature.Tensor": ("tensor", _tensor(Tensor)),
    "feature.Tensor": ("tensor", _tensor(Tensor)),
    "scalar.Scalar": ("tensor", _tensor(Scalar)),
    "text_feature.Text": ("text", _text),
    "class_label_feature.ClassLabel": ("classLabel", _class_label),
    "image_feature.Image": ("image", _image),
    "labeled_image.LabeledImage": ("image", _labeled_image),
    "dataset_feature.Dataset": ("sequence", _dataset),
    "translation_feature.Translation": ("translation", _translation),
    "translation_feature.TranslationVariableLanguages": ("translation", _variable_translation),
    "bounding_boxes.BBoxFeature": ("boundingBox", _bbox),
    "audio_feature.Audio": ("audio", _audio),
    "sequence_feature.Sequence": ("sequence", _sequence),
    "video_feature.Video": ("video", _video),
}
