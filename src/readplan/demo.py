"""The guided demo behind ``readplan demo``: plan, read, preempt, resume, prove.

It writes a small dataset in TFDS's on-disk layout, reads it in a seeded shuffled order,
stops part-way as a preempted job would, saves the checkpoint, continues in a new reader
from the saved file, and checks that the stitched run equals an uninterrupted one.
:func:`write_dataset` is reusable on its own (the tour notebook reads its dataset).
Reader semantics are specified in ``specs/reader.md``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from readplan._internal.progress import Progress
from readplan._internal.validate import is_int
from readplan.errors import ConfigError
from readplan.metadata.dataset_info import DEFAULT_FILEPATH_TEMPLATE, DatasetInfo
from readplan.metadata.loader import INFO_FILE
from readplan.plan import ReadPlan
from readplan.planning.config import ReadConfig
from readplan.reading.items import Item
from readplan.reading.reader import Reader
from readplan.records import example, index, tfrecord
from readplan.state.checkpoint import Checkpoint

__all__ = [
    "DATASET_NAME",
    "DEFAULT_SPLITS",
    "DemoConfig",
    "DemoReport",
    "format_report",
    "main",
    "run",
    "write_dataset",
]

DATASET_NAME = "readplan_demo"
DATASET_VERSION = "1.0.0"
DEFAULT_SPLITS: dict[str, tuple[int, ...]] = {
    "train": (41, 7, 63, 25, 50, 12, 38, 19),
    "test": (20, 13, 9),
}
CHECKPOINT_NAME = "checkpoint.json"


def write_dataset(
    directory: str | os.PathLike[str],
    *,
    splits: dict[str, Sequence[int]] | None = None,
    with_index: bool = True,
    progress: TextIO | None = None,
) -> DatasetInfo:
    """Write the demo dataset into ``directory`` (created; must be empty) and load it.

    Shards hold ``tf.train.Example`` records with an int64 ``id`` (the record's index in
    its split) and a ``text`` bytes feature; ``dataset_info.json`` and ``features.json``
    (a ``Scalar(int64)`` and a ``Text``) are written as TFDS writes them (shard lengths as
    strings), so ``decode="tfds"`` reads it.  ``with_index`` adds index sidecars.
    """
    target = os.fspath(directory)
    os.makedirs(target, exist_ok=True)
    if os.listdir(target):
        raise ConfigError(
            f"{target} is not empty; the demo writes a dataset into an empty or new directory "
            "so that it never overwrites files",
            field="directory",
            value=target,
        )
    layout = {name: tuple(lengths) for name, lengths in (splits or DEFAULT_SPLITS).items()}
    info = DatasetInfo(DATASET_NAME, layout, data_dir=target, version=DATASET_VERSION)
    total = sum(sum(lengths) for lengths in layout.values())
    split_bytes: dict[str, int] = {}
    with Progress("writing shards", total=total, unit=" records", stream=progress) as bar:
        for name, lengths in layout.items():
            split_bytes[name] = _write_split(info, name, lengths, bar)
    if with_index:
        for name in layout:
            for path in info.shard_paths(name):
                index.build_index(path)
    _write_info(target, layout, split_bytes)
    _write_features(target)
    return DatasetInfo.load(target)


def _write_split(info: DatasetInfo, split: str, lengths: Sequence[int], bar: Progress) -> int:
    written = 0
    first_id = 0
    for shard, length in enumerate(lengths):
        records = [_record(first_id + k, split, shard) for k in range(length)]
        tfrecord.write(info.shard_path(split, shard), records)
        written += sum(len(r) for r in records)
        first_id += length
        bar.advance(length)
    return written


def _record(record_id: int, split: str, shard: int) -> bytes:
    text = f"{split} record {record_id} (shard {shard})".encode()
    return example.encode({"id": [record_id], "text": [text]})


def _write_info(directory: str, layout: dict[str, tuple[int, ...]], sizes: dict[str, int]) -> None:
    document = {
        "fileFormat": "tfrecord",
        "moduleName": "readplan.demo",
        "name": DATASET_NAME,
        "splits": [
            {
                "filepathTemplate": DEFAULT_FILEPATH_TEMPLATE,
                "name": name,
                "numBytes": str(sizes[name]),
                "shardLengths": [str(length) for length in lengths],
            }
            for name, lengths in layout.items()
        ],
        "version": DATASET_VERSION,
    }
    with open(os.path.join(directory, INFO_FILE), "w", encoding="utf-8") as out:
        json.dump(document, out, indent=2, sort_keys=True)


def _write_features(directory: str) -> None:
    package = "tensorflow_datasets.core.features."
    scalar = {"dtype": "int64", "encoding": "none", "shape": {}}
    features = {
        "id": {"pythonClassName": package + "scalar.Scalar", "tensor": scalar},
        "text": {"pythonClassName": package + "text_feature.Text", "text": {}},
    }
    document = {
        "featuresDict": {"features": features},
        "pythonClassName": package + "features_dict.FeaturesDict",
    }
    with open(os.path.join(directory, "features.json"), "w", encoding="utf-8") as out:
        json.dump(document, out, indent=4, sort_keys=True)


@dataclass(frozen=True)
class DemoConfig:
    """What the demo plans: split, interleave, file shuffle seed, epochs, preemption point.

    ``stop_at`` counts records delivered across epochs before the simulated preemption;
    ``None`` stops three fifths of the way through the run.
    """

    split: str = "train"
    cycle_length: int = 4
    block_length: int = 8
    seed: int = 32
    epochs: int = 2
    stop_at: int | None = None

    def __post_init__(self) -> None:
        for name in ("cycle_length", "block_length", "epochs"):
            value = getattr(self, name)
            if not is_int(value) or value < 1:
                raise ConfigError(
                    f"demo {name} must be a positive integer, got {value!r}",
                    field=name,
                    value=value,
                )
        if self.stop_at is not None and (not is_int(self.stop_at) or self.stop_at < 0):
            raise ConfigError(
                f"demo stop_at must be a non-negative integer (records delivered before the "
                f"preemption), got {self.stop_at!r}",
                field="stop_at",
                value=self.stop_at,
            )


@dataclass(frozen=True)
class DemoReport:
    """What the demo did and found; :func:`format_report` renders it."""

    directory: str
    plan: ReadPlan
    config: DemoConfig
    stop_at: int
    checkpoint_path: str
    checkpoint: Checkpoint
    checkpoint_bytes: int
    uninterrupted: tuple[int, ...] = field(repr=False)
    before: tuple[int, ...] = field(repr=False)
    after: tuple[int, ...] = field(repr=False)
    first_resumed: Item | None

    def __post_init__(self) -> None:
        if len(self.before) != self.stop_at:
            raise ConfigError(
                f"the report says the run stopped after {self.stop_at} records but holds "
                f"{len(self.before)} ids from before the stop",
                field="before",
                value=len(self.before),
            )

    @property
    def ok(self) -> bool:
        """Whether the stitched run equals the uninterrupted one."""
        return self.before + self.after == self.uninterrupted


def run(
    directory: str | os.PathLike[str],
    config: DemoConfig | None = None,
    *,
    progress: TextIO | None = None,
) -> DemoReport:
    """Write the dataset into ``directory``, then read, preempt, save, resume and compare."""
    chosen = config if config is not None else DemoConfig()
    target = os.fspath(directory)
    info = write_dataset(target, progress=progress)
    plan = ReadPlan(
        info,
        chosen.split,
        ReadConfig(
            interleave_cycle_length=chosen.cycle_length,
            interleave_block_length=chosen.block_length,
            shuffle_files=True,
            shuffle_seed=chosen.seed,
        ),
    )
    total = plan.num_examples * chosen.epochs
    stop_at = total * 3 // 5 if chosen.stop_at is None else chosen.stop_at
    if stop_at > total:
        raise ConfigError(
            f"stop_at={stop_at} is beyond the run: {chosen.epochs} epochs of "
            f"{plan.num_examples} records deliver {total}",
            field="stop_at",
            value=stop_at,
        )
    uninterrupted = _ids(
        Reader(plan, epochs=chosen.epochs, decode=True), total, "reading", progress
    )

    first = Reader(plan, epochs=chosen.epochs, decode=True)
    before = _ids(_take(first, stop_at), stop_at, "reading until preempted", progress)
    checkpoint_path = os.path.join(target, CHECKPOINT_NAME)
    Checkpoint.from_dict(first.state_dict()).save(checkpoint_path)
    first.close()

    saved = Checkpoint.load(checkpoint_path)
    resumed = Reader(plan, epochs=chosen.epochs, decode=True, start=saved)
    rest = iter(resumed)
    head = next(rest, None)
    after = _ids(rest, total - stop_at - 1, "resuming", progress)
    return DemoReport(
        directory=target,
        plan=plan,
        config=chosen,
        stop_at=stop_at,
        checkpoint_path=checkpoint_path,
        checkpoint=saved,
        checkpoint_bytes=os.path.getsize(checkpoint_path),
        uninterrupted=uninterrupted,
        before=before,
        after=(() if head is None else (_id(head),)) + after,
        first_resumed=head,
    )


def _take(reader: Reader, count: int) -> Iterator[Item]:
    if count == 0:
        return
    for delivered, item in enumerate(reader, start=1):
        yield item
        if delivered == count:
            return


def _ids(items: Iterable[Item], total: int, label: str, progress: TextIO | None) -> tuple[int, ...]:
    out = []
    with Progress(label, total=total, unit=" records", stream=progress) as bar:
        for item in items:
            out.append(_id(item))
            bar.advance()
    return tuple(out)


def _id(item: Item) -> int:
    record = item.record
    assert isinstance(record, dict)  # the demo's readers decode
    return int(record["id"][0])


def format_report(report: DemoReport) -> str:
    """A short, readable account of the demo: plan, preemption, checkpoint, resume, check."""
    plan, config, checkpoint = report.plan, report.config, report.checkpoint
    shards = [fi.shard_index for fi in plan.instructions]
    orders = "; ".join(
        f"epoch {e}: " + " ".join(str(shards[f]) for f in plan.file_order(e).tolist())
        for e in range(config.epochs)
    )
    lines = [
        "readplan demo: read, preempt, resume, and check",
        "",
        f"dataset    {plan.info.name} {plan.info.version} in {report.directory}",
        f"           {len(plan.instructions)} shard files for {config.split!r} with "
        f"{', '.join(str(fi.num_records) for fi in plan.instructions)} records "
        "(TFDS layout, index sidecars)",
        f"plan       split {config.split!r}: {plan.num_examples} records per epoch, "
        f"{config.epochs} epochs; interleave cycle_length={plan.cycle_length}, "
        f"block_length={plan.block_length}; shuffle_files with seed {config.seed}",
        f"           shard order per epoch: {orders}",
        f"run        uninterrupted: {len(report.uninterrupted)} records, ids "
        f"{_preview(report.uninterrupted)}",
        f"preempted  after {report.stop_at} records: epoch {checkpoint.epoch}, position "
        f"{checkpoint.position} of {checkpoint.num_examples}",
        f"saved      {report.checkpoint_path} ({report.checkpoint_bytes} bytes, written "
        "atomically)",
        f"           {_slots(report)}",
        f"resumed    a new reader from that file: {_resumed(report)}",
    ]
    verdict = "OK" if report.ok else "FAILED"
    detail = (
        f"{len(report.before)} + {len(report.after)} records, identical ids in identical order"
        if report.ok
        else _first_difference(report)
    )
    lines.append(f"check      stitched run == uninterrupted run: {verdict} ({detail})")
    return "\n".join(lines)


def _preview(ids: Sequence[int], size: int = 8) -> str:
    head = " ".join(str(i) for i in ids[:size])
    return f"{head} ..." if len(ids) > size else head


def _slots(report: DemoReport) -> str:
    plan = report.plan
    checkpoint = report.checkpoint.expanded(plan)
    slots = []
    for k, slot in enumerate(checkpoint.slots):
        marker = "*" if k == checkpoint.cursor else ""
        if slot is None:
            slots.append(f"{marker}empty")
        else:
            slots.append(f"{marker}shard {plan.instructions[slot[0]].shard_index}@{slot[1]}")
    return (
        f"interleave slots [{', '.join(slots)}] (* = cursor, block counter "
        f"{checkpoint.block_counter}); {checkpoint.next_input} of {len(checkpoint.files)} "
        "files opened"
    )


def _resumed(report: DemoReport) -> str:
    item = report.first_resumed
    if item is None:
        return "nothing left to read"
    return (
        f"first record id {_id(item)} (epoch {item.epoch}, position {item.position}, "
        f"{item.tfds_id}), found by seeking; {len(report.after)} records delivered"
    )


def _first_difference(report: DemoReport) -> str:
    stitched = report.before + report.after
    for k, (got, want) in enumerate(zip(stitched, report.uninterrupted)):
        if got != want:
            return f"record {k} is id {got} after the resume but {want} uninterrupted"
    return f"{len(stitched)} records stitched, {len(report.uninterrupted)} uninterrupted"


def main(
    directory: str | os.PathLike[str], config: DemoConfig, *, out: TextIO | None = None
) -> int:
    """Run the demo and print its report; 0 when the check holds, 1 otherwise."""
    stream = out if out is not None else sys.stdout
    report = run(directory, config, progress=sys.stderr)
    print(format_report(report), file=stream)
    return 0 if report.ok else 1
