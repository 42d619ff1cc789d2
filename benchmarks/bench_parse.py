"""Example parsing in batches of 1,024 records: readplan against TensorFlow's parse_example.

Run: python benchmarks/bench_parse.py [--tf-python PATH] [--rounds N]

Two record kinds, written deterministically by readplan.example.encode:

* TFDS-like, about 228 bytes (benchmarks/_examples.py: an 80-88 byte image string, a label,
  an id, a box of 4 floats, two objects with a label and an area each);
* detection records as object-detection datasets store them: a 48,000-byte JPEG string, the
  image name, width, height, 1-8 object labels and their boxes (4 floats each).

For each, the CPU time per record (process time, medians over rounds) of

* ``parse``: readplan's schema parse of the batch into one array per feature (the batch
  decoders' ``parse_leaves``: FixedLen features as (n, *shape) arrays, VarLen ones as values and
  row splits, the boxes reshaped (-1, 4); bytes values as ``bytes`` objects);
* ``columns``: ``decode_batch``, and ``columns, pure``: the pure-Python path's columns (what
  ``READPLAN_PURE=1`` runs);
* ``spans``: ``decode_batch(records, bytes_as="spans")``, bytes values left in the records
  (``BytesSpans``: an int64 start and length per value, no copy), and ``parse, spans``: the
  schema parse with ``bytes_as="spans"`` (each bytes value a memoryview into its record);
* the anchor, ``tf.io.parse_example`` with FixedLenFeature / VarLenFeature for the same schema
  plus ``.numpy()`` of every output, run by the interpreter given with ``--tf-python`` (an
  environment with TensorFlow; readplan never imports it) in a subprocess, one call per round,
  rounds interleaved with readplan's.

``parse``, ``columns`` and TF make a ``bytes`` object per bytes value (TF copies each value into
its string tensor, and ``.numpy()`` copies it again into a ``bytes`` object); for the detection
records that is 48 MB of fresh memory per batch, whose page faults cost most of either side's
time when the C allocator hands freed memory back to the system after each batch; ``spans``
copies none. Run with ``MALLOC_TRIM_THRESHOLD_``
raised (e.g. 1073741824, inherited by the anchor's process) to time the parsing itself.
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _examples import SCHEMA as TFDS_SCHEMA
from _examples import tfds_like

from readplan.example import FixedLen, VarLen, decode, decode_batch, encode
from readplan.records.example._columns import decode_columns_pure
from readplan.records.example._many import parse_leaves
from readplan.records.native import CORE_NAME

BATCH = 1024
LOOPS = 5  # calls per round and side

DETECTION_SCHEMA: dict[str, FixedLen | VarLen] = {
    "image/encoded": FixedLen((), "bytes"),
    "image/name": FixedLen((), "bytes"),
    "width": FixedLen((), "int64"),
    "height": FixedLen((), "int64"),
    "objects": VarLen("int64"),
    "bboxes": VarLen("float32", shape=(-1, 4)),
}

# Run by the TensorFlow interpreter: CPU microseconds per record of parse_example + .numpy().
ANCHOR = """
import json, os, pickle, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf
records = pickle.load(open(sys.argv[1], "rb"))
schema = json.load(open(sys.argv[2]))
loops = int(sys.argv[3])
types = {"int64": tf.int64, "float32": tf.float32, "bytes": tf.string}
spec = {
    name: tf.io.FixedLenFeature(shape, types[dtype]) if kind == "fixed"
    else tf.io.VarLenFeature(types[dtype])
    for name, (kind, shape, dtype) in schema.items()
}
batch = tf.constant(records)
def once():
    out = tf.io.parse_example(batch, spec)
    return {k: (v.values if isinstance(v, tf.SparseTensor) else v).numpy() for k, v in out.items()}
once()
for line in sys.stdin:
    start = time.process_time()
    for _ in range(loops):
        once()
    print((time.process_time() - start) / loops / len(records) * 1e6, flush=True)
"""


def detection_records(count: int, seed: int = 0) -> list[bytes]:
    rng = np.random.default_rng(seed)
    records = []
    for k in range(count):
        objects = int(rng.integers(1, 9))
        jpeg = b"\xff\xd8\xff\xe0" + bytes(rng.integers(0, 256, 48_000 - 4, dtype=np.uint8))
        records.append(
            encode(
                {
                    "image/encoded": jpeg,
                    "image/name": f"img_{k:06d}.jpg",
                    "width": np.int64(640),
                    "height": np.int64(480),
                    "objects": rng.integers(0, 80, objects),
                    "bboxes": rng.random(4 * objects, dtype=np.float32),
                }
            )
        )
    return records


def _schema_json(schema: dict[str, FixedLen | VarLen]) -> dict[str, Any]:
    return {
        name: ["fixed", list(spec.shape), spec.dtype]
        if isinstance(spec, FixedLen)
        else ["var", None, spec.dtype]
        for name, spec in schema.items()
    }


class Anchor:
    """TensorFlow's parse in a subprocess: one round per call of :meth:`round`."""

    def __init__(self, python: str, records: list[bytes], schema: dict[str, Any]) -> None:
        self._dir = tempfile.TemporaryDirectory()
        folder = Path(self._dir.name)
        (folder / "records.pkl").write_bytes(pickle.dumps(records))
        (folder / "schema.json").write_text(json.dumps(_schema_json(schema)))
        self._process = subprocess.Popen(
            [
                python,
                "-c",
                ANCHOR,
                str(folder / "records.pkl"),
                str(folder / "schema.json"),
                str(LOOPS),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # TensorFlow's start-up log
            text=True,
        )

    def round(self) -> float:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.write("go\n")
        self._process.stdin.flush()
        return float(self._process.stdout.readline())

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait()
        self._dir.cleanup()


def _cpu_us(function: Callable[[], object]) -> float:
    start = time.process_time()
    for _ in range(LOOPS):
        function()
    return (time.process_time() - start) / LOOPS / BATCH * 1e6


def _measure(
    records: list[bytes], schema: dict[str, FixedLen | VarLen], tf_python: str | None, rounds: int
) -> dict[str, float]:
    sides: dict[str, Callable[[], object]] = {
        "parse": lambda: parse_leaves(records, schema),
        "columns": lambda: decode_batch(records),
        "spans": lambda: decode_batch(records, bytes_as="spans"),
        "parse, spans": lambda: parse_leaves(records, schema, bytes_as="spans"),
        "columns, pure": lambda: decode_columns_pure(records, decode),
    }
    anchor = Anchor(tf_python, records, schema) if tf_python else None
    times: dict[str, list[float]] = {name: [] for name in [*sides, "TF"]}
    try:
        for function in sides.values():
            function()  # warm
        for _ in range(rounds):
            for name, function in sides.items():
                times[name].append(_cpu_us(function))
            if anchor is not None:
                times["TF"].append(anchor.round())
    finally:
        if anchor is not None:
            anchor.close()
    return {name: statistics.median(spent) for name, spent in times.items() if spent}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf-python", help="an interpreter that imports tensorflow (the anchor)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cases = {
        "TFDS-like": (tfds_like(BATCH), TFDS_SCHEMA),
        "detection (48 KB JPEG)": (detection_records(BATCH), DETECTION_SCHEMA),
    }
    print(f"core: {CORE_NAME}; batches of {BATCH:,}; CPU microseconds per record (medians)")
    for name, (records, schema) in cases.items():
        figures = _measure(records, schema, args.tf_python, args.rounds)
        size = statistics.mean(map(len, records))
        tf = figures.get("TF")
        print(f"{name}, {size:.0f} B" + (f": TF {tf:.2f} us" if tf else " (no --tf-python)"))
        for side, spent in figures.items():
            if side != "TF":
                ratio = f"  {spent / tf:5.2f} of TF" if tf else ""
                print(f"  {side:<15}{spent:9.2f} us{ratio}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
