"""Reading ``dataset_info.json`` (``specs/splits.md`` §11).

TFDS writes the file as proto3 JSON: camelCase keys (snake_case accepted), int64 values as
numbers or decimal strings.  Every problem is a DatasetInfoError naming the file and the
field.  The DatasetInfo constructor is passed in (``build``) so that this module sits
below the class it feeds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from readplan._internal.jsonfields import JsonFields
from readplan._internal.validate import INT64_MAX, INT64_MIN, is_int
from readplan.errors import DatasetInfoError, StorageError
from readplan.metadata.split_info import SplitInfo
from readplan.storage import (
    StorageOptions,
    basename,
    isfile,
    join,
    listdir,
    parent,
    read_bytes,
)

if TYPE_CHECKING:
    from readplan.metadata.dataset_info import DatasetInfo

__all__ = [
    "INFO_FILE",
    "ProtoFields",
    "available_file_formats",
    "choose_file_format",
    "load_info",
    "verify_files",
]

INFO_FILE = "dataset_info.json"
_DECIMAL = re.compile(r"-?[0-9]+")

# What ``build`` makes: the DatasetInfo class, or a subclass of it.
_I = TypeVar("_I", bound="DatasetInfo")
Build = Callable[..., _I]


def load_info(
    directory: str,
    *,
    verify_files: bool,
    build: Build[_I],
    storage_options: StorageOptions = None,
    file_format: str | None = None,
) -> _I:
    """The DatasetInfo (made by ``build``) of ``<directory>/dataset_info.json``, in
    ``file_format`` (one of the formats it lists) when given.

    ``directory`` may also name the ``dataset_info.json`` file itself; it may be a URL
    (``specs/storage.md``).
    """
    if basename(directory) == INFO_FILE and isfile(directory, storage_options=storage_options):
        directory = parent(directory)
    path = join(directory, INFO_FILE)
    document = _read_json(path, directory, storage_options)
    info = _info_from_json(
        document, path=path, data_dir=directory, build=build, file_format=file_format
    )
    if verify_files:
        _verify_files(info, path, directory, storage_options)
    return info


def _read_json(path: str, directory: str, storage_options: StorageOptions) -> Any:
    try:
        return json.loads(read_bytes(path, storage_options=storage_options))
    except FileNotFoundError:
        hint = _nearby_hint(directory, storage_options)
        raise DatasetInfoError(
            f"{path} does not exist: pass the folder that holds dataset_info.json and the shard "
            f"files (<data_dir>/<dataset>/[<config>/]<version>){hint}",
            path=path,
        ) from None
    except StorageError:
        raise
    except (OSError, UnicodeDecodeError) as err:
        raise DatasetInfoError(f"cannot read {path}: {err}", path=path) from None
    except json.JSONDecodeError as err:
        raise DatasetInfoError(
            f"{path} is not valid JSON: {err.msg} at line {err.lineno} column {err.colno}",
            path=path,
        ) from None
    except (ValueError, RecursionError) as err:  # absurd numbers or nesting
        raise DatasetInfoError(f"{path} cannot be read as JSON: {err}", path=path) from None


def _nearby_hint(directory: str, storage_options: StorageOptions) -> str:
    """Name sub-folders (two levels down at most) that do hold a dataset_info.json."""
    found = []
    for depth_one in sorted(_subdirs(directory, storage_options)):
        for candidate in [depth_one, *sorted(_subdirs(depth_one, storage_options))]:
            if isfile(join(candidate, INFO_FILE), storage_options=storage_options):
                found.append(candidate)
    return f"; found one in: {', '.join(found[:5])}" if found else ""


def _subdirs(directory: str, storage_options: StorageOptions) -> list[str]:
    try:
        entries = listdir(directory, storage_options=storage_options)
    except OSError:
        return []
    return [path for path, is_dir in entries if is_dir]


class ProtoFields(JsonFields):
    """One JSON object of a proto3 JSON document: fields by camelCase or snake_case key."""

    def __init__(self, obj: Any, where: str, path: str) -> None:
        def error(message: str, field: str) -> DatasetInfoError:
            if field == "$":  # the document itself
                return DatasetInfoError(f"{path}: {message}", path=path)
            return DatasetInfoError(f"{path}: field {field}: {message}", path=path, field=field)

        super().__init__(obj, where, error)
        self.path = path

    def value(self, camel: str) -> Any:
        """The field's value under its camelCase or snake_case key (not both), or None."""
        snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel)
        present = [key for key in dict.fromkeys((camel, snake)) if key in self.document]
        if len(present) > 1:
            raise self.fail(camel, f"given twice, as {camel!r} and {snake!r}")
        return self.document[present[0]] if present else None

    def string(self, camel: str) -> str | None:
        value = self.value(camel)
        if value is not None and not isinstance(value, str):
            raise self.fail(camel, f"expected a string, got {value!r}")
        return value

    def required_string(self, camel: str) -> str:
        value = self.value(camel)
        if not isinstance(value, str) or not value:
            raise self.fail(camel, f"expected a non-empty string, got {value!r}")
        return value

    def int64(self, camel: str, value: Any) -> int:
        """A proto3 JSON int64: a JSON number or a decimal string."""
        number: int | None = None
        # A decimal string longer than int64's 20 characters is refused before int() parses
        # it (Python limits how many digits int() accepts, with a ValueError of its own).
        if isinstance(value, str) and len(value) <= 20 and _DECIMAL.fullmatch(value):
            number = int(value)
        elif is_int(value):
            number = value
        elif isinstance(value, float) and value.is_integer():
            number = int(value)
        if number is None or not INT64_MIN <= number <= INT64_MAX:
            raise self.fail(
                camel, f"expected an int64 integer (number or decimal string), got {value!r:.80}"
            )
        return number


def available_file_formats(file_format: str, alternatives: Sequence[str]) -> tuple[str, ...]:
    """The formats a dataset is stored in: its ``fileFormat`` first, then the others."""
    return tuple(dict.fromkeys((file_format, *alternatives)))


def choose_file_format(
    wanted: str, available: Sequence[str], name: str
) -> tuple[str, tuple[str, ...]]:
    """``wanted`` and the dataset's other formats, when the dataset ``name`` is stored in it
    (TFDS's ``builder_from_directory(dir, file_format=...)`` check); else a DatasetInfoError."""
    if wanted not in available:
        raise DatasetInfoError(
            f"the dataset {name!r} is not stored in file format {wanted!r}: its "
            f"dataset_info.json lists {sorted(available)} (fileFormat and "
            "alternativeFileFormats); pass one of those",
            field="file_format",
        )
    return wanted, tuple(f for f in available if f != wanted)


def _info_from_json(
    obj: Any, *, path: str, data_dir: str | None, build: Build[_I], file_format: str | None
) -> _I:
    top = ProtoFields(obj, "", path)
    name = top.required_string("name")
    raw_splits = top.value("splits")
    if not isinstance(raw_splits, list) or not raw_splits:
        raise top.fail(
            "splits",
            "expected a non-empty list of splits (a dataset without splits has not been "
            "generated yet)",
        )
    splits: dict[str, SplitInfo] = {}
    for index, raw in enumerate(raw_splits):
        info = _split_from_json(ProtoFields(raw, f"splits[{index}]", path))
        if info.name in splits:
            raise DatasetInfoError(
                f"{path}: split {info.name!r} is listed twice (splits[{index}])",
                path=path,
                field=f"splits[{index}].name",
            )
        splits[info.name] = info
    disable_shuffling = top.value("disableShuffling")
    if disable_shuffling is not None and not isinstance(disable_shuffling, bool):
        raise top.fail("disableShuffling", f"expected true or false, got {disable_shuffling!r}")
    chosen, others = _file_formats(top, name, file_format)
    try:
        return build(
            name,
            splits,
            data_dir=data_dir,
            file_format=chosen,
            version=top.string("version"),
            config_name=top.string("configName"),
            disable_shuffling=bool(disable_shuffling),
            alternative_file_formats=others,
        )
    except DatasetInfoError as err:
        camel = _CAMEL.get(err.field or "", err.field or "")
        raise top.fail(camel, str(err)) from None


def _file_formats(top: ProtoFields, name: str, wanted: str | None) -> tuple[str, tuple[str, ...]]:
    """The format the dataset is read in (``wanted``, else its ``fileFormat``) and its others."""
    declared = top.string("fileFormat") or "tfrecord"
    alternatives = top.value("alternativeFileFormats") or []
    if not isinstance(alternatives, list) or not all(isinstance(f, str) for f in alternatives):
        raise top.fail(
            "alternativeFileFormats",
            f"expected a list of file format names such as ['array_record'], got "
            f"{alternatives!r:.80}",
        )
    if wanted is None:
        return declared, tuple(alternatives)
    try:
        return choose_file_format(wanted, available_file_formats(declared, alternatives), name)
    except DatasetInfoError as err:
        raise DatasetInfoError(f"{top.path}: {err}", path=top.path, field=err.field) from None


_CAMEL = {
    "name": "name",
    "file_format": "fileFormat",
    "alternative_file_formats": "alternativeFileFormats",
    "shard_lengths": "shardLengths",
    "filepath_template": "filepathTemplate",
    "num_bytes": "numBytes",
}


def _split_from_json(fields: ProtoFields) -> SplitInfo:
    name = fields.required_string("name")
    raw_lengths = fields.value("shardLengths")
    if not raw_lengths:
        raise fields.fail(
            "shardLengths",
            f"split {name!r} has no shard lengths; readplan needs the number of records in "
            "each shard (datasets written before TFDS recorded shardLengths cannot be planned)",
        )
    if not isinstance(raw_lengths, list):
        raise fields.fail("shardLengths", f"expected a list, got {raw_lengths!r}")
    lengths = tuple(fields.int64("shardLengths", value) for value in raw_lengths)
    raw_bytes = fields.value("numBytes")
    num_bytes = 0 if raw_bytes is None else fields.int64("numBytes", raw_bytes)
    try:
        return SplitInfo(
            name,
            lengths,
            filepath_template=fields.string("filepathTemplate"),
            num_bytes=num_bytes,
        )
    except DatasetInfoError as err:
        raise fields.fail(_CAMEL.get(err.field or "", "name"), str(err)) from None


def verify_files(info: DatasetInfo, storage_options: StorageOptions = None) -> None:
    """Every shard file ``info``'s splits name exists in its ``data_dir``; a missing one is a
    DatasetInfoError naming it and the ``dataset_info.json`` field that lists it."""
    if info.data_dir is None:
        raise DatasetInfoError(
            f"dataset {info.name!r} has no data_dir: there are no shard files to verify; "
            "load it from its folder with DatasetInfo.load(dir)",
            field="data_dir",
        )
    path = join(info.data_dir, INFO_FILE)
    _verify_files(info, path, info.data_dir, storage_options)


def _verify_files(
    info: DatasetInfo, path: str, directory: str, storage_options: StorageOptions
) -> None:
    # One listing of the folder, not one request per shard.
    files = {entry for entry, is_dir in listdir(directory, storage_options=storage_options)}
    for index, (split, split_info) in enumerate(info.splits.items()):
        for shard_path in info.shard_paths(split):
            if shard_path not in files:
                raise DatasetInfoError(
                    f"{shard_path} is missing: {path} lists {split_info.num_shards} shards for "
                    f"split {split!r} (field splits[{index}].shardLengths); the dataset "
                    "directory is incomplete",
                    path=shard_path,
                    field=f"splits[{index}].shardLengths",
                )
