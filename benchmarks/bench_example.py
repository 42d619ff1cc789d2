"""Time readplan.example's decode, parse and encode per record.

Run: python benchmarks/bench_example.py

Three record shapes: the TensorFlow-written object-detection records of
tests/data/tfrecord/examples.tfrecord (9 short features each), a TFDS-like record of 20
scalar features, and a record with four 10,000-value lists. Each figure is the median over
repeats of the mean time per record. Two alternative list conversions on the same parsed
message show what readplan's choice buys:

* per-value: ``np.array(list(values))``, a Python object per value;
* bulk-only: the runtime's array export for every list, whatever its length (readplan
  iterates over lists of up to 32 values instead, see ``_numeric_array``).
"""

from __future__ import annotations

import statistics
import struct
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from readplan.example import FixedLen, VarLen, decode, encode, parse
from readplan.records._example_pb import Example

ROOT = Path(__file__).resolve().parents[1]
REPEATS = 7
TARGET_SECONDS = 0.2


def _tfrecord_payloads(path: Path) -> list[bytes]:
    data = path.read_bytes()
    payloads, position = [], 0
    while position < len(data):
        (length,) = struct.unpack_from("<Q", data, position)
        payloads.append(data[position + 12 : position + 12 + length])
        position += 16 + length
    return payloads


def _cases() -> dict[str, list[bytes]]:
    rng = np.random.default_rng(0)
    scalars = {f"feature_{k:02d}": np.int64(k) for k in range(10)}
    scalars.update({f"score_{k:02d}": np.float32(k / 3) for k in range(5)})
    scalars.update({f"label_{k}": f"class-{k}" for k in range(5)})
    long_lists = {
        "i": rng.integers(-(2**40), 2**40, 10_000),
        "f": rng.random(10_000, dtype=np.float32),
        "j": rng.integers(0, 100, 10_000),
        "g": rng.random(10_000, dtype=np.float32),
    }
    return {
        "detection (TF-written)": _tfrecord_payloads(
            ROOT / "tests/data/tfrecord/examples.tfrecord"
        ),
        "20 scalars": [encode(scalars)] * 40,
        "4 x 10,000 values": [encode(long_lists)] * 4,
    }


def _per_value(raw: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, feature in sorted(Example.FromString(raw).features.feature.items()):  # type: ignore[attr-defined]
        kind = feature.WhichOneof("kind")
        values = getattr(feature, kind).value
        if kind == "int64_list":
            out[key] = np.array(list(values), dtype=np.int64)
        elif kind == "float_list":
            out[key] = np.array(list(values), dtype=np.uint32).view(np.float32)
        else:
            out[key] = list(values)
    return out


def _bulk_only(raw: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, feature in sorted(Example.FromString(raw).features.feature.items()):  # type: ignore[attr-defined]
        kind = feature.WhichOneof("kind")
        values = getattr(feature, kind).value
        if kind == "int64_list":
            out[key] = np.array(values, dtype=np.int64)
        elif kind == "float_list":
            out[key] = np.array(values, dtype=np.uint32).view(np.float32)
        else:
            out[key] = list(values)
    return out


def _median_us(function: Callable[[Any], object], records: Sequence[Any]) -> float:
    """Median over repeats of the mean microseconds per record."""
    start = time.perf_counter()
    for raw in records:
        function(raw)
    once = max(time.perf_counter() - start, 1e-6)
    loops = max(1, int(TARGET_SECONDS / once))
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(loops):
            for raw in records:
                function(raw)
        samples.append((time.perf_counter() - start) / (loops * len(records)) * 1e6)
    return statistics.median(samples)


def main() -> None:
    detection: dict[str, FixedLen | VarLen] = {
        "image/encoded": FixedLen((), "bytes"),
        "image/name": FixedLen((), "bytes"),
        "width": FixedLen((), "int64"),
        "height": FixedLen((), "int64"),
        "objects": VarLen("int64"),
        "bboxes": VarLen("float32", shape=(-1, 4)),
    }
    header = (
        f"{'record':<24}{'bytes':>8}{'decode':>10}{'per-value':>11}{'ratio':>7}"
        f"{'bulk-only':>11}{'ratio':>7}{'encode':>10}"
    )
    print("microseconds per record (median of means)")
    print(header)
    for name, records in _cases().items():
        ours = _median_us(decode, records)
        per_value = _median_us(_per_value, records)
        bulk = _median_us(_bulk_only, records)
        encoded = _median_us(encode, [decode(raw) for raw in records])
        size = statistics.mean(len(raw) for raw in records)
        print(
            f"{name:<24}{size:>8.0f}{ours:>10.1f}{per_value:>11.1f}{per_value / ours:>6.1f}x"
            f"{bulk:>11.1f}{bulk / ours:>6.1f}x{encoded:>10.1f}"
        )
    records = _cases()["detection (TF-written)"]
    print(
        f"parse, detection schema: {_median_us(lambda raw: parse(raw, detection), records):.1f} us"
    )


if __name__ == "__main__":
    main()
