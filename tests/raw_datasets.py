"""The TFDS image dataset of tests/data/tfds_raw and its TBL-RAW conversions."""

from __future__ import annotations

from pathlib import Path

import pytest

from readplan.convert import convert

SOURCE = Path(__file__).parent / "data" / "tfds_raw" / "readplan_raw" / "1.0.0"


def converted_raw(tmp_path_factory: pytest.TempPathFactory, size: int) -> Path:
    """SOURCE converted with ``raw=True, image_size=size`` into a new folder."""
    target = tmp_path_factory.mktemp("raw") / "raw"
    convert(SOURCE, target, raw=True, image_size=size)
    return target
