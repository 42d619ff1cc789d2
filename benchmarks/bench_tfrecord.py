"""Read and count throughput of readplan.tfrecord against the plain reference reader.

Usage: python benchmarks/bench_tfrecord.py [--passes N] [--keep DIR] [--gzip-only]

Builds its files in a temporary directory:

* small:  1,000,000 records of 100 bytes;
* varied: 1,000,000 records of 50-150 bytes (sizes drawn with a fixed seed), because equal
  sizes let readplan confirm whole runs of frames at once;
* mid:    20,000 records of 1-10 KB (sizes drawn with a fixed seed);
* large:  2,000 records of 100 KiB.

``gzip``: the small and mid files GZIP-compressed, read by readplan against one inflate of
the file in bounded pieces (the anchor: what any reader must do); readplan inflates twice,
the first pass confirming every member's CRC-32 and size before a record is delivered.

Each measurement is the median of N passes (default 5) after one warm-up pass; readplan and
the anchor alternate within each round so that both see the same machine state.  The anchor
is the plain reader every TFRecord user starts from: read 8 length bytes, 4 CRC bytes, the
data and its CRC with four ``read`` calls per record, checking both CRCs.  ``copy+crc`` is
the ceiling every size is measured against: the file read in 1 MiB pieces into one reused
buffer and CRC32C computed over them, without any framing.  ``packed`` is
``tfrecord.read_packed`` (batches of 1,024 records in one buffer each).  ``count`` is timed
without and with an index sidecar; ``frame_offsets(stop=n)`` (a header walk that stops at
record n, what random access without a sidecar costs) at the middle of each file.

For mid-size records the unavoidable parts of a reader are timed too, with the frames
located in advance so that no framing work is done: ``reads`` (the file in reads of up to
1 MiB that end at frame boundaries), ``+copies`` (plus one ``bytes`` per record, copied out
of its read, delivered to the consumer) and ``+crcs`` (plus one CRC32C per record).
"""

from __future__ import annotations

import argparse
import collections
import functools
import itertools
import os
import random
import statistics
import struct
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from crc32c import crc32c

from readplan import tfrecord
from readplan.index import build_index, index_path_for

SMALL = ("small", 1_000_000, (100, 100))
VARIED = ("varied", 1_000_000, (50, 150))
MID = ("mid", 20_000, (1_000, 10_000))
LARGE = ("large", 2_000, (100 * 1024, 100 * 1024))
T = TypeVar("T")


def _mask(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def anchor_reader(path: str) -> Iterator[bytes]:
    """The reference reader: four buffered reads per record, both CRCs checked."""
    with open(path, "rb") as handle:
        while True:
            length_bytes = handle.read(8)
            if len(length_bytes) < 8:
                return
            (length_crc,) = struct.unpack("<I", handle.read(4))
            if _mask(crc32c(length_bytes)) != length_crc:
                raise ValueError("corrupt length field")
            (length,) = struct.unpack("<Q", length_bytes)
            data = handle.read(length)
            (data_crc,) = struct.unpack("<I", handle.read(4))
            if _mask(crc32c(data)) != data_crc:
                raise ValueError("corrupt record")
            yield data


def copy_and_crc(path: str) -> Iterator[bytes]:
    """No framing: 1 MiB reads into one reused buffer and one CRC32C over each, the least
    any verifying reader must do (the copy+CRC ceiling the targets are shares of)."""
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    crc = 0
    with open(path, "rb", buffering=0) as handle:
        while size := handle.readinto(buffer):
            crc = crc32c(view[:size], crc)
    yield crc.to_bytes(4, "little")


Reads = list[tuple[int, int, list[tuple[int, int]]]]


def frame_reads(path: str, piece: int = 1 << 20) -> Reads:
    """``(offset, size, data spans)`` of reads of up to ``piece`` bytes that end at frame
    boundaries; the spans of each read's records are relative to the read."""
    offsets, end = tfrecord.frame_offsets(path)
    starts = offsets.tolist()
    ends = [*starts[1:], end]
    reads: Reads = []
    first = 0
    while first < len(starts):
        base = starts[first]
        last = first
        while last + 1 < len(starts) and ends[last + 1] - base <= piece:
            last += 1
        spans = [
            (s - base + 12, e - base - 4)
            for s, e in zip(starts[first : last + 1], ends[first : last + 1])
        ]
        reads.append((base, ends[last] - base, spans))
        first = last + 1
    return reads


def known_frames(path: str, reads: Reads, *, copy: bool, crc: bool) -> Iterator[list[bytes]]:
    """The reads of :func:`frame_reads`, and optionally each record copied out and checksummed:
    what a reader cannot avoid doing, without finding or checking the frames."""
    fd = os.open(path, os.O_RDONLY)
    try:
        for offset, size, spans in reads:
            piece = os.pread(fd, size, offset)
            if not copy:
                yield [piece]
                continue
            records = [piece[b:e] for b, e in spans]
            if crc:
                collections.deque(map(crc32c, records), maxlen=0)
            yield records
    finally:
        os.close(fd)


def consume(records: Iterable[bytes]) -> tuple[int, int]:
    count = size = 0
    for record in records:
        count += 1
        size += len(record)
    return count, size


def consume_packed(batches: Iterable[tfrecord.PackedRecords]) -> tuple[int, int]:
    count = size = 0
    for batch in batches:
        count += len(batch)
        size += len(batch.values)
    return count, size


def make_file(directory: str, name: str, count: int, sizes: tuple[int, int]) -> str:
    path = os.path.join(directory, f"{name}.tfrecord")
    payload = bytes(range(256)) * (102_400 // 256 + 1)
    draw = random.Random(0)

    def records() -> Iterator[bytes]:
        for i in range(count):
            yield (i.to_bytes(8, "little") + payload)[: draw.randint(*sizes)]

    tfrecord.write(path, records())
    return path


def median_seconds(
    contenders: dict[str, Callable[[], T]], passes: int
) -> dict[str, tuple[float, T]]:
    """Median wall time of each contender; rounds alternate between them."""
    results = {name: action() for name, action in contenders.items()}  # warm-up
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(passes):
        for name, action in contenders.items():
            start = time.perf_counter()
            results[name] = action()
            times[name].append(time.perf_counter() - start)
    return {name: (statistics.median(times[name]), results[name]) for name in contenders}


def bench_read(path: str, label: str, passes: int, *, components: bool = False) -> None:
    contenders: dict[str, Callable[[], tuple[int, int]]] = {
        "anchor": lambda: consume(anchor_reader(path)),
        "readplan": lambda: consume(tfrecord.read(path, verify=True)),
    }
    contenders["packed"] = lambda: consume_packed(tfrecord.read_packed(path))
    contenders["copy+crc"] = lambda: consume(copy_and_crc(path))
    if components:
        reads = frame_reads(path)
        for name, copy, crc in (
            ("reads", False, False),
            ("+copies", True, False),
            ("+crcs", True, True),
        ):
            frames = functools.partial(known_frames, path, reads, copy=copy, crc=crc)
            contenders[name] = lambda frames=frames: consume(
                itertools.chain.from_iterable(frames())
            )
    timed = median_seconds(contenders, passes)
    anchor_seconds, anchor_result = timed["anchor"]
    for name in ("readplan", "packed", "+copies", "+crcs"):
        if name in timed and timed[name][1] != anchor_result:
            raise SystemExit(f"{label}: {name} read {timed[name][1]}, anchor {anchor_result}")
    records, _ = anchor_result
    file_bytes = os.path.getsize(path)
    for name, (seconds, _) in timed.items():
        rate = "" if name in ("copy+crc", "reads") else f"{records / seconds / 1e6:8.2f} M rec/s"
        print(
            f"  read {label:<7} {name:<9} {seconds:8.3f} s  {rate:>15}  "
            f"{file_bytes / seconds / 1e9:6.2f} GB/s  x{anchor_seconds / seconds:5.2f} anchor"
        )
    for name in ("readplan", "packed", "reads", "+copies", "+crcs"):
        if name in timed:
            share = timed["copy+crc"][0] / timed[name][0]
            print(f"  read {label:<7} {name} / copy+crc ceiling: {share:.2f}")


def inflate_once(path: str) -> tuple[int, int]:
    """The unavoidable part of reading a GZIP file: inflating it once, in 1 MiB pieces of
    input and 256 KiB of output (no framing, no CRC32C); (pieces, decompressed bytes)."""
    inflater = zlib.decompressobj(31)
    pieces = size = 0
    with open(path, "rb") as source:
        while chunk := source.read(1 << 20):
            while chunk:
                out = inflater.decompress(chunk, 1 << 18)
                pieces += 1
                size += len(out)
                chunk = inflater.unconsumed_tail
    return pieces, size


def bench_gzip(directory: str, spec: tuple[str, int, tuple[int, int]], passes: int) -> None:
    """GZIP reads against one inflate of the file (anchor): readplan inflates a GZIP file
    twice, once to confirm every member's CRC-32 and size before any record is delivered."""
    label, count, sizes = spec
    plain = make_file(directory, label, count, sizes)
    path = plain + ".gz"
    tfrecord.write(path, tfrecord.read(plain), compression="GZIP")
    timed = median_seconds(
        {
            "inflate": lambda: inflate_once(path),
            "readplan": lambda: consume(tfrecord.read(path, compression="GZIP")),
        },
        passes,
    )
    anchor_seconds, (_, stream_bytes) = timed["inflate"]
    records, _ = timed["readplan"][1]
    for name, (seconds, _) in timed.items():
        rate = f"{records / seconds / 1e6:8.2f} M rec/s" if name == "readplan" else ""
        print(
            f"  gzip {label:<7} {name:<9} {seconds:8.3f} s  {rate:>15}  "
            f"{stream_bytes / seconds / 1e9:6.2f} GB/s decompressed  "
            f"x{seconds / anchor_seconds:5.2f} the inflate"
        )


def bench_count(path: str, label: str, passes: int) -> None:
    sidecar = index_path_for(path)
    if os.path.exists(sidecar):
        os.unlink(sidecar)
    timed = median_seconds({"no index": lambda: tfrecord.count(path)}, passes)
    build_index(path)
    timed.update(median_seconds({"index": lambda: tfrecord.count(path)}, passes))
    os.unlink(sidecar)
    for name, (seconds, records) in timed.items():
        print(
            f"  count {label:<6} {name:<9} {seconds * 1e3:9.3f} ms "
            f"{records / seconds / 1e6:12.2f} M rec/s"
        )


def bench_walk(path: str, label: str, passes: int) -> None:
    """A header walk to the middle record, and the whole walk, without a sidecar."""
    middle = tfrecord.count(path, use_index=False) // 2
    timed = median_seconds(
        {
            "to middle": lambda: len(tfrecord.frame_offsets(path, stop=middle)[0]),
            "whole": lambda: len(tfrecord.frame_offsets(path)[0]),
        },
        passes,
    )
    for name, (seconds, records) in timed.items():
        print(
            f"  walk {label:<7} {name:<9} {seconds * 1e3:9.3f} ms "
            f"{records / seconds / 1e6:12.2f} M rec/s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--keep", metavar="DIR", help="build the files in DIR and keep them")
    parser.add_argument("--gzip-only", action="store_true", help="only the GZIP reads")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        directory = args.keep or temporary
        os.makedirs(directory, exist_ok=True)
        print(f"building files in {directory} ...", flush=True)
        print(f"median of {args.passes} passes (after one warm-up), anchor = one inflate")
        for spec in (SMALL, MID):
            bench_gzip(directory, spec, args.passes)
        if args.gzip_only:
            return
        specs = (SMALL, VARIED, MID, LARGE)
        paths = {spec[0]: make_file(directory, *spec) for spec in specs}
        print(f"median of {args.passes} passes (after one warm-up), anchor = plain reader")
        for label, path in paths.items():
            bench_read(
                path,
                label,
                args.passes,
                components=label == "mid",
            )
        for label, path in paths.items():
            bench_count(path, label, args.passes)
        for label, path in paths.items():
            bench_walk(path, label, args.passes)


if __name__ == "__main__":
    main()
