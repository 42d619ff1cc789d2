"""Every number the command line takes is range-checked before it is used, with one message
style: ``argument --NAME: TEXT is out of range: pass WHAT, an integer in LOW..HIGH`` (or
``expected WHAT, an integer in LOW..HIGH; got 'TEXT'``), exit status 2, no traceback.

The options are found by walking the parser, so a numeric option added later is covered
(and one added with a bare ``type=int`` fails :func:`test_no_option_takes_an_unchecked_int`).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan.cli import main
from readplan.cli import numbers as cli_numbers
from readplan.cli.main import build_parser
from tests.cli_runs import TOY_ARG
from tests.tfds_toy import TOY_DIR


def _numeric_options() -> Iterator[tuple[str, str, argparse.Action]]:
    """``(subcommand, option, action)`` of every option whose value is a number; the
    options before the subcommand (``--retries``) are listed under ``order``."""
    parser = build_parser()
    for action in parser._actions:
        if action.type is not None and action.option_strings:
            yield "", action.option_strings[-1], action
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in sorted(action.choices.items()):
                for option in sub._actions:
                    if option.type is not None and option.option_strings:
                        yield name, option.option_strings[-1], option


NUMERIC = [(c, o) for c, o, a in _numeric_options() if getattr(a.type, "bounds", None)]
# The arguments each subcommand needs besides the option under test.
BASE = {
    "checkpoint": ["checkpoint", TOY_ARG, "train", "--position", "0"],
    "order": ["order", TOY_ARG, "train", "--count", "1"],
    "plan": ["plan", TOY_ARG, "train"],
    "inspect": ["inspect", str(TOY_DIR / "readplan_toy-train.tfrecord-00000-of-00008")],
    "index": ["index", str(TOY_DIR / "readplan_toy-train.tfrecord-00000-of-00008")],
    "demo": ["demo"],
    "convert": ["convert", str(TOY_DIR), "/nonexistent/out", "--format", "tbl", "--raw"],
    "view": ["view", "--no-browser"],
    "": [],
}


def test_no_option_takes_an_unchecked_int() -> None:
    unchecked = [(c, o) for c, o, a in _numeric_options() if a.type in (int, float)]
    assert unchecked == []
    assert len(NUMERIC) >= 12  # inspect/index/order/checkpoint/plan/demo numbers


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Traceback" not in captured.err
    return captured.err


@pytest.mark.parametrize(("command", "option"), NUMERIC)
@pytest.mark.parametrize("case", range(4))
def test_out_of_range_numbers_are_refused_in_one_style(
    command: str, option: str, case: int, capsys: pytest.CaptureFixture[str]
) -> None:
    action = next(a for c, o, a in _numeric_options() if (c, o) == (command, option))
    low, high = action.type.bounds
    real = isinstance(low, float) or isinstance(high, float)
    # Too large, too small, and not a number of this kind at all.
    text = (["1e400", "-1", "nan", "x"] if real else ["9" * 400, "-" + "9" * 400, "1e3", "x"])[case]
    argv = [*BASE[command], option, text]
    if command == "checkpoint" and option == "--position":
        argv = [*BASE[command][:3], option, text]
    if command == "":
        argv = [option, text, *BASE["order"]]
    err = _refused(argv, capsys)
    assert f"argument {option}" in err or f"argument {'/'.join(action.option_strings)}" in err
    if real:
        shown = f"a number in {low:g}..{high:g}"
        numeric = text != "x"
    else:
        shown = "an integer in " + (
            f"-2**{high.bit_length() - 1}..2**{high.bit_length() - 1}"
            if high.bit_length() > 64
            else f"{low}..{high}"
        )
        numeric = text.lstrip("-").isdigit()
    if numeric:
        # The message quotes at most 40 characters of what was given.
        quoted = re.escape(text[:40])
        assert re.search(rf"{quoted} is out of range: pass .*, {re.escape(shown)}", err), err
    else:
        assert f"{shown}; got {text!r}" in err, err


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_each_option_accepts_exactly_its_range(data: st.DataObject) -> None:
    command, option = data.draw(st.sampled_from(NUMERIC))
    action = next(a for c, o, a in _numeric_options() if (c, o) == (command, option))
    low, high = action.type.bounds
    value = data.draw(st.integers(int(low) - 2**70, int(high) + 2**70))
    if low <= value <= high:
        assert action.type(str(value)) == value
    else:
        with pytest.raises(argparse.ArgumentTypeError, match="is out of range"):
            action.type(str(value))


def test_examples_far_beyond_any_file_are_refused_not_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _refused([*BASE["inspect"], "--examples", "99999999999999999999"], capsys)
    assert "argument --examples: 99999999999999999999 is out of range" in err
    assert cli_numbers.NON_NEGATIVE("9223372036854775807") == 2**63 - 1
