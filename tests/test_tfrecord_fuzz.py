"""Fuzzing the TFRecord reader: any bytes, any damage, only readplan's own errors, no hang.

Files are kept small (a few records of up to 64 bytes) so each example costs milliseconds;
the guarantees do not depend on size.  For damaged uncompressed files two further
properties hold: raise mode yields a prefix of the original records, and skip mode yields
a subsequence of them (a forged frame would need two matching CRCs, odds about 2**-64),
and when nothing was reported the bytes are exactly a valid file of what was read.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from readplan import tfrecord
from readplan.errors import ReadplanError
from readplan.index import build_index
from readplan.tfrecord import CorruptionReport, RecordFile
from tests.assertions import is_subsequence

COMPRESSIONS = [None, "GZIP", "ZLIB"]


def write_temp(data: bytes) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.tfrecord"
        path.write_bytes(data)
        yield path


def outcome(action: Callable[[], object]) -> object:
    """Run ``action``; readplan errors are an allowed outcome, anything else fails the test."""
    try:
        return action()
    except ReadplanError as err:
        return err


def exercise(path: Path, compression: str | None) -> None:
    """Every entry point, in both modes; each must end in a result or a ReadplanError."""
    outcome(lambda: list(tfrecord.read(path, compression=compression)))
    report = CorruptionReport()
    outcome(
        lambda: list(
            tfrecord.read(path, compression=compression, on_corruption="skip", report=report)
        )
    )
    outcome(lambda: tfrecord.count(path, compression=compression))
    outcome(lambda: list(tfrecord.read(path, compression="auto", on_corruption="skip")))

    def random_access() -> None:
        with RecordFile(path, compression=compression) as rf:
            for i in range(len(rf)):
                outcome(lambda: rf[i])  # noqa: B023 - used at once
            outcome(lambda: list(rf.read(len(rf) // 2)))

    outcome(random_access)
    outcome(lambda: build_index(path, compression=compression))
    outcome(lambda: tfrecord.count(path, compression=compression))


def encoded(records: list[bytes], compression: str | None) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f"
        tfrecord.write(path, records, compression=compression)
        return path.read_bytes()


records_lists = st.lists(st.binary(max_size=64), min_size=1, max_size=8)


@st.composite
def mutations(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with bit flips, a cut, or inserted bytes."""
    kind = draw(st.sampled_from(["flip", "cut", "insert", "overwrite"]))
    if kind == "cut":
        return data[: draw(st.integers(0, max(0, len(data) - 1)))]
    at = draw(st.integers(0, len(data)))
    if kind == "insert":
        return data[:at] + draw(st.binary(min_size=1, max_size=24)) + data[at:]
    if kind == "overwrite":
        patch = draw(st.binary(min_size=1, max_size=16))
        return data[:at] + patch + data[at + len(patch) :]
    mutable = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(mutable) - 1))
        mutable[position] ^= 1 << draw(st.integers(0, 7))
    return bytes(mutable)


@settings(max_examples=150)
@given(st.binary(max_size=200), st.sampled_from(COMPRESSIONS))
@example(b"", "GZIP")
@example(b"\x1f\x8b", "GZIP")
@example(b"\x78\x9c", "ZLIB")
@example(b"\xff" * 12, None)
@example(b"\x00" * 11, None)
def test_arbitrary_bytes(data: bytes, compression: str | None) -> None:
    for path in write_temp(data):
        exercise(path, compression)


@settings(max_examples=150)
@given(st.data(), records_lists, st.sampled_from(COMPRESSIONS))
def test_mutated_valid_files(
    data: st.DataObject, records: list[bytes], compression: str | None
) -> None:
    damaged = data.draw(mutations(encoded(records, compression)))
    for path in write_temp(damaged):
        exercise(path, compression)


@settings(max_examples=150)
@given(st.data(), records_lists)
def test_damage_never_invents_records(data: st.DataObject, records: list[bytes]) -> None:
    damaged = data.draw(mutations(encoded(records, None)))
    for path in write_temp(damaged):
        delivered: list[bytes] = []
        with contextlib.suppress(ReadplanError):
            delivered.extend(tfrecord.read(path))
        assert delivered == records[: len(delivered)]
        report = CorruptionReport()
        skipped = list(tfrecord.read(path, on_corruption="skip", report=report))
        assert is_subsequence(skipped, records)
        if not report.events:
            # Nothing reported: the bytes must be exactly a valid file of what was read
            # (a cut at a record boundary leaves such a file).
            assert damaged == encoded(skipped, None)
