"""Time readplan.example's decode, parse and encode per record, and decode_batch per batch.

Run: python benchmarks/bench_example.py (with TensorFlow importable, e.g. from a separate
environment with readplan's src/ on PYTHONPATH, the batch table also times
``tf.io.parse_example``, the anchor, on the same batches).

Three record shapes: the TensorFlow-written object-detection records of
tests/data/tfrecord/examples.tfrecord (9 short features each), a TFDS-like record of 20
scalar features, and a record with four 10,000-value lists. Each figure is the median over
repeats of the mean time per record. Two alternative list conversions on the same parsed
message show what readplan's choice buys:

* per-value: ``np.array(list(values))``, a Python object per value;
* bulk-only: the runtime's array export for every list, whatever its length (readplan
  iterates over lists of up to 32 values instead, see ``_numeric_array``).

The batch table decodes batches of 1,024 records to columns with ``decode_batch`` and compares
the time per record with ``decode`` one record at a time and with ``tf.io.parse_example``
(each feature as a ``FixedLenFeature`` when every record holds the same number of values,
else a ``VarLenFeature``).

Then decoding the TFDS features fixture (tests/data/tfds_features, 80 records of 24 features
incl. three images) as ``tfds.as_numpy`` yields it, against ``decode`` of the same records
as the anchor, with and without the images decoded (needs the ``images`` extra); and its
JPEGs decoded as TensorFlow does (libjpeg-turbo fast IDCT) against Pillow's default.
"""

from __future__ import annotations

import importlib.util
import io
import os
import statistics
import struct
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _examples import tfds_like

from readplan import tfrecord
from readplan.example import FixedLen, VarLen, decode, decode_batch, encode, parse
from readplan.metadata.features import SkipDecoding, load_features
from readplan.records.example._pb import Example

ROOT = Path(__file__).resolve().parents[1]
REPEATS = 7
TARGET_SECONDS = 0.2
BATCH = 1024


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


def _batch_cases() -> dict[str, list[bytes]]:
    cases = _cases()
    return {
        "detection (TF-written)": (cases["detection (TF-written)"] * BATCH)[:BATCH],
        "TFDS-like": tfds_like(BATCH),
        "20 scalars": cases["20 scalars"] * (BATCH // 40 + 1),
    }


def _tf_parser(records: list[bytes]) -> Callable[[], object] | None:
    """``tf.io.parse_example`` on the batch, or None when TensorFlow is not importable."""
    if importlib.util.find_spec("tensorflow") is None:
        return None
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf  # optional anchor, never a dependency

    dtypes = {"int64": tf.int64, "float32": tf.float32, "bytes": tf.string}
    spec = {}
    for name, column in decode_batch(records).items():
        lengths = set(np.diff(column.row_splits).tolist())
        if column.present.all() and len(lengths) == 1:
            spec[name] = tf.io.FixedLenFeature((lengths.pop(),), dtypes[column.kind])
        else:
            spec[name] = tf.io.VarLenFeature(dtypes[column.kind])
    serialized = tf.constant(records)
    return lambda: tf.io.parse_example(serialized, spec)


def _batch_us(function: Callable[[], object], count: int) -> tuple[float, float]:
    """Medians over repeats of the wall and the CPU microseconds per record of one call.

    On a shared machine a call of many short steps is descheduled more often than one long
    native call, so the wall time is unfair to it; the process's CPU time (all threads: the
    anchor's parallel parsing counts in full) measures the work itself.
    """
    function()
    wall, cpu = [], []
    for _ in range(REPEATS * 3):
        start, start_cpu = time.perf_counter(), time.process_time()
        function()
        cpu.append((time.process_time() - start_cpu) / count * 1e6)
        wall.append((time.perf_counter() - start) / count * 1e6)
    return statistics.median(wall), statistics.median(cpu)


def _batch_table() -> None:
    print(
        f"\nbatches of {BATCH:,} records to columns, microseconds per record (median), wall / CPU"
    )
    print(
        f"{'record':<24}{'bytes':>6}{'one by one':>12}{'decode_batch':>16}{'speed-up':>10}"
        f"{'TF parse_example':>18}{'ratio to TF':>14}"
    )
    for name, records in _batch_cases().items():
        wall, cpu = _batch_us(lambda records=records: decode_batch(records), BATCH)
        single = _median_us(decode, records[:64])
        size = statistics.mean(len(raw) for raw in records)
        line = (
            f"{name:<24}{size:>6.0f}{single:>12.2f}{f'{wall:.2f} / {cpu:.2f}':>16}"
            f"{single / wall:>9.1f}x"
        )
        parser = _tf_parser(records)
        if parser is not None:
            tf_wall, tf_cpu = _batch_us(parser, BATCH)
            ratios = f"{wall / tf_wall:.2f} / {cpu / tf_cpu:.2f}"
            line += f"{f'{tf_wall:.2f} / {tf_cpu:.2f}':>18}{ratios:>14}"
        else:
            line += f"{'(no TensorFlow)':>18}"
        print(line)


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
    _batch_table()
    _features_figures()


def _features_figures() -> None:
    directory = ROOT / "tests/data/tfds_features/readplan_features/1.0.0"
    features = load_features(directory)
    assert features is not None
    records = [
        raw for path in sorted(directory.glob("*.tfrecord-*")) for raw in tfrecord.read(path)
    ]
    images = ("image", "image_jpeg", "image_gray")
    skip = features.decoder(decoders={name: SkipDecoding() for name in images})
    anchor = _median_us(decode, records)
    skipped = _median_us(skip, records)
    skip_batch = features.batch_decoder(decoders={name: SkipDecoding() for name in images})
    batched = _median_us(skip_batch, [records]) / len(records)
    print(f"TFDS features fixture, {len(records)} records: example.decode {anchor:.1f} us (anchor)")
    print(f"  features.decode, images skipped: {skipped:.1f} us ({skipped / anchor:.1f}x)")
    print(
        f"  batch_decoder, images skipped, the {len(records)} records as one batch: "
        f"{batched:.1f} us per record ({batched / anchor:.2f}x; {batched / skipped:.2f}x "
        "features.decode)"
    )
    try:
        import PIL.Image
        import simplejpeg
    except ImportError:
        print("  (install readplan[images] for the image figures)")
        return
    full = _median_us(features.decoder(), records)
    full_batch = _median_us(features.batch_decoder(), [records]) / len(records)
    print(f"  features.decode, images decoded: {full:.1f} us ({full / anchor:.1f}x)")
    print(
        f"  batch_decoder, images decoded: {full_batch:.1f} us per record "
        f"({full_batch / full:.2f}x features.decode)"
    )
    jpegs = [skip(raw)["image_jpeg"] for raw in records]

    def tf_like(data: bytes) -> object:
        return simplejpeg.decode_jpeg(data, fastdct=True, fastupsample=False)

    def pillow(data: bytes) -> object:
        with PIL.Image.open(io.BytesIO(data)) as image:
            return np.asarray(image.convert("RGB"))

    ours, theirs = _median_us(tf_like, jpegs), _median_us(pillow, jpegs)
    print(
        f"  JPEG (1..16 px a side): fast IDCT {ours:.1f} us, Pillow default {theirs:.1f} us "
        f"(ratio {ours / theirs:.2f})"
    )


if __name__ == "__main__":
    main()
