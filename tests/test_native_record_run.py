"""The record run (``record_run``, specs/native.md §3) against its pure twin and against the
frame scan: the same records, the same ``count``/``end``/``stop`` and the same errors, on sound
and damaged buffers whose frames fill several of the compiled run's windows (64 frames or
16 KiB, CRCs three frames at a time) and cross its 1 KiB line between checked windows and
frames copied while they are checked."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import tfrecord
from readplan.records.tfrecord import _scan, _whole_file
from tests.test_native_kernels import MAX_U64, damaged_buffers, frame, scan

core = importlib.import_module("readplan.records._core")

KERNELS = (core.record_run, _scan.record_run_pure)

# Many short frames (several windows, groups of three of unequal sizes) and a few past 1 KiB.
short_or_long = st.binary(max_size=60) | st.binary(min_size=1000, max_size=1100)
many_payloads = st.lists(short_or_long, max_size=150)


@st.composite
def damaged_runs(draw: st.DrawFn) -> bytes:
    """Many frames, then bit flips anywhere (headers, data, stored CRCs) and maybe a cut."""
    data = bytearray(b"".join(frame(p) for p in draw(many_payloads)))
    for _ in range(draw(st.integers(0, 2))):
        if data:
            data[draw(st.integers(0, len(data) - 1))] ^= 1 << draw(st.integers(0, 7))
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return bytes(data)


def run_both(*args: object) -> tuple[str, object]:
    """Every record of a run by both cores, with ``(count, end, stop)`` after it: equal."""
    outcomes = []
    for kernel in KERNELS:
        try:
            run = kernel(*args)
            records = list(run)
            outcomes.append(("value", (records, run.count, run.end, run.stop)))
        except (ValueError, TypeError) as error:
            outcomes.append((type(error).__name__, str(error)))
    assert outcomes[0] == outcomes[1]
    return outcomes[0]


def check_against_the_scan(
    data: bytes, off: int, limit: int, max_length: int, verify: bool
) -> None:
    kind, result = run_both(data, off, limit, max_length, verify)
    assert kind == "value"
    records, count, end, stop = result  # type: ignore[misc]
    expected_count, expected_end, expected_stop, starts, lengths = scan(
        data, off, limit, max_length, verify
    )
    assert (count, end, stop) == (expected_count, expected_end, expected_stop)
    assert records == [data[s + 12 : s + 12 + n] for s, n in zip(starts, lengths)]


@settings(max_examples=300)
@given(
    damaged_runs(),
    st.sampled_from([-1, 0, 1, 2, 3, 64, 65, 130]),
    st.sampled_from([2**31 - 1, 0, 40, 1050, MAX_U64]),
    st.booleans(),
)
def test_a_run_gives_what_the_scan_finds_on_many_damaged_frames(
    data: bytes, limit: int, max_length: int, verify: bool
) -> None:
    check_against_the_scan(data, 0, limit, max_length, verify)


@settings(max_examples=200)
@given(damaged_buffers(), st.integers(0, 64), st.sampled_from([-1, 0, 2, 7]), st.booleans())
def test_a_run_gives_what_the_scan_finds_from_any_offset(
    data: bytes, off: int, limit: int, verify: bool
) -> None:
    check_against_the_scan(data, off, limit, 2**31 - 1, verify)


@given(many_payloads)
def test_a_run_gives_every_sound_frame(payloads: list[bytes]) -> None:
    data = b"".join(frame(p) for p in payloads)
    assert run_both(data, 0, -1, 2**31 - 1, True) == (
        "value",
        (payloads, len(payloads), len(data), _scan.INCOMPLETE),
    )


@pytest.mark.parametrize("bad", range(7))
def test_a_bad_data_crc_stops_the_run_at_that_frame_wherever_it_is_in_its_group(
    bad: int,
) -> None:
    frames = [bytearray(frame(bytes([k]) * 100)) for k in range(7)]
    frames[bad][-1] ^= 0x80
    data = b"".join(frames)
    expected = [bytes([k]) * 100 for k in range(bad)]
    assert run_both(data, 0, -1, 2**31 - 1, True) == (
        "value",
        (expected, bad, 116 * bad, _scan.STOP_DATA_CRC),
    )
    assert run_both(data, 0, -1, 2**31 - 1, False)[1][1] == 7  # type: ignore[index]


def test_a_run_refuses_a_negative_offset_or_cap_and_what_is_not_bytes_alike() -> None:
    assert run_both(b"", -1, -1, 1, True) == (
        "ValueError",
        "record_run: off must be >= 0, got -1",
    )
    assert run_both(b"", 0, -1, -1, True)[0] == "ValueError"
    for kernel in KERNELS:
        with pytest.raises(TypeError):
            kernel("text", 0, -1, 1, True)


def test_a_run_says_it_is_running_until_it_stops_and_then_stays_stopped() -> None:
    data = frame(b"a") + frame(b"b")
    for kernel in KERNELS:
        run = kernel(data, 0, -1, 100, True)
        assert (run.stop, run.count, run.end) == (_scan.RUNNING, 0, 0)
        assert next(run) == b"a"
        assert (run.stop, run.count, run.end) == (_scan.RUNNING, 1, 17)
        assert list(run) == [b"b"]
        assert (run.stop, run.count, run.end) == (_scan.INCOMPLETE, 2, 34)
        assert list(run) == []


def test_a_run_holds_its_buffer_while_it_runs_and_lets_it_go_when_it_stops() -> None:
    buffer = bytearray(frame(b"a") + frame(b"b"))
    run = core.record_run(buffer, 0, -1, 100, True)
    assert next(run) == b"a"
    with pytest.raises(BufferError):
        buffer.extend(b"x")  # exported to the run: it cannot move
    assert list(run) == [b"b"]
    buffer.extend(b"x")  # released once the run stopped


# ----------------------------------------------------------------- the parser's record runs
@pytest.fixture
def records_file(tmp_path: Path) -> str:
    """20,000 frames of 100 bytes, several of the reader's chunks."""
    path = tmp_path / "runs.tfrecord"
    path.write_bytes(b"".join(frame(i.to_bytes(4, "little") * 25) for i in range(20_000)))
    return str(path)


def test_read_delivers_a_file_of_several_chunks_in_order(records_file: str) -> None:
    expected = [i.to_bytes(4, "little") * 25 for i in range(20_000)]
    assert list(tfrecord.read(records_file)) == expected


def test_the_parser_refuses_to_read_on_while_a_run_it_gave_is_running(records_file: str) -> None:
    parser, stream = _whole_file._whole_file_parser(
        records_file, None, True, "raise", None, None, None, True
    )
    runs = parser.record_runs()
    first = next(runs)  # empty: nothing was read yet
    assert list(first) == []
    assert next(runs) == [(0).to_bytes(4, "little") * 25]  # the careful path fills the buffer
    held = next(runs)
    assert next(held) == (1).to_bytes(4, "little") * 25
    with pytest.raises(RuntimeError, match="exhausted"):
        next(runs)
    # The run still reads its chunk, which nothing overwrote.
    assert next(held) == (2).to_bytes(4, "little") * 25
    stream.close()
