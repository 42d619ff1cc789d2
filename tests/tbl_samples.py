"""Deterministic TBL v2 sample sets: the recipes behind the golden files in tests/data/tbl.

The golden files were written by TurboLoader 2.39.0's ``TblWriterV2`` from these recipes
(``test_tbl_oracle.py`` checks that the reference still writes exactly those bytes); they
live in ``GOLDEN_DIR``. ``write_spec`` writes a recipe with readplan's writer.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import NamedTuple

from readplan import tbl
from tests.conftest import DATA

GOLDEN_DIR = DATA / "tbl"


class Spec(NamedTuple):
    data: bytes
    format: str
    width: int
    height: int
    metadata: str | None


FORMAT_NAMES = ("unknown", "jpeg", "png", "webp", "bmp", "tiff", "video_mp4", "video_avi")


def mixed(seed: int, count: int) -> list[Spec]:
    """Payloads LZ4 cannot shrink, constant runs and long repeats; some with JSON metadata."""
    rnd = random.Random(seed)
    specs = []
    for i in range(count):
        size = (0, 1, 7, 100, 1000, 5000, 70_000)[i % 7]
        kind = i % 3
        if kind == 0:
            data = rnd.randbytes(size)
        elif kind == 1:
            data = bytes([rnd.randrange(256)]) * size
        else:
            data = (rnd.randbytes(16) * (size // 16 + 1))[:size]
        metadata = None if i % 4 == 1 else f'{{"label": {i}, "name": "s\\u00e9{i}"}}'
        specs.append(
            Spec(
                data,
                rnd.choice(FORMAT_NAMES),
                rnd.randrange(65536),
                rnd.randrange(65536),
                metadata,
            )
        )
    return specs


def raw_u8(seed: int, count: int, height: int, width: int) -> list[Spec]:
    rnd = random.Random(seed)
    return [
        Spec(rnd.randbytes(height * width * 3), "raw_u8", width, height, None) for _ in range(count)
    ]


# name -> (samples, compression)
GOLDEN: dict[str, tuple[list[Spec], bool]] = {
    "empty": ([], False),
    "empty_lz4": ([], True),
    "mixed": (mixed(1, 14), False),
    "mixed_lz4": (mixed(1, 14), True),
    "raw_u8": (raw_u8(2, 5, 4, 6), False),
}


def write_spec(path: Path, specs: list[Spec], compression: bool) -> bytes:
    """The bytes readplan's writer gives for these samples, written to ``path``."""
    samples = [tbl.Sample(s.data, s.format, s.width, s.height, s.metadata) for s in specs]  # type: ignore[arg-type]
    tbl.write(path, samples, compression=compression)
    return path.read_bytes()
