"""Throughput of the viewer's offline page walking large files in headless Chromium.

Usage: python benchmarks/bench_viewer.py [--mb 256] [--rounds 3]

Writes, in a temporary directory, an uncompressed TFRecord file of about ``--mb`` MB
(records of 1-10 KB, sizes drawn with a fixed seed) and a GZIP copy of its first quarter,
then has the page (``readplan view --static``) walk each one: every frame's two CRC32Cs
checked, sizes kept, the first 100 records parsed (timed by the page itself, from the
file's pick to its summary drawn). The anchor is readplan's own
``tfrecord.read(on_corruption="skip")`` over the same file in the same run (the numbers
the page must reproduce). Printed: medians of ``--rounds`` walks, MB/s, the ratio to the
anchor, and the page's peak JavaScript heap during a walk (Chrome's
``performance.memory``), which stays far below the file's size because the file is read in
1 MiB slices.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.viewer_harness import chromium, wait_for

from readplan import tfrecord
from readplan.viewer import write_static

_HEAP = (
    "RP.heap = 0; RP.heapTimer = setInterval(() => RP.heap = Math.max(RP.heap, "
    "performance.memory.usedJSHeapSize), 50);"
)


def write_files(folder: Path, megabytes: int) -> tuple[Path, Path]:
    chance = random.Random(7)
    plain = folder / "large.tfrecord"
    target = megabytes * 1_000_000
    written = 0
    with tfrecord.TFRecordWriter(plain) as writer:
        while written < target:
            record = chance.randbytes(chance.randint(1_000, 10_000))
            writer.write(record)
            written += len(record) + 16
    zipped = folder / "quarter.tfrecord.gz"
    quarter = list(tfrecord.read(plain))
    tfrecord.write(zipped, quarter[: len(quarter) // 4], compression="GZIP")
    return plain, zipped


def anchor_seconds(path: Path) -> tuple[float, int]:
    start = time.perf_counter()
    count = sum(1 for _ in tfrecord.read(path, compression="auto", on_corruption="skip"))
    return time.perf_counter() - start, count


def page_walk(browser: Any, page: Path, path: Path) -> tuple[float, int, int]:
    browser.get(page.as_uri())
    wait_for(browser, "return window.RP && document.getElementById('pick')")
    browser.execute_script(_HEAP)
    browser.find_element("id", "pick").send_keys(str(path))
    wait_for(browser, f"return RP.results[{path.name!r}] && !RP.busy", timeout=1200)
    seconds, records, heap = browser.execute_script(
        f"clearInterval(RP.heapTimer); const r = RP.results[{path.name!r}]; "
        "return [r.seconds, r.records, RP.heap]"
    )
    return float(seconds), int(records), int(heap)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        page = folder / "viewer.html"
        write_static(page)
        files = write_files(folder, args.mb)
        browser = chromium()
        try:
            for path in files:
                size = path.stat().st_size / 1e6
                walks, anchors, heaps = [], [], []
                for _ in range(args.rounds):
                    seconds, records, heap = page_walk(browser, page, path)
                    anchor, expected = anchor_seconds(path)
                    assert records == expected, (records, expected)
                    walks.append(seconds)
                    anchors.append(anchor)
                    heaps.append(heap)
                walk, anchor = statistics.median(walks), statistics.median(anchors)
                print(
                    f"{path.name:22} {size:7.1f} MB  {records:>8,} records  page {walk:6.2f} s "
                    f"({size / walk:6.1f} MB/s)  tfrecord.read {anchor:5.2f} s  ratio "
                    f"{anchor / walk:4.2f}  peak JS heap {max(heaps) / 1e6:5.1f} MB"
                )
        finally:
            browser.quit()


if __name__ == "__main__":
    main()
