"""TBL v2: readplan.tbl against TurboLoader 2.39's TblReaderV2 / TblWriterV2, same run.

Usage: python benchmarks/bench_tbl.py [--repeats N] [--quick]

For samples of 100 B, 10 KiB and 150 KiB, stored and LZ4-compressed (half of each sample
is random, half zeros, so LZ4 halves it), it measures per sample, median of N rounds
(default 5) after a warm-up, readplan and the reference alternating within each round:

* random access: ``tf[i]`` against ``read_sample(i)`` at shuffled indices;
* sequential: iterating the file against ``read_sample(i)`` for i in order;
* both with payload checksums verified (each side's default);

then the writers (time per sample, and peak resident memory growth of a fresh process
writing N and 4N samples of 150 KiB: flat for readplan, linear for the reference), and
the RAW_U8 view: ``raw_view()`` of 64x64 RGB images summed, against reading the samples
one by one into an array (readplan and reference).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import resource
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator

import numpy as np
import turboloader as tl

from readplan import tbl

KIB = 1024
SIZES = (("100 B", 100, 50_000), ("10 KiB", 10 * KIB, 5_000), ("150 KiB", 150 * KIB, 500))
QUICK = (("100 B", 100, 20_000), ("10 KiB", 10 * KIB, 2_000), ("150 KiB", 150 * KIB, 300))


def samples(size: int, count: int, seed: int = 0) -> Iterator[bytes]:
    """Half random, half zeros: LZ4 stores about half of it."""
    rnd = random.Random(seed)
    half = size // 2
    for _ in range(count):
        yield rnd.randbytes(half) + bytes(size - half)


def write_reference(path: str, data: Iterator[bytes], compression: bool) -> None:
    writer = tl.TblWriterV2(path, enable_compression=compression)
    for sample in data:
        writer.add_sample(sample, tl.SampleFormat.UNKNOWN, width=0, height=0)
    writer.finalize()


def write_readplan(path: str, data: Iterator[bytes], compression: bool) -> None:
    with tbl.TblWriter(path, compression=compression) as writer:
        for sample in data:
            writer.add(sample)


def rounds(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median seconds of each function, alternating them within each round."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def _read_functions(
    ours: tbl.TblFile, theirs: tl.TblReaderV2, order: list[int]
) -> dict[str, Callable[[], object]]:
    count = len(order)

    def ours_random() -> None:
        for i in order:
            ours[i]

    def theirs_random() -> None:
        for i in order:
            theirs.read_sample(i)

    def ours_sequential() -> None:
        for _ in ours:
            pass

    def theirs_sequential() -> None:
        for i in range(count):
            theirs.read_sample(i)

    return {
        "ours_random": ours_random,
        "theirs_random": theirs_random,
        "ours_seq": ours_sequential,
        "theirs_seq": theirs_sequential,
    }


def read_benchmarks(folder: str, label: str, size: int, count: int, repeats: int) -> None:
    for compression in (False, True):
        path = os.path.join(folder, f"{size}-{compression}.tbl")
        write_readplan(path, samples(size, count), compression)
        order = list(range(count))
        random.Random(1).shuffle(order)
        ours = tbl.TblFile(path)
        theirs = tl.TblReaderV2(path, verify_checksums=True)
        assert ours[order[0]] == theirs.read_sample(order[0])

        got = rounds(_read_functions(ours, theirs, order), repeats)
        ours.close()
        kind = "lz4" if compression else "stored"
        for mode in ("random", "seq"):
            mine, ref = got[f"ours_{mode}"] / count * 1e6, got[f"theirs_{mode}"] / count * 1e6
            print(
                f"read {mode:<6} {label:>7} {kind:<6}: readplan {mine:8.2f} us/sample, "
                f"reference {ref:8.2f} us/sample, ratio {mine / ref:.2f}"
            )


def _write_functions(
    path: str, data: list[bytes], compression: bool
) -> dict[str, Callable[[], object]]:
    return {
        "ours": lambda: write_readplan(path, iter(data), compression),
        "theirs": lambda: write_reference(path, iter(data), compression),
    }


def write_benchmarks(folder: str, label: str, size: int, count: int, repeats: int) -> None:
    data = list(samples(size, count))
    for compression in (False, True):
        path = os.path.join(folder, "w.tbl")
        got = rounds(_write_functions(path, data, compression), max(1, repeats // 2))
        kind = "lz4" if compression else "stored"
        mine, ref = got["ours"] / count * 1e6, got["theirs"] / count * 1e6
        print(
            f"write       {label:>7} {kind:<6}: readplan {mine:8.2f} us/sample, reference "
            f"{ref:8.2f} us/sample, ratio {mine / ref:.2f}"
        )


def _rss_kib() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _peak_growth(writer: str, path: str, count: int, queue: multiprocessing.Queue[int]) -> None:
    before = _rss_kib()
    fn = write_readplan if writer == "readplan" else write_reference
    fn(path, samples(150 * KIB, count), False)
    queue.put(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)


def memory_benchmarks(folder: str, count: int) -> None:
    context = multiprocessing.get_context("fork")
    for writer in ("readplan", "reference"):
        growth = []
        for n in (count, 4 * count):
            queue: multiprocessing.Queue[int] = context.Queue()
            process = context.Process(
                target=_peak_growth, args=(writer, os.path.join(folder, "m.tbl"), n, queue)
            )
            process.start()
            growth.append(queue.get() / 1024)
            process.join()
        print(
            f"writer peak RSS growth, {writer:<9}: {count} x 150 KiB {growth[0]:7.1f} MiB, "
            f"{4 * count} x 150 KiB {growth[1]:7.1f} MiB"
        )


def raw_view_benchmark(folder: str, count: int, repeats: int) -> None:
    path = os.path.join(folder, "raw.tbl")
    rnd = np.random.default_rng(0)
    with tbl.TblWriter(path) as writer:
        for _ in range(count):
            image = rnd.integers(0, 256, size=(64, 64, 3), dtype=np.uint8)
            writer.add(image.tobytes(), format="raw_u8", width=64, height=64)
    ours = tbl.TblFile(path)
    theirs = tl.TblReaderV2(path, verify_checksums=True)

    def view(verify: bool) -> int:
        return int(ours.raw_view(verify=verify).sum(dtype=np.uint64))

    def one_by_one_ours() -> int:
        frames = [np.frombuffer(ours[i], np.uint8).reshape(64, 64, 3) for i in range(count)]
        return int(np.stack(frames).sum(dtype=np.uint64))

    def one_by_one_theirs() -> int:
        frames = [
            np.frombuffer(theirs.read_sample(i), np.uint8).reshape(64, 64, 3) for i in range(count)
        ]
        return int(np.stack(frames).sum(dtype=np.uint64))

    assert view(True) == one_by_one_theirs()
    got = rounds(
        {
            "view": lambda: view(False),
            "view_verified": lambda: view(True),
            "ours": one_by_one_ours,
            "theirs": one_by_one_theirs,
        },
        repeats,
    )
    per = {name: seconds / count * 1e6 for name, seconds in got.items()}
    print(
        f"RAW_U8 64x64 x {count}, whole array summed: raw_view {per['view']:.2f} us/image "
        f"(CRCs verified first: {per['view_verified']:.2f}), one by one readplan "
        f"{per['ours']:.2f}, reference {per['theirs']:.2f} (view/reference "
        f"{per['view'] / per['theirs']:.2f})"
    )
    ours.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    args = parser.parse_args()
    sizes = QUICK if args.quick else SIZES
    with tempfile.TemporaryDirectory() as folder:
        for label, size, count in sizes:
            read_benchmarks(folder, label, size, count, args.repeats)
        for label, size, count in sizes:
            write_benchmarks(folder, label, size, count, args.repeats)
        memory_benchmarks(folder, 200 if args.quick else 500)
        raw_view_benchmark(folder, 2_000 if args.quick else 10_000, args.repeats)


if __name__ == "__main__":
    main()
