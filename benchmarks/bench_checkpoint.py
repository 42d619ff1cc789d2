"""Checkpoint benchmark on the ImageNet layout (1,281,167 examples, 1,024 shards, 16/16,
shuffled files).

Run: python benchmarks/bench_checkpoint.py [--repeats N]

Measures, in one run:
* ``plan.checkpoint(e, n)`` at n = 10 and n = 1,281,000 (and the ratio of the two);
* ``plan.iter_from(checkpoint)`` to the first position, and ``plan.resume`` to the whole
  remaining epoch;
* the anchor: replaying the interleave element by element (what a pipeline without a
  closed form must do to reach position n; TFDS additionally reads every record), timed
  over 200,000 positions and reported per position;
* the checkpoint's JSON size;
* at 10^4 / 10^5 / 10^6 files (``--max-files``): the compact checkpoint on a cached and on
  a fresh epoch, its size, ``Checkpoint.from_json`` + ``plan.verify`` and ``plan.resume``
  to the first position, each as a ratio to the anchor ``np.random.permutation(files)``
  (the inherent work of shuffling the files) measured in the same run;
* at 10^5 files, a restore: ``Checkpoint.load(path)`` + ``Reader(plan, data_dir=...,
  start=checkpoint)`` + its first record, in CPU time against the same anchor, with a plan
  already used in the process (epoch cached) and with a fresh plan (the epoch's schedule
  computed by the restore). Only the shards the restored interleave reads first exist on
  disk.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _scale import cpu_ms, permutation_ms, scale_plan
from _timing import median_ms

from readplan import Checkpoint, ReadConfig, Reader, ReadPlan, tfrecord
from readplan.metadata.dataset_info import DatasetInfo, shard_lengths

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.reference_models import ReferenceInterleave

N_EXAMPLES = 1_281_167


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--max-files", type=int, default=1_000_000)
    args = parser.parse_args()
    info = DatasetInfo(name="imagenet2012", splits={"train": shard_lengths(N_EXAMPLES, 1024)})
    plan = ReadPlan(info, "train", ReadConfig(shuffle_files=True, shuffle_seed=32))
    plan.epoch(3)

    early = median_ms(lambda: plan.checkpoint(3, 10), args.repeats)
    late = median_ms(lambda: plan.checkpoint(3, 1_281_000), args.repeats)
    checkpoint = Checkpoint.from_json(plan.checkpoint(3, 640_123).to_json())
    first = median_ms(lambda: next(plan.iter_from(checkpoint, chunk_size=1024)), args.repeats)
    whole = median_ms(lambda: plan.resume(checkpoint), args.repeats)
    text = checkpoint.to_json()

    files = plan.file_order(3)
    lengths = [plan.instructions[f].num_records for f in files.tolist()]
    model = ReferenceInterleave(lengths, 16, 16)
    steps = 200_000
    start = time.perf_counter()
    for _ in range(steps):
        model.next()
    replay_us = (time.perf_counter() - start) / steps * 1e6

    print(f"checkpoint at n=10:        {early:.3f} ms median")
    print(
        f"checkpoint at n=1,281,000: {late:.3f} ms median (late/early {late / early:.2f}, "
        "target <= 2; target <= 1 ms)"
    )
    print(f"iter_from to the first position: {first:.3f} ms median (target <= 5 ms)")
    print(f"resume, whole remaining epoch from n=640,123: {whole:.3f} ms median")
    print(f"checkpoint JSON: {len(text):,} bytes ({len(plan.instructions)} files, 16 slots)")
    print(
        f"anchor: element-by-element interleave replay {replay_us:.2f} us/position, i.e. "
        f"{replay_us * 1_281_000 / 1e6:.1f} s to reach n=1,281,000 (TFDS also reads every "
        "record on the way)"
    )
    print(f"speed-up at n=1,281,000 over replay: {replay_us * 1_281_000 / 1e3 / late:,.0f}x")
    for num_files in (10_000, 100_000, 1_000_000):
        if num_files <= args.max_files:
            _scale(num_files, args.repeats)
    if args.max_files >= 100_000:
        _restore(100_000, args.repeats)


def _scale(num_files: int, repeats: int) -> None:
    """Compact checkpoints at ``num_files`` shards of 10,000 examples, shuffled files."""
    info = DatasetInfo(name="web", splits={"train": [10_000] * num_files})
    start = time.perf_counter()
    plan = ReadPlan(info, "train", ReadConfig(shuffle_files=True, shuffle_seed=32))
    plan.summary  # noqa: B018 - the one-time summary, timed with the plan
    built = time.perf_counter() - start
    anchor = median_ms(lambda: np.random.permutation(num_files), repeats)
    position = plan.num_examples // 3
    plan.epoch_schedule(1)
    cached = median_ms(lambda: plan.checkpoint(1, position), repeats)
    epochs = iter(range(2, 10**9))
    fresh = median_ms(lambda: plan.checkpoint(next(epochs), position), repeats)
    text = plan.checkpoint(1, position).to_json()
    load = median_ms(lambda: plan.verify(Checkpoint.from_json(text)), repeats)
    checkpoint = Checkpoint.from_json(text)
    first = median_ms(lambda: next(plan.iter_from(checkpoint, chunk_size=1024)), repeats)
    print(
        f"{num_files:>9,} files ({plan.num_examples:,} examples; plan + summary built in "
        f"{built:.2f} s): anchor permutation {anchor:.3f} ms; checkpoint cached epoch "
        f"{cached:.4f} ms ({cached / anchor:.3f}x), fresh epoch {fresh:.4f} ms "
        f"({fresh / anchor:.3f}x); {len(text):,} bytes; load + verify {load:.3f} ms "
        f"({load / anchor:.2f}x); iter_from to the first position {first:.1f} ms "
        f"({first / anchor:.1f}x)"
    )


def _restore(num_files: int, repeats: int) -> None:
    """A restored reader's first record at ``num_files`` shards, a third into epoch 1."""
    plan = scale_plan(num_files)
    position = plan.num_examples // 3
    # The files the reader opens first: those of the positions its first read covers.
    head = next(plan.iter_epoch(1, chunk_size=4_096, start=position))
    with tempfile.TemporaryDirectory(prefix="readplan-bench-") as scratch:
        directory = Path(scratch)
        for file_index in np.unique(head.file_index).tolist():
            instruction = plan.instructions[file_index]
            records = (k.to_bytes(8, "little") for k in range(instruction.examples_in_shard))
            tfrecord.write(directory / Path(instruction.filename).name, records)
        path = directory / "checkpoint.json"
        plan.checkpoint(1, position).save(path)

        def first_record(restored: ReadPlan) -> object:
            reader = Reader(restored, data_dir=directory, start=Checkpoint.load(path), epochs=2)
            with reader:
                return next(iter(reader))

        cached = cpu_ms(lambda: first_record(plan), repeats)
        fresh = []
        for _ in range(max(3, repeats // 5)):
            new = scale_plan(num_files)
            new.summary  # noqa: B018 - built with the plan, as a new process would
            start = time.process_time()
            first_record(new)
            fresh.append((time.process_time() - start) * 1e3)
        anchor = permutation_ms(num_files, repeats)
        files = len(np.unique(head.file_index))
    fresh_ms = statistics.median(fresh)
    print(
        f"restore at {num_files:,} files ({files} shard files on disk): Checkpoint.load + "
        f"Reader(start=...) + first record {cached:.2f} ms with the plan used before "
        f"({cached / anchor:.1f}x), {fresh_ms:.2f} ms with a fresh plan ({fresh_ms / anchor:.1f}x; "
        f"target <= 30x); anchor permutation {anchor:.3f} ms (CPU time)"
    )


if __name__ == "__main__":
    main()
