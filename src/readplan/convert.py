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
Each shard is one unit of work, run in this process, in ``workers`` processes, or as an
Apache Beam pipeline (``runner="beam"``, :mod:`readplan.convert_beam`); a unit publishes
its file without replacing any (:mod:`readplan.convert_publish`), so a unit run twice or a
rerun after an interruption writes the same files, and ``dataset_info.json`` comes last.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from readplan import convert_beam, storage
from readplan.convert_beam import BeamOptions
from readplan.convert_publish import publish, publish_bytes, remove_leftovers
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
Runner = Literal["local", "beam"]
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
    runner: Runner = "local",
    beam_options: BeamOptions = None,
    progress: Callable[[ConvertedShard], None] | None = None,
    records_progress: Callable[[int], None] | None = None,
) -> list[ConvertedShard]:
    """Rewrite the dataset in ``src_dir`` into ``dst_dir`` (created; it must not hold a
    ``dataset_info.json`` yet) with shards in ``format``.  Either may be a URL.  Files
    already in ``dst_dir`` are kept when they are the ones this conversion writes (a rerun
    after an interruption) and refused otherwise; ``dataset_info.json`` is written last.

    ``compression`` applies LZ4 per sample to TBL output (TFRecord output is written
    uncompressed, as TFDS writes it).  Every shard must hold exactly the records its
    ``shardLengths`` says, or a :class:`DatasetInfoError` names it.  ``raw=True`` (TBL
    only, uncompressed) decodes the dataset's one ``Image`` feature and stores it resized to
    ``image_size x image_size`` as RAW_U8 samples (``specs/tbl.md`` §10).  ``workers``
    processes convert shards in parallel (one shard per task); the files are the same.
    ``runner="beam"`` runs one unit per shard as an Apache Beam pipeline with
    ``beam_options`` (a string of flags, a sequence of flags or ``PipelineOptions``; the
    ``readplan[beam]`` extra), and verifies every shard before the ``dataset_info.json``.
    Returns the shards written, in split and shard order.

    Progress is reported in the calling process: ``progress(shard)`` once per shard when
    it is written, in split and shard order; ``records_progress(added)`` with the number
    of records converted since its previous call, as they are converted (each shard's
    count at most every 0.1 s, from worker processes too; on Beam once per shard, when it
    is verified), the calls adding up to the records converted.
    """
    source = storage.to_str(src_dir)
    target = storage.to_str(dst_dir)
    _check_options(format, compression)
    run = _runner(runner, workers, beam_options, target, _Progress(progress, records_progress))
    info = _readable_source(source)
    images = _raw_option(info, source, format, compression, raw, image_size)
    output = _Output(format, compression, images, workers)
    _prepare_target(source, target)
    shards = run(_tasks(info, target, output))
    _finish(info, source, target, output.file_format, images)
    return shards


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


def _tasks(info: DatasetInfo, target: str, output: _Output) -> list[_Task]:
    return [
        _Task(
            info.file_format,
            ConvertedShard(
                split,
                k,
                info.shard_path(split, k),
                storage.join(target, _renamed(info, output.file_format, split, k)),
                planned,
            ),
            output,
        )
        for split, split_info in info.splits.items()
        for k, planned in enumerate(split_info.shard_lengths)
    ]


@dataclass(frozen=True)
class _Progress:
    """The caller's progress callbacks, per shard and per record."""

    shards: Callable[[ConvertedShard], None] | None
    records: Callable[[int], None] | None


_Run = Callable[[list["_Task"]], list[ConvertedShard]]


def _runner(
    runner: object, workers: int, beam_options: BeamOptions, target: str, progress: _Progress
) -> _Run:
    """How the units run: here or in ``workers`` processes, or as a Beam pipeline."""
    if runner == "local":
        if beam_options is not None:
            raise ConfigError(
                "beam_options applies to runner='beam'", field="beam_options", value=beam_options
            )
        return functools.partial(_run_local, workers, progress)
    if runner != "beam":
        raise ConfigError(
            f"runner={runner!r:.40} is not a runner; use 'local' (this process, or "
            "workers=N processes) or 'beam' (an Apache Beam pipeline)",
            field="runner",
            value=runner,
        )
    if workers != 1:
        raise ConfigError(
            "workers applies to runner='local'; a Beam pipeline's parallelism is its runner's "
            "(e.g. beam_options='--direct_num_workers=2 --direct_running_mode=multi_processing')",
            field="workers",
            value=workers,
        )
    options = convert_beam.pipeline_options(beam_options)
    return functools.partial(_run_beam, options, target, progress)


def _run_local(workers: int, progress: _Progress, tasks: list[_Task]) -> list[ConvertedShard]:
    return run_tasks(_convert_unit, tasks, workers, _records_of, progress.shards, progress.records)


def _run_beam(
    options: object, target: str, progress: _Progress, tasks: list[_Task]
) -> list[ConvertedShard]:
    """The pipeline returns nothing: each shard is checked where it was published."""
    convert_beam.run_units(tasks, _convert_unit, options, target)
    for task in tasks:
        _verify(task)
        if progress.records is not None:
            progress.records(task.shard.records)
        if progress.shards is not None:
            progress.shards(task.shard)
    return [task.shard for task in tasks]


@dataclass(frozen=True)
class _Task:
    """One shard to convert: ``shard.records`` is the count its ``shardLengths`` gives."""

    source_format: str
    shard: ConvertedShard
    output: _Output

    @property
    def label(self) -> str:
        return f"{self.shard.split}[{self.shard.shard_index}]"

    @property
    def source(self) -> str:
        return self.shard.source


def _records_of(shard: ConvertedShard) -> int:
    return shard.records


def _convert_unit(task: _Task) -> ConvertedShard:
    """One unit of work: the shard converted and published under its name."""
    publish(functools.partial(_convert_shard, task), task.shard.target)
    return task.shard


def _convert_shard(task: _Task, path: str) -> None:
    shard, output = task.shard, task.output
    records = counted(container_for(task.source_format).stream(shard.source))
    if output.images is None:
        written = _write(output.file_format, path, records, output.compression)
    else:
        written = _write_raw(path, records, output.images)
    if written != shard.records:
        raise DatasetInfoError(
            f"{shard.source} holds {written} records, but {INFO_FILE} gives it "
            f"{shard.records} (shardLengths): the source dataset is inconsistent; the "
            "conversion stopped and wrote no dataset_info.json",
            path=shard.source,
            field="shardLengths",
        )


def _verify(task: _Task) -> None:
    """A published shard holds the records its ``shardLengths`` gives (a runner that
    reported success for a unit it never ran, or lost its file, is caught here)."""
    path, planned = task.shard.target, task.shard.records
    if task.output.file_format == tbl.FILE_FORMAT:
        with tbl.TblFile(path) as samples:
            found = len(samples)
    else:
        found = tfrecord.count(path, use_index=False)
    if found != planned:
        raise DatasetInfoError(
            f"{path} holds {found} records after the conversion, not the {planned} of its "
            "shardLengths; no dataset_info.json was written",
            path=path,
            field="shardLengths",
        )


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
    """Create ``target`` (a local one), refusing the source itself or a folder that holds a
    dataset."""
    remote = storage.is_remote(target)
    same = (
        source.rstrip("/") == target.rstrip("/")
        if remote or storage.is_remote(source)
        else os.path.abspath(source) == os.path.abspath(target)
    )
    if same:
        raise ConfigError(
            f"the target directory {target} is the source directory; convert into a new one",
            field="dst_dir",
            value=target,
        )
    if not remote:
        os.makedirs(target, exist_ok=True)
    if storage.exists(storage.join(target, INFO_FILE)):
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


def _finish(
    info: DatasetInfo, source: str, target: str, file_format: str, images: RawImages | None
) -> None:
    """Every shard is in place: the other files, then ``dataset_info.json`` (the dataset
    exists once it does), then the temporaries that killed units left behind."""
    for name, data in _other_files(info, source, images):
        publish_bytes(data, storage.join(target, name))
    publish_bytes(_info_bytes(source, file_format, images), storage.join(target, INFO_FILE))
    if not storage.is_remote(target):
        remove_leftovers(target)


def _other_files(
    info: DatasetInfo, source: str, images: RawImages | None
) -> Iterator[tuple[str, bytes]]:
    """Every regular file of ``source`` that is not a shard (of any of its formats), a
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
        yield name, data


def _info_bytes(source: str, file_format: str, images: RawImages | None) -> bytes:
    """The source's dataset_info.json, every field kept but the formats: ``fileFormat``
    replaced, ``alternativeFileFormats`` dropped; a raw conversion's marker added."""
    fields = json.loads(storage.read_bytes(storage.join(source, INFO_FILE)))
    fields["fileFormat"] = file_format
    if images is not None:
        fields[RAW_KEY] = images.marker.to_json()
    fields.pop("alternativeFileFormats", None)
    fields.pop("alternative_file_formats", None)
    text = json.dumps(fields, indent=2, ensure_ascii=False)
    return text.encode("utf-8")
