"""The model of TFDS's feature connectors: what a ``features.json`` declares.

Each class mirrors one TFDS 4.9.10 feature connector and keeps what decoding needs; the
normative text is ``specs/features.md`` §1-§2.  Leaf features are stored in a
``tf.train.Example`` as one entry named by their path; :class:`Sequence` adds leading
dimensions to every leaf below it and :class:`FeaturesDict` nests names with ``/``.
"""

from __future__ import annotations

import os
from collections import abc
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias, overload

import numpy as np

from readplan._internal.frozen import init_fields
from readplan._internal.validate import is_int
from readplan.errors import FeatureError
from readplan.metadata._label_names import names_in_file

__all__ = [
    "DTYPES",
    "Audio",
    "BBoxFeature",
    "ClassLabel",
    "Dataset",
    "DefaultNames",
    "Feature",
    "Image",
    "LabeledImage",
    "Scalar",
    "Sequence",
    "Shape",
    "Tensor",
    "Text",
    "UnknownFeature",
]

Shape: TypeAlias = tuple[int | None, ...]
"""A feature's shape: ``None`` marks a dimension that varies from example to example."""

STRING = "string"
DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    STRING,
)
"""The dtypes TFDS stores in a ``tf.train.Example`` (``"string"`` is TFDS's name for bytes)."""

ENCODED_DTYPES = (*DTYPES[:-1], "complex64", "complex128")
"""The dtypes of Tensors stored as raw bytes (``encoding="bytes"``/``"zlib"``)."""

Encoding: TypeAlias = Literal["none", "bytes", "zlib"]
_ENCODINGS = ("none", "bytes", "zlib")
ImageFormat: TypeAlias = Literal["png", "jpeg"]
_IMAGE_DTYPES = ("uint8", "uint16", "float32")


class Feature:
    """A TFDS feature connector, as declared in ``features.json``."""

    __slots__ = ()

    tfds_class: ClassVar[str] = ""
    """The TFDS class this type models, e.g. ``"Image"``."""


def _as_shape(shape: Any) -> Any:
    """A shape given as a list, as TFDS accepts it, stored as a tuple."""
    return tuple(shape) if isinstance(shape, list) else shape


def _check_shape(shape: object, owner: str) -> None:
    if isinstance(shape, tuple) and all(dim is None or (is_int(dim) and dim >= 0) for dim in shape):
        return
    raise FeatureError(
        f"{owner} shape {shape!r} must be a tuple of non-negative ints and None (None marks "
        "a dimension that varies), e.g. (None, 2)",
        feature_type=owner,
    )


def _check_dtype(dtype: object, owner: str, allowed: tuple[str, ...] = DTYPES) -> None:
    if isinstance(dtype, str) and dtype in allowed:
        return
    raise FeatureError(
        f"{owner} dtype {dtype!r} is not one readplan decodes; accepted: {', '.join(allowed)}",
        feature_type=owner,
    )


def _check_bool(value: object, name: str, owner: str) -> None:
    if not isinstance(value, bool):
        raise FeatureError(f"{owner} {name} must be a bool, got {value!r}", feature_type=owner)


@dataclass(frozen=True, init=False)
class Tensor(Feature):
    """``tfds.features.Tensor``: an array of ``dtype`` and ``shape``.

    ``encoding="none"`` stores the values in a ``tf.train.Example`` list (integers and bools
    as int64, floats as float32, strings as bytes); ``"bytes"``/``"zlib"`` store the raw
    little-endian buffer (zlib-compressed). ``optional`` features may be absent from a
    record and then take TFDS's default (the dtype's minimum, ``b""`` or ``False``).
    """

    tfds_class: ClassVar[str] = "Tensor"

    shape: Shape
    dtype: str
    encoding: Encoding
    optional: bool = field(kw_only=True)

    def __init__(
        self,
        shape: Shape | list[int | None],
        dtype: str,
        encoding: Encoding = "none",
        *,
        optional: bool = False,
    ) -> None:
        init_fields(self, shape=_as_shape(shape), dtype=dtype, encoding=encoding, optional=optional)
        self.__post_init__()

    def __post_init__(self) -> None:
        owner = type(self).tfds_class
        _check_shape(self.shape, owner)
        if self.encoding not in _ENCODINGS:
            raise FeatureError(
                f"{owner} encoding {self.encoding!r} is not one of {', '.join(_ENCODINGS)}",
                feature_type=owner,
            )
        _check_dtype(self.dtype, owner, DTYPES if self.encoding == "none" else ENCODED_DTYPES)
        _check_bool(self.optional, "optional", owner)


@dataclass(frozen=True, init=False)
class Scalar(Tensor):
    """``tfds.features.Scalar``: a :class:`Tensor` of shape ``()``."""

    tfds_class: ClassVar[str] = "Scalar"

    def __init__(
        self,
        shape: Shape | list[int | None] = (),
        dtype: str = "int64",
        encoding: Encoding = "none",
        *,
        optional: bool = False,
    ) -> None:
        super().__init__(shape, dtype, encoding, optional=optional)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.shape != ():
            raise FeatureError(
                f"Scalar has shape (), not {self.shape!r}; use Tensor for arrays",
                feature_type="Scalar",
            )


@dataclass(frozen=True)
class Text(Feature):
    """``tfds.features.Text``: a UTF-8 string, yielded as ``bytes``."""

    tfds_class: ClassVar[str] = "Text"

    @property
    def tensor(self) -> Tensor:
        """How the text is stored: a scalar string."""
        return Tensor((), STRING)


@dataclass(frozen=True, init=False)
class ClassLabel(Feature):
    """``tfds.features.ClassLabel``: an int64 class index in ``[0, num_classes)``.

    ``names`` come from the dataset's ``<feature path with / as ->.labels.txt``; without
    that file they are ``"0"``, ``"1"``, ... as in TFDS.
    """

    tfds_class: ClassVar[str] = "ClassLabel"

    num_classes: int
    names: abc.Sequence[str]
    """A tuple, or :class:`DefaultNames` without a labels file."""

    def __init__(
        self,
        num_classes: int | None = None,
        names: Iterable[str] | None = (),
        *,
        names_file: str | os.PathLike[str] | None = None,
    ) -> None:
        # TFDS's spellings: ClassLabel(num_classes=3), (names=[...]) or (names_file=path).
        if names_file is not None:
            names = names_in_file(names_file)
        names = tuple(names) if names is not None and not isinstance(names, str) else names
        if num_classes is None and isinstance(names, tuple) and names:
            num_classes = len(names)
        if (
            is_int(num_classes)
            and num_classes >= 0
            and (not names or names == DefaultNames(num_classes))
        ):
            # Built on demand: numClasses may be 10**15 while only a few names are used.
            names = DefaultNames(num_classes)
        init_fields(self, num_classes=num_classes, names=names)
        self.__post_init__()

    def __post_init__(self) -> None:
        if not _is_count(self.num_classes):
            raise FeatureError(
                f"ClassLabel num_classes must be a non-negative int, got {self.num_classes!r}; "
                "give num_classes=<int> or names=[...]",
                feature_type="ClassLabel",
            )
        names = self.names
        if isinstance(names, DefaultNames) and len(names) == self.num_classes:
            return
        if not isinstance(names, tuple) or not all(isinstance(name, str) for name in names):
            raise FeatureError(
                f"ClassLabel names must be str, got {names!r:.120}", feature_type="ClassLabel"
            )
        if len(names) != self.num_classes:
            raise FeatureError(
                f"ClassLabel has {len(names)} names but num_classes={self.num_classes}; give "
                "exactly one name per class",
                feature_type="ClassLabel",
            )
        if len(set(names)) != len(names):
            repeated = sorted({name for name in names if names.count(name) > 1})
            raise FeatureError(
                f"ClassLabel names repeat {repeated}; each class needs a distinct name",
                feature_type="ClassLabel",
            )

    @property
    def tensor(self) -> Tensor:
        """How the label is stored: a scalar int64."""
        return Tensor((), "int64")

    def int2str(self, index: int | np.integer[Any]) -> str:
        """The name of class ``index``; outside ``[0, num_classes)`` is a FeatureError.

        (TFDS indexes a Python list, so it answers ``-1`` with the last name; readplan does not.)
        """
        value: object = int(index) if isinstance(index, np.integer) else index
        if not is_int(value) or not 0 <= value < self.num_classes:
            raise FeatureError(
                f"class index {index!r} is outside [0, {self.num_classes}); the names are "
                f"{_names_preview(self.names)}",
                feature_type="ClassLabel",
            )
        return self.names[value]

    def str2int(self, name: str) -> int:
        """The index of class ``name``; an unknown name is a FeatureError listing the names."""
        try:
            return self.names.index(name)
        except ValueError:
            raise FeatureError(
                f"{name!r:.80} is not a class name; the names are {_names_preview(self.names)}",
                feature_type="ClassLabel",
            ) from None


class DefaultNames(abc.Sequence[str]):
    """The names of a ClassLabel without a labels file, ``"0"``, ``"1"``, ..., built on demand.

    Equal to the tuple of the same names; hashed by its length alone, so a 10**15-class
    label hashes (as a decoder cache key) at once.
    """

    __slots__ = ("_count",)

    def __init__(self, count: int) -> None:
        self._count = count

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(map(str, range(self._count)[index]))
        return str(range(self._count)[index])

    def __iter__(self) -> Iterator[str]:
        return map(str, range(self._count))

    def __contains__(self, name: object) -> bool:
        return self._position(name) is not None

    def index(self, name: Any, start: int = 0, stop: int | None = None) -> int:
        """The index of ``name`` (ValueError when it is not one of the names)."""
        position = self._position(name)
        if position is None or position not in range(self._count)[start:stop]:
            raise ValueError(f"{name!r:.80} is not in the names")
        return position

    def count(self, name: Any) -> int:
        """1 for a name, else 0 (the names are distinct)."""
        return int(name in self)

    def _position(self, name: object) -> int | None:
        if not isinstance(name, str) or not name.isdecimal() or not name.isascii():
            return None
        if len(name) > len(str(self._count)) or (name != "0" and name.startswith("0")):
            return None
        position = int(name)
        return position if position < self._count else None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DefaultNames):
            return self._count == other._count
        if isinstance(other, tuple):
            return len(other) == self._count and all(map(str.__eq__, self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash((DefaultNames, self._count))

    def __repr__(self) -> str:
        return f"DefaultNames({self._count})"


def _names_preview(names: abc.Sequence[str]) -> str:
    shown = [names[i] for i in range(min(len(names), 10))]
    return f"{shown!r:.200}" + (f" ... ({len(names)} names)" if len(names) > len(shown) else "")


@dataclass(frozen=True)
class BBoxFeature(Feature):
    """``tfds.features.BBoxFeature``: 4 float32 values, by default ``[ymin, xmin, ymax, xmax]``."""

    tfds_class: ClassVar[str] = "BBoxFeature"

    bbox_format: str | None = "REL_YXYX"

    @property
    def tensor(self) -> Tensor:
        """How the box is stored: 4 float32 values."""
        return Tensor((4,), "float32")


@dataclass(frozen=True, init=False)
class Audio(Feature):
    """``tfds.features.Audio`` stored as samples (no ``lazy_decode``): a :class:`Tensor`."""

    tfds_class: ClassVar[str] = "Audio"

    shape: Shape
    dtype: str
    sample_rate: int | None
    file_format: str | None
    encoding: Encoding

    def __init__(
        self,
        shape: Shape | list[int | None] = (None,),
        dtype: str = "int64",
        sample_rate: int | None = None,
        file_format: str | None = None,
        encoding: Encoding = "none",
    ) -> None:
        init_fields(
            self,
            shape=_as_shape(shape),
            dtype=dtype,
            sample_rate=sample_rate,
            file_format=file_format,
            encoding=encoding,
        )
        self.__post_init__()

    def __post_init__(self) -> None:
        _check_shape(self.shape, "Audio")
        Tensor(self.shape, self.dtype, self.encoding)  # validates dtype and encoding
        if self.sample_rate is not None and not is_int(self.sample_rate):
            raise FeatureError(
                f"Audio sample_rate must be an int or None, got {self.sample_rate!r}",
                feature_type="Audio",
            )

    @property
    def tensor(self) -> Tensor:
        """How the samples are stored."""
        return Tensor(self.shape, self.dtype, self.encoding)


@dataclass(frozen=True, init=False)
class Image(Feature):
    """``tfds.features.Image``: one encoded PNG, JPEG, BMP or GIF, decoded to ``(h, w, c)``.

    ``encoding_format`` is how TFDS encoded arrays when writing; decoding reads the format
    from the bytes, as TFDS does. ``float32`` images are single-channel and stored as
    4-channel uint8 PNGs of the float's bytes. A 4-D shape ``(frames, h, w, 3)`` holds
    GIFs, decoded to all their frames.
    """

    tfds_class: ClassVar[str] = "Image"

    shape: Shape
    dtype: str
    encoding_format: ImageFormat | None
    use_colormap: bool

    def __init__(
        self,
        shape: Shape | list[int | None] = (None, None, 3),
        dtype: str = "uint8",
        encoding_format: ImageFormat | None = None,
        use_colormap: bool = False,
    ) -> None:
        init_fields(
            self,
            shape=_as_shape(shape),
            dtype=dtype,
            encoding_format=encoding_format,
            use_colormap=use_colormap,
        )
        self.__post_init__()

    def __post_init__(self) -> None:
        shape = self.shape
        _check_shape(shape, "Image")
        _check_dtype(self.dtype, "Image", _IMAGE_DTYPES)
        if len(shape) not in (3, 4):
            raise FeatureError(
                f"Image shape {shape} must be (height, width, channels), or (frames, height, "
                "width, channels) for GIFs",
                feature_type="Image",
            )
        if self.encoding_format not in (None, "png", "jpeg"):
            raise FeatureError(
                f"Image encoding_format {self.encoding_format!r} must be 'png', 'jpeg' or None",
                feature_type="Image",
            )
        if self.dtype == "float32" and shape[-1] != 1:
            raise FeatureError(
                f"float32 images have one channel, not shape {shape}", feature_type="Image"
            )
        _check_bool(self.use_colormap, "use_colormap", "Image")


@dataclass(frozen=True, init=False)
class Sequence(Feature):
    """``tfds.features.Sequence``: ``length`` (or any number of) elements of ``feature``.

    Every leaf below gains a leading dimension; a sequence of a dict yields a dict of stacked
    arrays. As in TFDS, ``feature`` may be a plain dict (a FeaturesDict) or a numpy type
    (a scalar Tensor).
    """

    tfds_class: ClassVar[str] = "Sequence"

    feature: Feature
    length: int | None = None

    def __init__(self, feature: Any, length: int | None = None) -> None:
        init_fields(self, feature=AS_FEATURE[0](feature) if AS_FEATURE else feature, length=length)
        self.__post_init__()

    def __post_init__(self) -> None:
        if not isinstance(self.feature, Feature):
            raise FeatureError(
                f"Sequence needs a Feature to repeat (a FeaturesDict for a dict), got "
                f"{self.feature!r:.80}",
                feature_type="Sequence",
            )
        if self.length is not None and not (is_int(self.length) and self.length >= 0):
            raise FeatureError(
                f"Sequence length must be a non-negative int or None, got {self.length!r}",
                feature_type="Sequence",
            )


@dataclass(frozen=True, init=False)
class LabeledImage(Image):
    """``tfds.features.LabeledImage``: a one-channel :class:`Image` of class indices.

    Decoded as its Image; ``num_classes`` and ``names`` (from ``<path>.labels.txt``) say
    what the pixel values mean.
    """

    tfds_class: ClassVar[str] = "LabeledImage"

    num_classes: int | None
    names: tuple[str, ...]

    def __init__(
        self,
        shape: Shape | list[int | None] = (None, None, 1),
        dtype: str = "uint8",
        encoding_format: ImageFormat | None = None,
        *,
        num_classes: int | None = None,
        names: Iterable[str] = (),
    ) -> None:
        init_fields(self, num_classes=num_classes, names=tuple(names))
        super().__init__(shape, dtype, encoding_format, use_colormap=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.shape[-1] != 1:
            raise FeatureError(
                f"LabeledImage has one channel, not shape {self.shape}",
                feature_type="LabeledImage",
            )
        if self.num_classes is not None and not _is_count(self.num_classes):
            raise FeatureError(
                f"LabeledImage num_classes must be a non-negative int or None, got "
                f"{self.num_classes!r}",
                feature_type="LabeledImage",
            )


@dataclass(frozen=True)
class Dataset(Sequence):
    """``tfds.features.Dataset``: a nested dataset, stored as a :class:`Sequence`.

    ``tfds.as_numpy`` yields it as an iterable of its elements; readplan yields the list of
    them, each decoded like a record of ``feature``.
    """

    tfds_class: ClassVar[str] = "Dataset"


@dataclass(frozen=True)
class UnknownFeature(Feature):
    """A feature type readplan does not model (``python_class_name`` says which).

    Decoding it is an error unless the caller asks for undecoded values
    (``unknown="raw"``): then the record's ``tf.train.Example`` entries named by its path
    are passed through as :func:`readplan.example.decode` gives them.
    """

    tfds_class: ClassVar[str] = "Unknown"

    python_class_name: str
    content: str = ""
    """The feature's JSON declaration, for inspection."""
    reason: str = ""
    """Why readplan does not decode it, when it is a type readplan knows (else empty)."""


AS_FEATURE: list[Callable[[Any], Any]] = []
"""TFDS's reading of a feature argument (a dict, a numpy type), registered by ``features``."""


def _is_count(value: object) -> bool:
    return is_int(value) and value >= 0


def stored_kind(dtype: str) -> Literal["int64", "float32", "bytes"]:
    """The ``tf.train.Example`` list a dtype is stored in (``encoding="none"``)."""
    if dtype == STRING:
        return "bytes"
    if np.dtype(dtype).kind == "f":
        return "float32"
    return "int64"


def default_fill(dtype: str) -> Any:
    """TFDS's value for an absent optional tensor: the dtype's minimum, ``b""`` or ``False``.

    A float's minimum is parsed as a float32 (TFDS hands it to a float32 parse spec), so
    float64's overflows to ``-inf``.
    """
    if dtype == STRING:
        return b""
    if dtype == "bool":
        return False
    if np.dtype(dtype).kind == "f":
        with np.errstate(over="ignore"):
            return np.float32(np.finfo(dtype).min)
    return np.iinfo(dtype).min
