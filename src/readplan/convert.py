"""Rewriting a TFDS dataset directory into another record container (``specs/tbl.md`` §9).

``convert(src, dst, format="tbl")`` writes every shard of every split of ``src`` as a TBL
v2 file of the same records in the same order, under the name TFDS's template gives for
the new file format, and a ``dataset_info.json`` that is the source's with ``fileFormat``
changed (and no ``alternativeFileFormats``: the new directory holds one format); every
other file of the directory (``features.json``, label files) is copied.  A source stored in
several formats is read in the first one readplan reads.
``format="tfrecord"`` converts back: the TFRecord files are byte-identical to the ones
converted from.  Plans, readers and checkpoints treat both directories alike.
``raw=True, image_size=S`` writes TBL-RAW shards instead (``specs/tbl.md`` §10,
:mod:`readplan.convert_raw`): every image decoded once into an ``S x S`` RAW_U8 sample.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Literal

from readplan import storage
from readplan._internal.atomic import atomic_write
from readplan.convert_raw import RawImages, raw_images
from readplan.convert_tasks import counted, run_tasks
from readplan.errors import ConfigError, DatasetInfoError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.metadata.features import FEATURES_FILE
from readplan.metadata.loader import INFO_FILE, verify_files
from readplan.metadata.naming import format_shard_name
from readplan.metadata.raw_images import RAW_KEY, raw_marker
from readplan.reading.containers import CONTAINERS, container_for, readable
from readplan.records import tbl, tfrecord

__all__ = ["ConvertedShard", "convert"]

TargetFormat = Literal["tbl", "tfrecord"]
# Files beside a shard that belong to it and are not carried over (index sidecars).
_SIDECAR_SUFFIXES = (".index", ".idx")


@dataclass(frozen=True)
class ConvertedShard:
    """One shard written by :func:`convert`."""

    split: str
    shard_index: int
    source: str
    target: str
    records: int


def convert(
    src_dir: str | os.PathLike[str],
    dst_dir: str | os.PathLike[str],
    *,
    format: TargetFormat = "tbl",
    compression: bool = False,
    raw: bool = False,
    image_size: int | None = None,
    workers: int = 1,
    progress: Callable[[ConvertedShard], None] | None = None,
    records_progress: Callable[[int], None] | None = None,
) -> list[ConvertedShard]:
    """Rewrite the dataset in ``src_dir`` into ``dst_dir`` (created; it must not hold a
    ``dataset_info.json`` yet) with shards in ``format``.  Either may be a URL: a store
    target is written locally first and uploaded, its ``dataset_info.json`` last.

    ``compression`` applies LZ4 per sample to TBL output (TFRecord output is written
    uncompressed, as TFDS writes it).  Every shard must hold exactly the records its
    ``shardLengths`` says, or a :class:`DatasetInfoError` names it.  ``raw=True`` (TBL
    only, uncompressed) decodes the dataset's one ``Image`` feature and stores it resized to
    ``image_size x image_size`` as RAW_U8 samples (``specs/tbl.md`` §10).  ``workers``
    processes convert shards in parallel (one shard per task); the files are the same.
    Returns the shards written, in split and shard order.

    Progress is reported in the calling process: ``progress(shard)`` once per shard when
    it is written, in split and shard order; ``records_progress(added)`` with the number
    of records converted since its previous call, as they are converted (each shard's
    count at most every 0.1 s, from worker processes too), the calls adding up to the
    records converted.
    """
    source = storage.to_str(src_dir)
    target = storage.to_str(dst_dir)
    _check_options(format, compression)
    info = _readable_source(source)
    images = _raw_option(info, source, format, compression, raw, image_size)
    output = _Output(format, compression, images, workers)
    if storage.is_remote(target):
        return _convert_to_store(info, source, target, output, progress, records_progress)
    _prepare_target(source, target)
    return _convert_into(info, source, target, output, progress, records_progress)


@dataclass(frozen=True)
class _Output:
    """What the shards are converted into, and by how many processes."""

    file_format: str
    compression: bool
    images: RawImages | None
    workers: int

    def __post_init__(self) -> None:
        workers = self.workers
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ConfigError(
                f"workers must be a positive int (processes converting shards), got "
                f"{workers!r:.40}",
                field="workers",
                value=workers,
            )


def _convert_to_store(
    info: DatasetInfo,
    source: str,
    target: str,
    output: _Output,
    progress: Callable[[ConvertedShard], None] | None,
    records_progress: Callable[[int], None] | None,
) -> list[ConvertedShard]:
    """Convert into a local staging folder, then upload its files, dataset_info.json last
    (the dataset exists in the store once its info does)."""
    if source.rstrip("/") == target.rstrip("/"):
        raise ConfigError(
            f"the target {target} is the source; convert into a new one",
            field="dst_dir",
            value=target,
        )
    if storage.exists(storage.join(target, INFO_FILE)):
        raise ConfigError(
            f"{target} already holds a dataset ({INFO_FILE}); convert into an empty directory",
            field="dst_dir",
            value=target,
        )
    with tempfile.TemporaryDirectory(prefix="readplan-convert-") as staging:
        staged = _convert_into(info, source, staging, output, None, records_progress)
        names = sorted(name for name in os.listdir(staging) if name != INFO_FILE)
        for name in [*names, INFO_FILE]:
            with open(os.path.join(staging, name), "rb") as handle:
                storage.write_bytes(storage.join(target, name), handle.read())
    shards = []
    for shard in staged:
        moved = replace(shard, target=storage.join(target, os.path.basename(shard.target)))
        shards.append(moved)
        if progress is not None:
            progress(moved)
    return shards


def _convert_into(
    info: DatasetInfo,
    source: str,
    target: str,
    output: _Output,
    progress: Callable[[ConvertedShard], None] | None,
    records_progress: Callable[[int], None] | None,
) -> list[ConvertedShard]:
    tasks = [
        _Task(
            info.file_format,
            ConvertedShard(
                split,
                k,
                info.shard_path(split, k),
                os.path.join(target, _renamed(info, output.file_format, split, k)),
                planned,
            ),
            output,
        )
        for split, split_info in info.splits.items()
        for k, planned in enumerate(split_info.shard_lengths)
    ]
    shards = run_tasks(
        _convert_shard, tasks, output.workers, _records_of, progress, records_progress
    )
    _copy_other_files(info, source, target, output.images)
    _write_info(source, target, output.file_format, output.images)
    return shards


@dataclass(frozen=True)
class _Task:
    """One shard to convert: ``shard.records`` is the count its ``shardLengths`` gives."""

    source_format: str
    shard: ConvertedShard
    output: _Output


def _records_of(shard: ConvertedShard) -> int:
    return shard.records


def _convert_shard(task: _Task) -> ConvertedShard:
    shard, output = task.shard, task.output
    records = counted(container_for(task.source_format).stream(shard.source))
    if output.images is None:
        written = _write(output.file_format, shard.target, records, output.compression)
    else:
        written = _write_raw(shard.target, records, output.images)
    if written != shard.records:
        raise DatasetInfoError(
            f"{shard.source} holds {written} records, but {INFO_FILE} gives it "
            f"{shard.records} (shardLengths): the source dataset is inconsistent; the "
            "conversion stopped and wrote no dataset_info.json",
            path=shard.source,
            field="shardLengths",
        )
    return shard


def _check_options(file_format: object, compression: bool) -> None:
    if file_format not in CONTAINERS:
        raise ConfigError(
            f"format={file_format!r} is not a container readplan writes; use one of "
            f"{sorted(CONTAINERS)}",
            field="format",
            value=file_format,
        )
    if file_format == "tfrecord" and compression:
        raise ConfigError(
            "compression applies to TBL output only (TFDS writes TFRecord shards uncompressed)",
            field="compression",
            value=compression,
        )


def _raw_option(
    info: DatasetInfo,
    source: str,
    file_format: str,
    compression: bool,
    raw: bool,
    image_size: object,
) -> RawImages | None:
    """The image conversion ``raw=True`` asks for, or None; ``image_size`` goes with it."""
    if not isinstance(raw, bool):
        raise ConfigError(f"raw must be a bool, got {raw!r:.40}", field="raw", value=raw)
    if not raw:
        if image_size is not None:
            raise ConfigError(
                "image_size applies to raw=True (images decoded into RAW_U8 samples)",
                field="image_size",
                value=image_size,
            )
        return None
    if file_format != tbl.FILE_FORMAT or compression:
        raise ConfigError(
            "raw=True writes uncompressed TBL shards (RAW_U8 samples memory-mapped as they "
            f"are stored); got format={file_format!r}, compression={compression}",
            field="raw",
            value=True,
        )
    if raw_marker(source) is not None:
        raise ConfigError(
            f"{source} is already a raw conversion ({RAW_KEY} in {INFO_FILE}); convert its source",
            field="src_dir",
            value=source,
        )
    return raw_images(info.resolve_features(), image_size)


def _readable_source(source: str) -> DatasetInfo:
    """The source dataset in the first format readplan reads (refused when there is none);
    every shard file of that format must exist."""
    info = readable(DatasetInfo.load(source))
    container_for(
        info.file_format,
        path=storage.join(source, INFO_FILE),
        available=info.available_file_formats,
    )
    verify_files(info)
    return info


def _prepare_target(source: str, target: str) -> None:
    """Create ``target``, refusing the source itself or a folder that holds a dataset."""
    if not storage.is_remote(source) and os.path.abspath(source) == os.path.abspath(target):
        raise ConfigError(
            f"the target directory {target} is the source directory; convert into a new one",
            field="dst_dir",
            value=target,
        )
    os.makedirs(target, exist_ok=True)
    if os.path.exists(os.path.join(target, INFO_FILE)):
        raise ConfigError(
            f"{target} already holds a dataset ({INFO_FILE}); convert into an empty directory",
            field="dst_dir",
            value=target,
        )


def _renamed(info: DatasetInfo, file_format: str, split: str, shard_index: int) -> str:
    split_info = info.split(split)
    return format_shard_name(
        split_info.filepath_template,
        dataset=info.name,
        split=split,
        file_format=file_format,
        shard_index=shard_index,
        num_shards=split_info.num_shards,
    )


def _write(file_format: str, path: str, records: Iterable[bytes], compression: bool) -> int:
    if file_format == tbl.FILE_FORMAT:
        with tbl.TblWriter(path, compression=compression) as writer:
            for record in records:
                writer.add(record)
            return len(writer)
    return tfrecord.write(path, records)


def _write_raw(path: str, records: Iterable[bytes], images: RawImages) -> int:
    size = images.size
    with tbl.TblWriter(path) as writer:
        for pixels, metadata in images.samples(records):
            writer.add(
                pixels,
                format="raw_u8",
                width=size,
                height=size,
                metadata=metadata,
                metadata_type="protobuf",
            )
        return len(writer)


def _copy_other_files(
    info: DatasetInfo, source: str, target: str, images: RawImages | None
) -> None:
    """Copy every regular file of ``source`` that is not a shard (of any of its formats), a
    sidecar or the info; a raw conversion rewrites ``features.json``."""
    shard_names = {
        storage.basename(path)
        for file_format in info.available_file_formats
        for split in info.splits
        for path in info.with_file_format(file_format).shard_paths(split)
    }
    for path, is_dir in storage.listdir(source):
        name = storage.basename(path)
        stem = name
        for suffix in _SIDECAR_SUFFIXES:
            stem = stem.removesuffix(suffix)
        if name == INFO_FILE or stem in shard_names or is_dir:
            continue
        data = storage.read_bytes(path)
        if images is not None and name == FEATURES_FILE:
            data = images.features_json(data)
        with open(os.path.join(target, name), "wb") as out:
            out.write(data)


def _write_info(source: str, target: str, file_format: str, images: RawImages | None) -> None:
    """The source's dataset_info.json, every field kept but the formats: ``fileFormat``
    replaced, ``alternativeFileFormats`` dropped; a raw conversion's marker added."""
    fields = json.loads(storage.read_bytes(storage.join(source, INFO_FILE)))
    fields["fileFormat"] = file_format
    if images is not None:
        fields[RAW_KEY] = images.marker.to_json()
    fields.pop("alternativeFileFormats", None)
    fields.pop("alternative_file_formats", None)
    text = json.dumps(fields, indent=2, ensure_ascii=False)
    atomic_write(os.path.join(target, INFO_FILE), text.encode("utf-8"))
