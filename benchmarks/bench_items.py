"""What an ``Item`` costs on its own: made and freed by the item iterator, against iterating
the same records' list.

Usage: python benchmarks/bench_items.py [--records N] [--batch B] [--repeats R]

N records of 100 B (default 1,048,576) are taken in batches of B (default 2,048, the
Reader's batch of small records), three ways alternating within each round, each consumed
as ``Reader`` items are in ``bench_reader.py`` (``sum(1 for _ in ...)``) and freed at once:

* ``list``: the records' list itself (the anchor: the consumer's loop alone);
* ``iter_items``: an :class:`~readplan.reading.items.Item` made per record by the compiled
  core's ``iter_items`` (or its pure twin), from the batch's columns;
* ``tuple``: a plain tuple of the same six fields with the ints made per record, what a
  record would cost in the cheapest Python object that holds them.

Reported: ns per record in CPU time, the median of R rounds (default 9) after a warm-up
round, and each way's cost above ``list`` measured in the same round.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from itertools import repeat

import numpy as np

from readplan import NATIVE
from readplan.reading.items import iter_items


def ways(records: list[bytes], batch: int) -> dict[str, Callable[[], int]]:
    batches = [records[k : k + batch] for k in range(0, len(records), batch)]
    starts = range(0, len(records), batch)
    columns = [
        np.arange(k, k + len(b), dtype=np.int64) for k, b in zip(starts, batches, strict=True)
    ]
    files = [np.zeros(len(b), dtype=np.int64) for b in batches]
    names = {0: "bench-train.tfrecord-00000-of-00001"}

    def listed() -> int:
        return sum(sum(1 for _ in b) for b in batches)

    def items() -> int:
        return sum(
            sum(1 for _ in iter_items(b, names, 0, c, f, c))
            for b, c, f in zip(batches, columns, files, strict=True)
        )

    def tuples() -> int:
        fields = repeat(names[0]), repeat(0)
        return sum(
            sum(1 for _ in zip(b, *fields, c.tolist(), f.tolist(), c.tolist()))
            for b, c, f in zip(batches, columns, files, strict=True)
        )

    return {"list": listed, "iter_items": items, "tuple": tuples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1 << 20)
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    records = [bytes([k % 251]) * 100 for k in range(args.records)]
    runs = ways(records, args.batch)
    times: dict[str, list[float]] = {name: [] for name in runs}
    above: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(args.repeats + 1):
        got: dict[str, float] = {}
        for name, run in runs.items():
            cpu = time.process_time()
            if run() != len(records):
                raise RuntimeError(f"{name}: not every record was taken")
            got[name] = (time.process_time() - cpu) / len(records) * 1e9
        if round_:  # the first round warms the caches and the allocator
            for name, ns in got.items():
                times[name].append(ns)
                above[name].append(ns - got["list"])
    core = "compiled" if NATIVE else "pure-Python"
    print(f"{args.records:,} records of 100 B in batches of {args.batch:,}, {core} core")
    print(f"CPU ns per record, medians of {args.repeats} rounds; above: the cost over 'list'")
    for name in runs:
        line = f"  {name:<11} {statistics.median(times[name]):7.1f} ns"
        if name != "list":
            line += f"   above list {statistics.median(above[name]):7.1f} ns"
        print(line)


if __name__ == "__main__":
    main()
