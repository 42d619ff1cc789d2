"""read_frame_data, compiled and pure (specs/native.md §3): a large frame's data read into the
record's own bytes with the bytes after it, and its CRC32C, alike on both cores for spans inside,
across and past the end of a file."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from pathlib import Path

import crc32c as crc32c_package
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan.records.tfrecord import _frame_read

core = importlib.import_module("readplan.records._core")
CONTENT = bytes((i * 7 + i // 251) & 0xFF for i in range(70_000))


@pytest.fixture(scope="module")
def fd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    path = tmp_path_factory.mktemp("frame_read") / "data"
    path.write_bytes(CONTENT)
    handle = os.open(path, os.O_RDONLY)
    yield handle
    os.close(handle)


def outcomes(*args: object) -> object:
    results = []
    for kernel in (core.read_frame_data, _frame_read.read_frame_data_pure):
        try:
            results.append(("value", kernel(*args)))
        except (ValueError, OSError) as error:
            results.append((type(error).__name__, str(error)))
    assert results[0] == results[1]
    return results[0]


@settings(max_examples=150, deadline=None)
@given(
    st.integers(-2, len(CONTENT) + 20),
    st.integers(-2, len(CONTENT) + 20),
    st.integers(-1, 17),
    st.booleans(),
)
def test_read_frame_data_agrees_with_its_twin(
    fd: int, offset: int, length: int, tail: int, verify: bool
) -> None:
    kind, result = outcomes(fd, offset, length, tail, verify)  # type: ignore[misc]
    if offset < 0 or length < 0 or not 0 <= tail <= 16:
        assert kind == "ValueError"
        return
    if offset + length > len(CONTENT):
        assert result is None  # nothing allocated for data the file does not hold
        return
    data, after, crc = result
    assert data == CONTENT[offset : offset + length]
    assert type(data) is bytes
    assert after == CONTENT[offset + length : offset + length + tail]
    assert crc == (crc32c_package.crc32c(data) if verify else 0)


def test_read_frame_data_of_a_closed_descriptor_is_an_os_error(tmp_path: Path) -> None:
    handle = os.open(tmp_path / "gone", os.O_WRONLY | os.O_CREAT)
    os.close(handle)
    assert outcomes(handle, 0, 1, 0, True)[0] == "OSError"  # type: ignore[index]
