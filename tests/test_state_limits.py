"""States from untrusted places: bounded reads, bounded nesting, and only ReadplanError.

A saved state is about a kilobyte and nests a few levels (``readplan.state.limits``,
``specs/checkpoint.md`` §5).  Whatever arrives instead (``/dev/zero``, JSON nested 100,000
levels deep, a mutated state, ``None``) is refused with a ``ReadplanError`` by every entry
point that takes a state: ``Reader(start=...)``, ``Checkpoint.load``/``from_dict``,
``merge_states``, Grain's ``set_state``, ``readplan.torch``'s ``load_state_dict`` and
``merge_loader_states``, and the command line's ``--from`` and ``--upgrade``.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from readplan import Checkpoint, ReadConfig, Reader, ReadPlan, merge_states
from readplan.cli import main
from readplan.errors import CheckpointError, CheckpointMismatchError, ConfigError, ReadplanError
from readplan.state import codec
from readplan.state.limits import MAX_STATE_DEPTH
from tests.cli_runs import TOY_ARG, run
from tests.tfds_toy import TOY_INFO

CONFIG = ReadConfig(shuffle_files=True, shuffle_seed=3, interleave_cycle_length=4)
PLAN = ReadPlan(TOY_INFO, "train", CONFIG)
ROOT = Path(__file__).resolve().parent.parent


def _state(position: int = 7) -> dict[str, Any]:
    reader = Reader(PLAN)
    for _ in zip(range(position), reader):
        pass
    return reader.state_dict()


STATE = _state()


def _nested(depth: int, leaf: Any = 0) -> Any:
    """Lists and objects alternating ``depth`` levels deep, built without recursion."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@pytest.fixture
def oversized(tmp_path: Path) -> Path:
    """A (sparse) file one byte longer than the default bound.  Endless inputs such as
    ``/dev/zero`` are read only in :func:`test_state_reads_stay_within_a_memory_limit`'s
    child, whose address space is capped, so that no regression can exhaust the host."""
    path = tmp_path / "big.json"
    with open(path, "wb") as handle:
        handle.truncate((16 << 20) + 1)
    return path


# -- bounded reads --------------------------------------------------------------------


def test_a_state_file_past_the_bound_is_refused(oversized: Path) -> None:
    for load in (lambda: Reader(PLAN, start=oversized), lambda: Checkpoint.load(oversized)):
        with pytest.raises(CheckpointError) as caught:
            load()
        message = str(caught.value)
        assert str(oversized) in message
        assert f"more than {16 << 20} bytes" in message
        assert "READPLAN_MAX_STATE_BYTES" in message


def test_the_bound_is_configurable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    saved = tmp_path / "state.json"
    Reader(PLAN, start=STATE).save(saved)
    size = saved.stat().st_size
    assert Checkpoint.load(saved, max_bytes=size).position == 7
    with pytest.raises(CheckpointError, match=f"more than {size - 1} bytes"):
        Checkpoint.load(saved, max_bytes=size - 1)
    monkeypatch.setenv("READPLAN_MAX_STATE_BYTES", str(size - 1))
    with pytest.raises(CheckpointError, match=f"more than {size - 1} bytes"):
        Reader(PLAN, start=saved)
    monkeypatch.setenv("READPLAN_MAX_STATE_BYTES", "lots")
    with pytest.raises(ConfigError, match="READPLAN_MAX_STATE_BYTES='lots'"):
        Reader(PLAN, start=saved)
    monkeypatch.delenv("READPLAN_MAX_STATE_BYTES")
    with pytest.raises(ConfigError, match="max_bytes=0"):
        Checkpoint.load(saved, max_bytes=0)


def test_the_command_line_reads_states_with_the_bound(
    capsys: pytest.CaptureFixture[str], oversized: Path
) -> None:
    for argv in (
        ["order", TOY_ARG, "train", "--from", str(oversized)],
        ["checkpoint", TOY_ARG, "train", "--upgrade", str(oversized)],
    ):
        status, out, err = run(capsys, *argv)
        assert status == 2
        assert out == ""
        assert f"{oversized}: more than {16 << 20} bytes" in err


def test_state_reads_stay_within_a_memory_limit() -> None:
    """In a child whose address space is capped at 256 MiB above what it uses after
    imports: before, ``/dev/zero`` as a state ran into MemoryError at 1.3-1.7 GB."""
    script = textwrap.dedent(
        """
        import resource, sys
        from readplan import Checkpoint, ReadConfig, Reader, ReadPlan
        from readplan.cli import main
        from readplan.errors import ReadplanError
        from tests.tfds_toy import TOY_DIR, TOY_INFO

        def vm_bytes():
            for line in open("/proc/self/status"):
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
        cap = vm_bytes() + (256 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        plan = ReadPlan(TOY_INFO, "train")
        for attempt in (lambda: Reader(plan, start="/dev/zero"),
                        lambda: Checkpoint.load("/dev/zero"),
                        lambda: Checkpoint.from_json("[" * 100000 + "]" * 100000)):
            try:
                attempt()
            except ReadplanError:
                pass
        assert main(["order", str(TOY_DIR), "train", "--from", "/dev/zero"]) == 2
        assert main(["checkpoint", str(TOY_DIR), "train", "--upgrade", "/dev/zero"]) == 2
        print("bounded")
        """
    )
    # The child imports the readplan this process runs (and this repository's tests).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*(p for p in sys.path if p), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "bounded"


# -- nesting and types ----------------------------------------------------------------


def test_deeply_nested_state_files_are_refused(tmp_path: Path) -> None:
    for name, text in {
        "brackets": "[" * 100_000 + "]" * 100_000,
        "inside": json.dumps({**STATE, "reader": "X"}).replace('"X"', "[" * 3000 + "]" * 3000),
    }.items():
        path = tmp_path / f"{name}.json"
        path.write_text(text)
        with pytest.raises(CheckpointError, match=str(path)):
            Reader(PLAN, start=path)


def test_deeply_nested_states_in_memory_are_refused() -> None:
    deep = _nested(100_000)
    inside = {**STATE, "reader": deep}
    for attempt in (
        lambda: Reader(PLAN, start=inside),
        lambda: Checkpoint.from_dict(inside),
        lambda: merge_states([inside]),
    ):
        with pytest.raises(CheckpointError, match=f"more than {MAX_STATE_DEPTH} levels"):
            attempt()
    with pytest.raises(CheckpointError, match="merge_states takes the states"):
        merge_states([deep])


def test_a_state_nested_as_deep_as_the_bound_is_read() -> None:
    """The bound leaves room: a state inside MAX_STATE_DEPTH - 2 levels of loader state."""
    torch_module = pytest.importorskip("readplan.torch")
    wrapped = _nested(MAX_STATE_DEPTH - 2, STATE)
    merged = torch_module.merge_loader_states([wrapped])
    assert Checkpoint.from_dict(merged).position == 7


def test_grain_states_nested_deeply_are_refused() -> None:
    grain_module = pytest.importorskip("readplan.grain")
    iterator = iter(grain_module.PlanIterDataset(PLAN))
    deep_text = "[" * 100_000 + "]" * 100_000
    for state in (
        _nested(100_000),
        {"epoch": 0, "position": 7, "checkpoint": deep_text},
        {
            "epoch": 0,
            "position": 7,
            "checkpoint": json.dumps({**STATE, "reader": "X"}).replace(
                '"X"', "[" * 3000 + "]" * 3000
            ),
        },
        {1: 2, "epoch": 0},
    ):
        with pytest.raises(CheckpointError):
            iterator.set_state(state)  # type: ignore[arg-type]


def test_torch_states_nested_deeply_or_missing_are_refused() -> None:
    torch_module = pytest.importorskip("readplan.torch")
    with pytest.raises(CheckpointError, match="levels deep"):
        torch_module.merge_loader_states([_nested(100_000)])
    with pytest.raises(CheckpointError, match="levels deep"):
        torch_module.merge_loader_states([{"dataset_state": {**STATE, "reader": _nested(10**5)}}])
    dataset = torch_module.ReadplanIterableDataset(PLAN)
    for state in (None, [STATE], "state.json"):
        with pytest.raises(CheckpointError, match="load_state_dict takes a state"):
            dataset.load_state_dict(state)  # type: ignore[arg-type]


def test_a_state_of_the_whole_split_restored_into_a_part_names_the_split() -> None:
    half = ReadPlan(TOY_INFO, "train[:50%]", CONFIG)
    for attempt in (lambda: Reader(half, start=STATE), lambda: Reader(half).load_state_dict(STATE)):
        with pytest.raises(CheckpointMismatchError) as caught:
            attempt()
        assert caught.value.differences["split"] == ("train", "train[:50%]")
        assert "split: checkpoint has 'train', this plan has 'train[:50%]'" in str(caught.value)


# -- mutated states: nothing but ReadplanError ------------------------------------------


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found.extend(_paths(child, (*prefix, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.extend(_paths(child, (*prefix, index)))
    return found


def _replaced(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    copied = copy.deepcopy(document)
    holder = copied
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    return copied


HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([10**5000, -(10**5000), float("nan"), float("inf"), 1e308, -0.0]),
    st.text(max_size=20),
    st.builds(_nested, st.integers(MAX_STATE_DEPTH - 3, 3000)),
    st.lists(st.integers(-3, 3), max_size=5),
    st.dictionaries(st.text(max_size=5), st.integers(-3, 3), max_size=3),
    st.just([[4, 501, 1979263143]] * 10_000),
)
ENTRY_POINTS = {
    # load_state_dict, not start=: a str there is a path, whose absence is the OS's error.
    "Reader.load_state_dict": lambda state: Reader(PLAN).load_state_dict(state),
    "Checkpoint.from_dict": Checkpoint.from_dict,
    "merge_states": lambda state: merge_states([state, state]),
}


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), resealed=st.booleans(), entry=st.sampled_from(sorted(ENTRY_POINTS)))
def test_mutated_states_raise_only_readplan_errors(
    data: st.DataObject, resealed: bool, entry: str
) -> None:
    paths = _paths(STATE)
    path = data.draw(st.sampled_from(paths))
    mutated = _replaced(STATE, path, data.draw(HOSTILE))
    if resealed and isinstance(mutated, dict):
        # Digests recomputed, as an editor who knows the format would: the fields' own
        # checks must hold then too.
        body = {k: v for k, v in mutated.items() if k != "integrity"}
        # Too deep or too long to digest here: the unsealed document is tried.
        with contextlib.suppress(RecursionError, ValueError):
            mutated = codec.seal(body)
    with contextlib.suppress(ReadplanError):
        ENTRY_POINTS[entry](mutated)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cut=st.integers(0, 2000),
    insert=st.sampled_from(["[" * 5000, "{", '"', "1" * 5000, "\x00", "\ufffd", "]"]),
)
def test_mutated_state_files_raise_only_readplan_errors(
    tmp_path_factory: pytest.TempPathFactory, cut: int, insert: str
) -> None:
    text = json.dumps(STATE)
    cut = min(cut, len(text))
    path = tmp_path_factory.mktemp("mutated") / "state.json"
    path.write_text(text[:cut] + insert + text[cut:])
    with contextlib.suppress(ReadplanError):
        Reader(PLAN, start=path)
    status = main(["order", TOY_ARG, "train", "--shuffle-files", "--seed", "3",
                   "--cycle-length", "4", "--from", str(path), "--count", "1"])  # fmt: skip
    assert status in (0, 2)


def test_the_viewer_takes_states_with_the_same_bounds(tmp_path: Path) -> None:
    from readplan.viewer import orders, roots

    deep = ('{"k":' + "[" * 50_000 + "]" * 50_000 + "}").encode()
    with pytest.raises(CheckpointError, match="not a saved state"):
        orders.parse_state(deep)
    path = tmp_path / "deep.json"
    path.write_bytes(deep)
    assert roots._is_state(str(path)) is False
    saved = tmp_path / "state.json"
    Reader(PLAN, start=STATE).save(saved)
    assert roots._is_state(str(saved)) is True
