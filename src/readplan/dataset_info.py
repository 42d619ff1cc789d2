"""Dataset metadata: split shard layouts, shard file names, ``dataset_info.json``, the catalog.

``specs/splits.md`` is normative (§10 "Shard files", §11 "DatasetInfo and
dataset_info.json", §12 "Catalog").  The shard lengths recorded by the writer are the only
source of truth for reading: ``n`` is their sum and ``S`` their count.
"""

from __future__ import annotations

import functools
import json
import os
import re
import string
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from importlib import resources
from typing import Any

from readplan._checks import is_int
from readplan.errors import DatasetInfoError

__all__ = [
    "DEFAULT_FILEPATH_TEMPLATE",
    "DatasetInfo",
    "SplitInfo",
    "catalog_names",
    "shard_lengths",
]

DEFAULT_FILEPATH_TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"

_INFO_FILE = "dataset_info.json"
_MIN_SHARD_DIGITS = 5
_SPLIT_NAME = re.compile(r"[\w-]+")
_DATASET_NAME = re.compile(r"[A-Za-z]\w*")
_FILE_FORMAT = re.compile(r"\w+")
_DECIMAL = re.compile(r"-?[0-9]+")
_PLACEHOLDERS = ("DATASET", "SPLIT", "FILEFORMAT", "SHARD_INDEX", "NUM_SHARDS", "SHARD_X_OF_Y")
_SHARD_PLACEHOLDERS = frozenset({"SHARD_INDEX", "SHARD_X_OF_Y"})
# Split names are also the grammar's split names; "all" is the grammar's keyword for the
# union of every split, so a split of that name could never be selected on its own.
_RESERVED_SPLIT = "all"


def shard_lengths(num_examples: int, num_shards: int) -> list[int]:
    """Shard lengths TFDS's (non-Beam) writer produces for ``num_examples`` in ``num_shards``.

    Shard ``k`` ends at ``round(num_examples * (k + 1) / num_shards)`` (ties to even on the
    double quotient).  Use it for synthetic layouts only: existing data is described by its
    ``dataset_info.json``.  See ``specs/splits.md`` §10.1.
    """
    for name, value in (("num_examples", num_examples), ("num_shards", num_shards)):
        if not is_int(value) or value < 0:
            raise DatasetInfoError(f"{name} must be a non-negative int, got {value!r}", field=name)
    if num_shards == 0:
        raise DatasetInfoError(
            "num_shards must be at least 1, got 0: every split is written to one or more shards",
            field="num_shards",
        )
    if num_examples == 0:
        raise DatasetInfoError(
            "No examples were yielded.\nnum_examples is 0: TFDS's writer refuses to write an "
            "empty split, so no shard layout exists for it.",
            field="num_examples",
        )
    if num_examples < num_shards:
        raise DatasetInfoError(
            f"num_examples ({num_examples}) < number_of_shards ({num_shards})\n"
            "TFDS's writer refuses to write fewer examples than shards (a shard would be "
            "empty); use at most num_examples shards.",
            field="num_shards",
        )
    ends = [round(num_examples * k / num_shards) for k in range(1, num_shards + 1)]
    return [end - start for start, end in zip([0, *ends[:-1]], ends)]


def _template_fields(template: str) -> list[str]:
    """The placeholder names of ``template``, after checking it names a file in data_dir."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as err:
        raise DatasetInfoError(
            f"filepath template {template!r} is malformed ({err}); write placeholders as "
            f"{{NAME}} with NAME one of {', '.join(_PLACEHOLDERS)}",
            field="filepath_template",
        ) from None
    literal = "".join(text for text, _, _, _ in parsed)
    if "/" in literal or "\\" in literal or ".." in literal:
        raise DatasetInfoError(
            f"filepath template {template!r} would name a file outside the dataset directory "
            "(it contains '/', '\\' or '..'); shard files must sit directly in data_dir",
            field="filepath_template",
        )
    names = []
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in _PLACEHOLDERS or spec or conversion:
            raise DatasetInfoError(
                f"filepath template {template!r} cannot be formatted: placeholder {name!r} "
                f"(with conversion {conversion!r}, format {spec!r}) is not one of "
                f"{', '.join('{' + known + '}' for known in _PLACEHOLDERS)}, written bare",
                field="filepath_template",
            )
        names.append(name)
    return names


@dataclass(frozen=True)
class SplitInfo:
    """One split's shard layout, as recorded in ``dataset_info.json``.

    ``shard_lengths`` is the number of records in each shard file, in shard-index order
    (zeros allowed); ``filepath_template`` ``None`` means TFDS's default template.  See
    ``specs/splits.md``.
    """

    name: str
    shard_lengths: tuple[int, ...]
    _: KW_ONLY
    filepath_template: str | None = None
    num_bytes: int = 0
    _offsets: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _SPLIT_NAME.fullmatch(self.name):
            raise DatasetInfoError(
                f"split name {self.name!r} is not a valid split name: it must be one or more "
                "letters, digits, '_' or '-', as in 'train' or 'test-2'",
                field="name",
            )
        if self.name == _RESERVED_SPLIT:
            raise DatasetInfoError(
                "a split named 'all' cannot be read: 'all' in a split string means the union "
                "of every split (TFDS recurses forever on it); rename the split",
                field="name",
            )
        if not isinstance(self.shard_lengths, (tuple, list)):
            raise DatasetInfoError(
                f"shard_lengths of split {self.name!r} must be a tuple of ints, got "
                f"{self.shard_lengths!r}",
                field="shard_lengths",
            )
        lengths = tuple(self.shard_lengths)
        if not lengths:
            raise DatasetInfoError(
                f"split {self.name!r} has no shard lengths: the number of records in each "
                "shard is needed to read it (was the dataset generated by a TFDS version "
                "that records shardLengths?)",
                field="shard_lengths",
            )
        bad = next((v for v in lengths if not is_int(v) or v < 0), None)
        if bad is not None:
            raise DatasetInfoError(
                f"shard lengths of split {self.name!r} must be non-negative ints, got {bad!r}",
                field="shard_lengths",
            )
        object.__setattr__(self, "shard_lengths", lengths)
        self._check_template(len(lengths))
        if not is_int(self.num_bytes) or self.num_bytes < 0:
            raise DatasetInfoError(
                f"num_bytes of split {self.name!r} must be a non-negative int, got "
                f"{self.num_bytes!r}",
                field="num_bytes",
            )
        offsets = [0]
        for length in lengths:
            offsets.append(offsets[-1] + length)
        object.__setattr__(self, "_offsets", tuple(offsets))

    def _check_template(self, num_shards: int) -> None:
        if self.filepath_template == "":
            # TFDS treats an empty template as absent.
            object.__setattr__(self, "filepath_template", None)
        if self.filepath_template is None:
            return
        if not isinstance(self.filepath_template, str):
            raise DatasetInfoError(
                f"filepath_template of split {self.name!r} must be a str or None, got "
                f"{self.filepath_template!r}",
                field="filepath_template",
            )
        names = _template_fields(self.filepath_template)
        if num_shards > 1 and not _SHARD_PLACEHOLDERS.intersection(names):
            raise DatasetInfoError(
                f"filepath template {self.filepath_template!r} of split {self.name!r} has no "
                f"{{SHARD_INDEX}} or {{SHARD_X_OF_Y}}, so its {num_shards} shards would share "
                "one file name",
                field="filepath_template",
            )

    @property
    def num_examples(self) -> int:
        """Records in the split: the sum of its shard lengths."""
        return self._offsets[-1]

    @property
    def num_shards(self) -> int:
        """Shard files of the split, empty ones included."""
        return len(self.shard_lengths)

    @property
    def shard_offsets(self) -> tuple[int, ...]:
        """Global index of each shard's first record, followed by ``num_examples``."""
        return self._offsets

    def records_before(self, shard_bound: int) -> int:
        """Records in ``shard_lengths[:shard_bound]`` (Python slice semantics, so a negative
        bound counts from the end and out-of-range bounds clamp)."""
        index = shard_bound + self.num_shards if shard_bound < 0 else shard_bound
        return self._offsets[min(max(index, 0), self.num_shards)]


class _SplitTable(Mapping[str, SplitInfo]):
    """Read-only, ordered ``name -> SplitInfo``; equality is order-sensitive because the order
    defines ``all``."""

    __slots__ = ("_items",)

    def __init__(self, infos: Sequence[SplitInfo]) -> None:
        self._items = {info.name: info for info in infos}

    def __getitem__(self, key: str) -> SplitInfo:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _SplitTable):
            return list(self._items.values()) == list(other._items.values())
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self._items.values()))

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self._items.items()) + "}"


@dataclass(frozen=True, init=False)
class DatasetInfo:
    """What readplan needs to know about a TFDS dataset: its name and its splits' layouts.

    ``splits`` maps each split name to its :class:`SplitInfo`, in ``dataset_info.json``
    order (which defines ``all``); plain shard-length sequences are accepted and wrapped.
    ``data_dir`` is the folder holding the shard files; without it, file names are bare
    basenames.  See ``specs/splits.md``.
    """

    name: str
    splits: Mapping[str, SplitInfo]
    data_dir: str | None
    file_format: str
    version: str | None
    config_name: str | None
    disable_shuffling: bool

    def __init__(
        self,
        name: str,
        splits: Mapping[str, SplitInfo | Sequence[int]],
        *,
        data_dir: str | os.PathLike[str] | None = None,
        file_format: str = "tfrecord",
        version: str | None = None,
        config_name: str | None = None,
        disable_shuffling: bool = False,
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "splits", _split_table(splits))
        object.__setattr__(self, "data_dir", None if data_dir is None else os.fspath(data_dir))
        object.__setattr__(self, "file_format", file_format)
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "config_name", config_name)
        object.__setattr__(self, "disable_shuffling", disable_shuffling)
        self.__post_init__()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _DATASET_NAME.fullmatch(self.name):
            raise DatasetInfoError(
                f"dataset name {self.name!r} is not a TFDS dataset name: it must start with an "
                "ASCII letter followed by letters, digits or '_' (e.g. 'imagenet2012')",
                field="name",
            )
        if not isinstance(self.file_format, str) or not _FILE_FORMAT.fullmatch(self.file_format):
            raise DatasetInfoError(
                f"file_format {self.file_format!r} must be a file suffix such as 'tfrecord'",
                field="file_format",
            )
        for key in ("version", "config_name", "data_dir"):
            value = getattr(self, key)
            if value is not None and not isinstance(value, str):
                raise DatasetInfoError(f"{key} must be a str or None, got {value!r}", field=key)
        if not isinstance(self.disable_shuffling, bool):
            raise DatasetInfoError(
                f"disable_shuffling must be a bool, got {self.disable_shuffling!r}",
                field="disable_shuffling",
            )

    def split(self, split: str) -> SplitInfo:
        """The split called ``split``; an unknown name is a DatasetInfoError listing them all."""
        try:
            return self.splits[split]
        except KeyError:
            raise DatasetInfoError(
                f"dataset {self.name!r} has no split {split!r}; its splits are {list(self.splits)}",
                field="split",
            ) from None

    def shard_filename(self, split: str, shard_index: int) -> str:
        """Basename of shard ``shard_index`` of ``split``, from the split's template."""
        info = self.split(split)
        if not is_int(shard_index) or not 0 <= shard_index < info.num_shards:
            raise DatasetInfoError(
                f"shard_index {shard_index!r} is out of range: split {split!r} has shards "
                f"0..{info.num_shards - 1}",
                field="shard_index",
            )
        return self._format_shard(info, shard_index)

    def shard_path(self, split: str, shard_index: int) -> str:
        """``shard_filename`` joined to ``data_dir`` (the bare basename without data_dir)."""
        filename = self.shard_filename(split, shard_index)
        return filename if self.data_dir is None else os.path.join(self.data_dir, filename)

    def shard_paths(self, split: str) -> list[str]:
        """Every shard path of ``split``, in shard-index order."""
        return [self.shard_path(split, k) for k in range(self.split(split).num_shards)]

    def _format_shard(self, info: SplitInfo, shard_index: int) -> str:
        width = max(_MIN_SHARD_DIGITS, len(str(info.num_shards)))
        index_text = f"{shard_index:0{width}d}"
        count_text = f"{info.num_shards:0{width}d}"
        values = {
            "DATASET": self.name,
            "SPLIT": info.name,
            "FILEFORMAT": self.file_format,
            "SHARD_INDEX": index_text,
            "NUM_SHARDS": count_text,
            "SHARD_X_OF_Y": f"{index_text}-of-{count_text}",
        }
        template = info.filepath_template or DEFAULT_FILEPATH_TEMPLATE
        return template.format_map(values)

    @classmethod
    def load(
        cls, dataset_dir: str | os.PathLike[str], *, verify_files: bool = False
    ) -> DatasetInfo:
        """Read ``<dataset_dir>/dataset_info.json`` (the folder holding the shard files).

        With ``verify_files``, every shard file named by the splits must exist.
        """
        directory = os.fspath(dataset_dir)
        if os.path.basename(directory) == _INFO_FILE and os.path.isfile(directory):
            directory = os.path.dirname(directory)
        path = os.path.join(directory, _INFO_FILE)
        info = _info_from_json(_read_json(path, directory), path=path, data_dir=directory)
        if verify_files:
            _verify_files(info, path)
        return info

    @classmethod
    def from_catalog(cls, name: str) -> DatasetInfo:
        """The built-in layout of dataset ``name`` (see :func:`catalog_names`), no data_dir."""
        catalog = _catalog()
        if name not in catalog:
            raise DatasetInfoError(
                f"{name!r} is not in readplan's catalog; known names: {sorted(catalog)}. For any "
                "other dataset pass its directory (the folder holding dataset_info.json)",
                field="name",
            )
        return catalog[name]


def _split_table(splits: Mapping[str, SplitInfo | Sequence[int]]) -> _SplitTable:
    if not isinstance(splits, Mapping):
        raise DatasetInfoError(
            f"splits must be a mapping of split name to SplitInfo or shard lengths, got "
            f"{type(splits).__name__}",
            field="splits",
        )
    if not splits:
        raise DatasetInfoError(
            "a dataset needs at least one split (an empty split list means the dataset has "
            "not been generated yet)",
            field="splits",
        )
    infos = []
    for key, value in splits.items():
        info = value if isinstance(value, SplitInfo) else SplitInfo(key, _as_lengths(key, value))
        if info.name != key:
            raise DatasetInfoError(
                f"splits[{key!r}] holds the SplitInfo of split {info.name!r}; the key must be "
                "the split's name",
                field="splits",
            )
        infos.append(info)
    return _SplitTable(infos)


def _as_lengths(key: str, value: object) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise DatasetInfoError(
            f"splits[{key!r}] must be a SplitInfo or a sequence of shard lengths, got {value!r}",
            field="splits",
        )
    return tuple(value)


# ---------------------------------------------------------------------------------------------
# dataset_info.json


def _read_json(path: str, directory: str) -> Any:
    try:
        with open(path, encoding="utf-8") as stream:
            return json.load(stream)
    except FileNotFoundError:
        raise DatasetInfoError(
            f"{path} does not exist: pass the folder that holds dataset_info.json and the shard "
            f"files (<data_dir>/<dataset>/[<config>/]<version>){_nearby_hint(directory)}",
            path=path,
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise DatasetInfoError(f"cannot read {path}: {err}", path=path) from None
    except json.JSONDecodeError as err:
        raise DatasetInfoError(
            f"{path} is not valid JSON: {err.msg} at line {err.lineno} column {err.colno}",
            path=path,
        ) from None
    except (ValueError, RecursionError) as err:  # absurd numbers or nesting
        raise DatasetInfoError(f"{path} cannot be read as JSON: {err}", path=path) from None


def _nearby_hint(directory: str) -> str:
    """Name sub-folders (two levels down at most) that do hold a dataset_info.json."""
    found = []
    for depth_one in sorted(_subdirs(directory)):
        for candidate in [depth_one, *sorted(_subdirs(depth_one))]:
            if os.path.isfile(os.path.join(candidate, _INFO_FILE)):
                found.append(candidate)
    return f"; found one in: {', '.join(found[:5])}" if found else ""


def _subdirs(directory: str) -> list[str]:
    try:
        return [entry.path for entry in os.scandir(directory) if entry.is_dir()]
    except OSError:
        return []


class _Fields:
    """Access to one JSON object's proto3 fields, by camelCase or snake_case key."""

    def __init__(self, obj: Any, where: str, path: str) -> None:
        if not isinstance(obj, dict):
            raise DatasetInfoError(
                f"{path}: {where or 'the top level'} must be a JSON object, got "
                f"{type(obj).__name__}",
                path=path,
                field=where or None,
            )
        self.obj = obj
        self.where = where
        self.path = path

    def field_name(self, camel: str) -> str:
        return f"{self.where}.{camel}" if self.where else camel

    def error(self, camel: str, message: str) -> DatasetInfoError:
        return DatasetInfoError(
            f"{self.path}: field {self.field_name(camel)}: {message}",
            path=self.path,
            field=self.field_name(camel),
        )

    def get(self, camel: str) -> Any:
        snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel)
        present = [key for key in dict.fromkeys((camel, snake)) if key in self.obj]
        if len(present) > 1:
            raise self.error(camel, f"given twice, as {camel!r} and {snake!r}")
        return self.obj[present[0]] if present else None

    def string(self, camel: str) -> str | None:
        value = self.get(camel)
        if value is not None and not isinstance(value, str):
            raise self.error(camel, f"expected a string, got {value!r}")
        return value

    def required_string(self, camel: str) -> str:
        value = self.get(camel)
        if not isinstance(value, str) or not value:
            raise self.error(camel, f"expected a non-empty string, got {value!r}")
        return value

    def int64(self, camel: str, value: Any) -> int:
        """A proto3 JSON int64: a JSON number or a decimal string."""
        if isinstance(value, str) and _DECIMAL.fullmatch(value):
            return int(value)
        if is_int(value):
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise self.error(camel, f"expected an integer (number or decimal string), got {value!r}")


def _info_from_json(obj: Any, *, path: str, data_dir: str | None) -> DatasetInfo:
    top = _Fields(obj, "", path)
    name = top.required_string("name")
    raw_splits = top.get("splits")
    if not isinstance(raw_splits, list) or not raw_splits:
        raise top.error(
            "splits",
            "expected a non-empty list of splits (a dataset without splits has not been "
            "generated yet)",
        )
    splits: dict[str, SplitInfo] = {}
    for index, raw in enumerate(raw_splits):
        info = _split_from_json(_Fields(raw, f"splits[{index}]", path))
        if info.name in splits:
            raise DatasetInfoError(
                f"{path}: split {info.name!r} is listed twice (splits[{index}])",
                path=path,
                field=f"splits[{index}].name",
            )
        splits[info.name] = info
    disable_shuffling = top.get("disableShuffling")
    if disable_shuffling is not None and not isinstance(disable_shuffling, bool):
        raise top.error("disableShuffling", f"expected true or false, got {disable_shuffling!r}")
    file_format = top.string("fileFormat") or "tfrecord"
    try:
        return DatasetInfo(
            name,
            splits,
            data_dir=data_dir,
            file_format=file_format,
            version=top.string("version"),
            config_name=top.string("configName"),
            disable_shuffling=bool(disable_shuffling),
        )
    except DatasetInfoError as err:
        camel = _CAMEL.get(err.field or "", err.field or "")
        raise top.error(camel, str(err)) from None


_CAMEL = {
    "name": "name",
    "file_format": "fileFormat",
    "shard_lengths": "shardLengths",
    "filepath_template": "filepathTemplate",
    "num_bytes": "numBytes",
}


def _split_from_json(fields: _Fields) -> SplitInfo:
    name = fields.required_string("name")
    raw_lengths = fields.get("shardLengths")
    if not raw_lengths:
        raise fields.error(
            "shardLengths",
            f"split {name!r} has no shard lengths; readplan needs the number of records in "
            "each shard (datasets written before TFDS recorded shardLengths cannot be planned)",
        )
    if not isinstance(raw_lengths, list):
        raise fields.error("shardLengths", f"expected a list, got {raw_lengths!r}")
    lengths = tuple(fields.int64("shardLengths", value) for value in raw_lengths)
    raw_bytes = fields.get("numBytes")
    num_bytes = 0 if raw_bytes is None else fields.int64("numBytes", raw_bytes)
    try:
        return SplitInfo(
            name,
            lengths,
            filepath_template=fields.string("filepathTemplate"),
            num_bytes=num_bytes,
        )
    except DatasetInfoError as err:
        raise fields.error(_CAMEL.get(err.field or "", "name"), str(err)) from None


def _verify_files(info: DatasetInfo, path: str) -> None:
    for index, (split, split_info) in enumerate(info.splits.items()):
        for shard_path in info.shard_paths(split):
            if not os.path.isfile(shard_path):
                raise DatasetInfoError(
                    f"{shard_path} is missing: {path} lists {split_info.num_shards} shards for "
                    f"split {split!r} (field splits[{index}].shardLengths); the dataset "
                    "directory is incomplete",
                    path=shard_path,
                    field=f"splits[{index}].shardLengths",
                )


# ---------------------------------------------------------------------------------------------
# Catalog


def catalog_names() -> list[str]:
    """Names of the datasets whose shard layout readplan knows without their files."""
    return sorted(_catalog())


@functools.lru_cache(maxsize=1)
def _catalog() -> dict[str, DatasetInfo]:
    resource = resources.files("readplan") / "data" / "catalog.json"
    where = "readplan/data/catalog.json"
    raw = json.loads(resource.read_text(encoding="utf-8"))
    datasets = _Fields(raw, "", where).get("datasets")
    if not isinstance(datasets, dict):
        raise DatasetInfoError(f"{where}: 'datasets' must be an object", path=where)
    return {name: _catalog_entry(name, entry, where) for name, entry in datasets.items()}


def _catalog_entry(name: str, entry: Any, where: str) -> DatasetInfo:
    fields = _Fields(entry, f"datasets.{name}", where)
    raw_splits = fields.get("splits")
    if not isinstance(raw_splits, list) or not raw_splits:
        raise fields.error("splits", "expected a non-empty list")
    splits = {}
    for index, raw in enumerate(raw_splits):
        split_fields = _Fields(raw, f"datasets.{name}.splits[{index}]", where)
        split_name = split_fields.required_string("name")
        split_fields.required_string("source")
        splits[split_name] = SplitInfo(split_name, _catalog_lengths(split_fields))
    return DatasetInfo(
        name,
        splits,
        file_format=fields.string("fileFormat") or "tfrecord",
        version=fields.string("version"),
    )


def _catalog_lengths(fields: _Fields) -> tuple[int, ...]:
    lengths = fields.get("shardLengths")
    if lengths == "formula":
        return tuple(
            shard_lengths(
                fields.int64("numExamples", fields.get("numExamples")),
                fields.int64("numShards", fields.get("numShards")),
            )
        )
    if not isinstance(lengths, list):
        raise fields.error("shardLengths", 'expected a list of ints or "formula"')
    return tuple(fields.int64("shardLengths", value) for value in lengths)
