"""The reader's compiled kernels (``take_runs``, ``cut_frames_into``) against their
pure-Python twins (specs/native.md): the same results, the same side effects and the same
errors on random, edge-case and damaged inputs.

The compiled module is imported directly, so these tests compare both cores whichever one the
seam chose for the rest of the suite (``READPLAN_PURE=1`` runs the suite on the pure path).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from readplan.errors import CorruptRecordError
from readplan.reading import run_streams, spans
from tests.test_native_kernels import frame

core = importlib.import_module("readplan.records._core")


def outcome(kernel: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    try:
        return "value", kernel(*args)
    except (ValueError, TypeError) as error:
        return type(error).__name__, str(error)


# ------------------------------------------------------------------------- cut_frames_into
def cut_in_order(kernel: Callable[..., bool]) -> Callable[..., list[Any] | None]:
    """The kernel's cut of frames ``begins``/``ends`` into a fresh list, frame i at place i:
    the payloads, or ``None`` when it reports damage (the list then untouched)."""

    def cut(data: bytes, begins: np.ndarray, ends: np.ndarray, *checks: Any) -> list[Any] | None:
        out: list[Any] = [None] * len(begins)
        placed = kernel(out, np.arange(len(begins), dtype=np.int64), data, begins, ends, *checks)
        if not placed:
            assert out == [None] * len(begins)
            return None
        return out

    return cut


KERNELS = (cut_in_order(core.cut_frames_into), cut_in_order(spans.cut_frames_into_pure))


@st.composite
def framed_spans(draw: st.DrawFn) -> tuple[bytes, list[bytes], np.ndarray, np.ndarray]:
    """Frames with garbage between some of them: the bytes, the payloads, their spans."""
    payloads = draw(st.lists(st.binary(max_size=200), max_size=10))
    data, begins, ends = b"", [], []
    for payload in payloads:
        data += draw(st.binary(max_size=8) | st.just(b""))
        begins.append(len(data))
        data += frame(payload)
        ends.append(len(data))
    data += draw(st.binary(max_size=8))
    return data, payloads, np.array(begins, dtype=np.int64), np.array(ends, dtype=np.int64)


@given(framed_spans(), st.booleans())
def test_cut_frames_cuts_every_sound_frame(spanned: Any, headers: bool) -> None:
    data, payloads, begins, ends = spanned
    for kernel in KERNELS:
        assert kernel(data, begins, ends, headers, 2**31) == payloads


@st.composite
def damaged_spans(draw: st.DrawFn) -> tuple[bytes, np.ndarray, np.ndarray]:
    """Sound spans, then some of: bit flips, spans moved, spans outside the bytes."""
    data, _, begins, ends = draw(framed_spans())
    raw = bytearray(data)
    for _ in range(draw(st.integers(0, 3))):
        if raw:
            at = draw(st.integers(0, len(raw) - 1))
            raw[at] ^= 1 << draw(st.integers(0, 7))
    begins, ends = begins.copy(), ends.copy()
    for _ in range(draw(st.integers(0, 2))):
        if len(begins):
            k = draw(st.integers(0, len(begins) - 1))
            column = draw(st.sampled_from([begins, ends]))
            column[k] += draw(st.integers(-40, 40))
    return bytes(raw), begins, ends


@given(damaged_spans(), st.booleans(), st.sampled_from([0, 20, 100, 2**31, 2**64 - 1]))
def test_cut_frames_agrees_with_its_twin_on_damaged_spans(
    damaged: Any, headers: bool, max_length: int
) -> None:
    data, begins, ends = damaged
    native = outcome(KERNELS[0], data, begins, ends, headers, max_length)
    assert native == outcome(KERNELS[1], data, begins, ends, headers, max_length)


def test_cut_frames_refuses_every_damage_it_checks() -> None:
    good = frame(b"payload!")
    flipped_length = bytes([good[0] ^ 1]) + good[1:]
    cases = {
        "data CRC": good[:-1] + bytes([good[-1] ^ 1]),
        "length CRC": good[:8] + bytes([good[8] ^ 1]) + good[9:],
    }
    for kernel in KERNELS:
        for name, damaged in cases.items():
            spans_of = np.array([0], dtype=np.int64), np.array([len(damaged)], dtype=np.int64)
            assert kernel(damaged, *spans_of, True, 100) is None, name
        one = np.array([0], dtype=np.int64), np.array([len(good)], dtype=np.int64)
        assert kernel(good, *one, True, 7) is None  # a payload over the cap
        assert kernel(flipped_length, *one, True, 100) is None  # length field not the span's
        # Without the header checks a wrong length field passes: the walk checked it.
        assert kernel(flipped_length, *one, False, 100) == [b"payload!"]
        short = np.array([0], dtype=np.int64), np.array([15], dtype=np.int64)
        assert kernel(good, *short, False, 100) is None  # fewer than 16 framing bytes


def test_cut_frames_refuses_spans_outside_the_bytes() -> None:
    good = frame(b"x")
    for begins, ends in (([-1], [16]), ([0], [len(good) + 1]), ([5], [4]), ([0], [1, 2])):
        args = good, np.array(begins, dtype=np.int64), np.array(ends, dtype=np.int64), True, 9
        native = outcome(KERNELS[0], *args)
        assert native[0] == "ValueError"
        assert native == outcome(KERNELS[1], *args)


@given(
    st.lists(st.binary(max_size=40), max_size=12).flatmap(
        lambda payloads: st.tuples(
            st.just(payloads), st.permutations(range(len(payloads))), st.integers(0, 3)
        )
    )
)
def test_cut_frames_into_puts_each_payload_at_its_place(drawn: Any) -> None:
    payloads, order, extra = drawn
    data = b"".join(map(frame, payloads))
    sizes = np.array([16 + len(p) for p in payloads], dtype=np.int64)
    ends = np.cumsum(sizes)
    begins = ends - sizes
    places = np.array(order, dtype=np.int64) + extra
    expected: list[Any] = ["kept"] * (len(payloads) + extra)
    for payload, place in zip(payloads, places.tolist()):
        expected[place] = payload
    for kernel in (core.cut_frames_into, spans.cut_frames_into_pure):
        out: list[Any] = ["kept"] * (len(payloads) + extra)
        assert kernel(out, places, data, begins, ends, True, 2**31) is True
        assert out == expected


@given(
    st.lists(st.integers(-3, 12), max_size=6),
    st.integers(0, 6),
    st.integers(0, 8),
    st.booleans(),
)
def test_cut_frames_into_agrees_with_its_twin_on_any_places(
    places: list[int], frames: int, size: int, damaged: bool
) -> None:
    payloads = [bytes([k]) * k for k in range(frames)]
    data = bytearray(b"".join(map(frame, payloads)))
    if damaged and data:
        data[-1] ^= 1
    sizes = np.array([16 + len(p) for p in payloads], dtype=np.int64)
    ends = np.cumsum(sizes)
    begins = ends - sizes
    at = np.array(places, dtype=np.int64)
    results = []
    for kernel in (core.cut_frames_into, spans.cut_frames_into_pure):
        out: list[Any] = list(range(size))
        results.append((outcome(kernel, out, at, bytes(data), begins, ends, True, 99), out))
    assert results[0] == results[1]
    if len(places) != frames or any(not 0 <= p < size for p in places):
        assert results[0][0][0] == "ValueError"
        assert results[0][1] == list(range(size))  # refused before any frame


# ------------------------------------------------------------------------------- take_runs
class FakeShard:
    """A shard whose stream gives ``records``, then raises ``error`` (or ends)."""

    def __init__(self, records: list[int], error: Exception | None, streaming: bool) -> None:
        self.records, self.error = records, error
        self.stream: Iterator[Any] | None = self._give() if streaming else None

    def _give(self) -> Iterator[Any]:
        yield from self.records
        if self.error is not None:
            raise self.error


def drawn_shards(
    draw: st.DrawFn, files: list[int], errors: list[Any], record: Callable[[int, int], Any]
) -> dict[int, tuple[list[Any], Any, bool]]:
    """Fake shards' specs for the files of ``files`` and a few more, some not open: records
    ``record(f, k)``, then one of ``errors`` (None: the stream ends), and whether it streams."""
    shards = {}
    for f in set(files) | set(draw(st.lists(st.integers(0, 4), max_size=3))):
        if draw(st.integers(0, 5)) == 0:
            continue  # not open yet
        error = draw(st.sampled_from(errors))
        records = [record(f, k) for k in range(draw(st.integers(0, 30)))]
        shards[f] = (records, error, draw(st.integers(0, 6)) > 0)
    return shards


@st.composite
def run_tables(draw: st.DrawFn) -> dict[str, Any]:
    files = draw(st.lists(st.integers(0, 4), max_size=12))
    errors = [None, None, CorruptRecordError("damage"), OSError(5, "io")]
    shards = drawn_shards(draw, files, errors, lambda f, k: f * 1000 + k)
    n = len(files)
    counts = draw(st.lists(st.integers(0, 6) | st.just(-1), min_size=n, max_size=n))
    closing = draw(st.lists(st.integers(0, 5).map(lambda v: v == 0), min_size=n, max_size=n))
    lo = draw(st.integers(-1, n + 1))
    hi = draw(st.integers(-1, n + 1))
    table = {"files": files, "shards": shards, "counts": counts, "closing": closing}
    return {**table, "lo": lo, "hi": hi}


def run(kernel: Callable[..., Any], table: dict[str, Any]) -> tuple[Any, ...]:
    shards = {f: FakeShard(*spec) for f, spec in table["shards"].items()}
    out: list[Any] = ["before"]
    args = out, shards, table["files"], table["counts"], table["closing"], table["lo"], table["hi"]
    result = outcome(kernel, *args)
    if result[0] == "value":
        k, got, how = result[1]
        if isinstance(how, Exception):
            how = (type(how).__name__, how.args)
        result = ("value", (k, got, how))
    # What each stream still holds: the kernel took no more than it appended.
    return result, out, {f: rest(s.stream) for f, s in shards.items()}


def rest(stream: Iterator[Any] | None) -> Any:
    if stream is None:
        return None
    left: list[Any] = []
    try:
        left.extend(stream)
    except Exception as error:
        left.append(type(error).__name__)
    return left


@given(run_tables())
def test_take_runs_agrees_with_its_twin(table: dict[str, Any]) -> None:
    native = run(core.take_runs, table)
    assert native == run(run_streams.take_runs_pure, table)


def test_take_runs_takes_runs_until_one_it_cannot_serve() -> None:
    records = {0: list(range(10)), 1: list(range(100, 110))}
    shards = {f: FakeShard(r, CorruptRecordError("bad"), True) for f, r in records.items()}
    shards[2] = FakeShard([7], None, False)  # open, read by the shard itself
    files, counts = [0, 1, 0, 2, 1], [3, 2, 4, 1, 1]
    for kernel in (core.take_runs, run_streams.take_runs_pure):
        fresh = {f: FakeShard(s.records, s.error, s.stream is not None) for f, s in shards.items()}
        out: list[Any] = []
        closing = [False] * 5
        assert kernel(out, fresh, files, counts, closing, 0, 5) == (3, 0, run_streams.RUN_NOT_TAKEN)
        assert out == [0, 1, 2, 100, 101, 3, 4, 5, 6]
        # A run marked closing is left to the caller, as is a file with no shard.
        assert kernel(out, fresh, files, counts, [False, True, False, False, False], 1, 3)[:2] == (
            1,
            0,
        )
        assert kernel(out, fresh, [9], [1], [False], 0, 1) == (0, 0, run_streams.RUN_NOT_TAKEN)
        # A stream that raises: the records before the error are appended, the error returned.
        k, got, error = kernel(out, fresh, [0], [5], [False], 0, 1)
        assert (k, got, type(error)) == (0, 3, CorruptRecordError)
        assert out[-3:] == [7, 8, 9]
        # A stream that ended: how many of the run's records it still gave.
        ended = {0: FakeShard([1, 2], None, True)}
        assert kernel(out, ended, [0], [3], [False], 0, 1) == (0, 2, run_streams.RUN_ENDED)


def test_take_runs_refuses_tables_that_do_not_fit() -> None:
    for kernel in (core.take_runs, run_streams.take_runs_pure):
        with pytest.raises(ValueError, match="one entry per run"):
            kernel([], {}, [0], [1, 2], [False], 0, 1)
        with pytest.raises(ValueError, match="not within"):
            kernel([], {}, [0], [1], [False], 0, 2)
        with pytest.raises(ValueError, match="counts -1"):
            kernel([], {0: FakeShard([1], None, True)}, [0], [-1], [False], 0, 1)


def test_take_runs_survives_streams_that_shrink_its_lists() -> None:
    """A stream runs Python, which may empty the run lists under the kernel: the next run's
    entries are gone, an IndexError, in both cores (the compiled one read a missing entry)."""
    for kernel in (core.take_runs, run_streams.take_runs_pure):
        files, counts, closing = [0, 0, 0], [1, 1, 1], [False, False, False]

        shard = FakeShard([], None, False)
        shard.stream = shrinking(files, counts, closing)
        out: list[Any] = []
        with pytest.raises(IndexError):
            kernel(out, {0: shard}, files, counts, closing, 0, 3)
        assert out == [0]


def shrinking(*lists: list[Any]) -> Iterator[int]:
    """A stream that empties ``lists`` before each record it gives."""
    for value in range(10):
        for values in lists:
            del values[:]
        yield value


def test_take_runs_looks_a_run_up_by_its_file_as_it_is_after_closing_was_read() -> None:
    """Reading ``closing[k]`` runs Python (its ``__bool__``) that may replace ``files[k]``:
    both cores then look up the file the list holds after that read, and the object replaced
    is never touched again (the compiled core held it borrowed, a use after free)."""

    class Key:
        def __hash__(self) -> int:
            return 1

    for kernel in (core.take_runs, run_streams.take_runs_pure):
        files: list[Any] = [Key()]

        class Closing:
            def __init__(self, files: list[Any]) -> None:
                self.files = files

            def __bool__(self) -> bool:
                self.files[0] = 5  # drops the only reference to the Key
                return False

        shards = {5: FakeShard([b"r"], None, True)}
        out: list[Any] = []
        assert kernel(out, shards, files, [1], [Closing(files)], 0, 1) == (
            1,
            0,
            run_streams.RUN_NOT_TAKEN,
        )
        assert out == [b"r"]


class _ShardsDict(dict):  # type: ignore[type-arg]
    def get(self, key: Any, default: Any = None) -> Any:
        return FakeShard([b"from get"], None, True)


@pytest.mark.parametrize("shards", [_ShardsDict(), {0: None}.items(), None])
def test_both_cores_take_only_a_dict_of_shards(shards: Any) -> None:
    """A subclass's lookups would differ between the cores (the compiled one reads the dict
    itself): both refuse anything but a dict, with the same words."""
    messages = set()
    for kernel in (core.take_runs, run_streams.take_runs_pure):
        with pytest.raises(TypeError, match="take_runs: shards must be a dict") as caught:
            kernel([], shards, [0], [1], [False], 0, 1)
        messages.add(str(caught.value))
    assert len(messages) == 1
