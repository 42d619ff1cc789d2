"""Dataset metadata: what a TFDS dataset is, as readplan needs it.

``specs/splits.md`` is normative (§10 "Shard files", §11 "DatasetInfo and
dataset_info.json", §12 "Catalog").  The shard lengths recorded by the writer are the only
source of truth for reading: ``n`` is their sum and ``S`` their count.  Shard naming lives
in :mod:`readplan.metadata.naming`, the JSON loader in :mod:`readplan.metadata.loader`,
the catalog in :mod:`readplan.metadata.catalog`.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from readplan._internal.frozen import init_fields
from readplan._internal.validate import is_int
from readplan.errors import DatasetInfoError
from readplan.metadata.catalog import catalog, catalog_names
from readplan.metadata.features import FeaturesDict, load_features
from readplan.metadata.loader import available_file_formats, choose_file_format, load_info
from readplan.metadata.naming import DEFAULT_FILEPATH_TEMPLATE, format_shard_name, shard_lengths
from readplan.metadata.split_info import SplitInfo, split_table
from readplan.storage import StorageOptions, join, to_str

__all__ = [
    "DEFAULT_FILEPATH_TEMPLATE",
    "DatasetInfo",
    "SplitInfo",
    "catalog_names",
    "shard_lengths",
]

_DATASET_NAME = re.compile(r"[A-Za-z]\w*")
_FILE_FORMAT = re.compile(r"\w+")


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
    alternative_file_formats: tuple[str, ...]
    # Outside equality and repr: features describe the records, not the layout plans use.
    _given_features: FeaturesDict | None = field(init=False, repr=False, compare=False)

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
        features: FeaturesDict | None = None,
        alternative_file_formats: Sequence[str] = (),
    ) -> None:
        formats = alternative_file_formats
        if isinstance(formats, Iterable) and not isinstance(formats, str):
            formats = tuple(formats)
        init_fields(
            self,
            name=name,
            splits=split_table(splits),
            data_dir=None if data_dir is None else os.fspath(data_dir),
            file_format=file_format,
            version=version,
            config_name=config_name,
            disable_shuffling=disable_shuffling,
            alternative_file_formats=formats,
            _given_features=features,
        )
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
        alternatives = self.alternative_file_formats
        if not isinstance(alternatives, tuple) or not all(
            isinstance(f, str) and _FILE_FORMAT.fullmatch(f) for f in alternatives
        ):
            raise DatasetInfoError(
                "alternative_file_formats must be a sequence of file suffixes such as "
                f"('array_record',), got {alternatives!r:.80}",
                field="alternative_file_formats",
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
        features = self._given_features
        if features is not None and not isinstance(features, FeaturesDict):
            raise DatasetInfoError(
                f"features must be a readplan FeaturesDict or None, got {features!r:.80}",
                field="features",
            )

    @functools.cached_property
    def features(self) -> FeaturesDict | None:
        """The dataset's features (``features.json`` in ``data_dir``), None without one.

        Given to the constructor, or read from ``data_dir`` on first use, so that planning
        never depends on it. See ``specs/features.md``.
        """
        return self._features_from(None)

    def resolve_features(self, storage_options: StorageOptions = None) -> FeaturesDict | None:
        """:attr:`features`, read with ``storage_options`` when ``data_dir`` is a URL
        (``specs/storage.md``); given options, each call reads ``features.json`` again."""
        if storage_options is None:
            return self.features
        return self._features_from(storage_options)

    def _features_from(self, storage_options: StorageOptions) -> FeaturesDict | None:
        if self._given_features is not None or self.data_dir is None:
            return self._given_features
        return load_features(self.data_dir, storage_options=storage_options)

    @property
    def available_file_formats(self) -> tuple[str, ...]:
        """The formats the dataset's shards are stored in: ``file_format`` first, then the
        ``alternativeFileFormats`` of ``dataset_info.json`` (``specs/splits.md`` §11)."""
        return available_file_formats(self.file_format, self.alternative_file_formats)

    def with_file_format(self, file_format: str) -> DatasetInfo:
        """This dataset read in ``file_format``, one of :attr:`available_file_formats`, as
        ``tfds.builder_from_directory(dir, file_format=...)`` does: only the shard files'
        suffix changes (``<name>-<split>.<file_format>-NNNNN-of-NNNNN``); the other formats
        stay available."""
        chosen, others = choose_file_format(file_format, self.available_file_formats, self.name)
        if chosen == self.file_format:
            return self
        return DatasetInfo(
            self.name,
            self.splits,
            data_dir=self.data_dir,
            file_format=chosen,
            version=self.version,
            config_name=self.config_name,
            disable_shuffling=self.disable_shuffling,
            features=self._given_features,
            alternative_file_formats=others,
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
        return filename if self.data_dir is None else join(self.data_dir, filename)

    def shard_paths(self, split: str) -> list[str]:
        """Every shard path of ``split``, in shard-index order."""
        return [self.shard_path(split, k) for k in range(self.split(split).num_shards)]

    def _format_shard(self, info: SplitInfo, shard_index: int) -> str:
        return format_shard_name(
            info.filepath_template,
            dataset=self.name,
            split=info.name,
            file_format=self.file_format,
            shard_index=shard_index,
            num_shards=info.num_shards,
        )

    @classmethod
    def load(
        cls,
        dataset_dir: str | os.PathLike[str],
        *,
        verify_files: bool = False,
        storage_options: StorageOptions = None,
        file_format: str | None = None,
    ) -> DatasetInfo:
        """Read ``<dataset_dir>/dataset_info.json`` (the folder holding the shard files).

        ``dataset_dir`` may be a URL (``gs://``, ``s3://``, any fsspec protocol; see
        ``specs/storage.md``), reached with fsspec's configuration and ``storage_options``.
        ``file_format`` picks one of the formats the dataset is stored in (see
        :meth:`with_file_format`); by default its ``fileFormat``.  With ``verify_files``,
        every shard file named by the splits must exist.
        """
        return load_info(
            to_str(dataset_dir),
            verify_files=verify_files,
            build=cls,
            storage_options=storage_options,
            file_format=file_format,
        )

    @classmethod
    def from_catalog(cls, name: str) -> DatasetInfo:
        """The built-in layout of dataset ``name`` (see :func:`catalog_names`), no data_dir."""
        if name not in catalog_names():
            raise DatasetInfoError(
                f"{name!r} is not in readplan's catalog; known names: {catalog_names()}. For "
                "any other dataset pass its directory (the folder holding dataset_info.json)",
                field="name",
            )
        return _catalog()[name]


@functools.lru_cache(maxsize=1)
def _catalog() -> dict[str, DatasetInfo]:
    return catalog(DatasetInfo)
