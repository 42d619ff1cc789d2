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
* the checkpoint's JSON size.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from _timing import median_ms

from readplan import Checkpoint, ReadConfig, ReadPlan
from readplan.metadata.dataset_info import DatasetInfo, shard_lengths

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.reference_models import ReferenceInterleave

N_EXAMPLES = 1_281_167


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
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


if __name__ == "__main__":
    main()
