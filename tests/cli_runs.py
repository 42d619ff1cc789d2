"""Running the command line in-process, as the test_cli_*.py modules do."""

from __future__ import annotations

import pytest

from readplan.cli import main
from tests.tfds_toy import TOY_DIR

TOY_ARG = str(TOY_DIR)  # as the command line receives it


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``readplan ARGV...``: its exit status, standard output and standard error."""
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err
