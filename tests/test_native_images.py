"""The image batch kernel against its numpy twin (specs/native.md §8): the same bits in every
output type and layout, the same errors; and both against the definition."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from readplan.records.tbl._gather import KINDS, gather_images_pure, normalization

core = importlib.import_module("readplan.records._core")
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


@st.composite
def batches(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    n, h, w = draw(st.integers(1, 6)), draw(st.integers(0, 5)), draw(st.integers(0, 5))
    images = draw(hnp.arrays(np.uint8, (n, h, w, 3)))
    rows = np.array(draw(st.lists(st.integers(0, n - 1), max_size=6)), dtype=np.int64)
    flips = draw(st.none() | st.just(np.array([k % 2 for k in range(len(rows))], np.uint8)))
    return images, rows, flips


def both(images, rows, flips, scale, shift, shape, kind, channels_last):  # type: ignore[no-untyped-def]
    dtype = np.dtype(KINDS[kind])
    native, pure = np.zeros(shape, dtype), np.zeros(shape, dtype)
    n, h, w, _ = images.shape
    core.gather_images(images, n, h, w, rows, flips, scale, shift, native, kind, channels_last)
    gather_images_pure(images, rows, flips, scale, shift, pure, kind, channels_last)
    assert native.tobytes() == pure.tobytes()
    return native


@settings(max_examples=150)
@given(batches(), st.integers(0, 2), st.booleans())
def test_the_kernel_and_its_twin_give_the_same_bits(
    drawn: tuple[np.ndarray, np.ndarray, np.ndarray | None], kind: int, channels_last: bool
) -> None:
    images, rows, flips = drawn
    _, h, w, _ = images.shape
    shape = (len(rows), h, w, 3) if channels_last else (len(rows), 3, h, w)
    scale, shift = normalization(MEAN, STD)
    out = both(images, rows, flips, scale, shift, shape, kind, channels_last)
    # The definition, written out: pick, mirror, lay out, normalize.
    expected = images[rows].copy()
    if flips is not None:
        expected[flips == 1] = expected[flips == 1][:, :, ::-1]
    if not channels_last:
        expected = expected.transpose(0, 3, 1, 2)
    if kind == 0:
        assert np.array_equal(out, expected)
    else:
        axis = (1, 1, 1, 3) if channels_last else (1, 3, 1, 1)
        ideal = (expected / 255.0 - np.reshape(MEAN, axis)) / np.reshape(STD, axis)
        assert np.allclose(
            out.astype(np.float64), ideal, rtol=2e-3 if kind == 2 else 1e-5, atol=2e-3
        )


# Any coefficients whose values stay within float16's range (the twin's numpy would warn
# beyond it): every table entry of the kernel is the definition's value, rounded the same.
@settings(max_examples=100)
@given(
    batches(),
    st.integers(1, 2),
    st.booleans(),
    st.tuples(*[st.floats(-100, 100, width=32)] * 3),
    st.tuples(*[st.floats(-30000, 30000, width=32)] * 3),
)
def test_any_scale_and_shift_give_the_same_bits(
    drawn: tuple[np.ndarray, np.ndarray, np.ndarray | None],
    kind: int,
    channels_last: bool,
    scale: tuple[float, float, float],
    shift: tuple[float, float, float],
) -> None:
    images, rows, flips = drawn
    _, h, w, _ = images.shape
    shape = (len(rows), h, w, 3) if channels_last else (len(rows), 3, h, w)
    both(images, rows, flips, scale, shift, shape, kind, channels_last)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(0, 2), st.booleans(), st.integers(0, 99))
def test_larger_images_give_the_same_bits(
    h: int, w: int, kind: int, channels_last: bool, seed: int
) -> None:
    # Every pixel value in every channel, flipped and not, in images wider than a few bytes.
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (4, h, w, 3), dtype=np.uint8)
    rows = np.array([3, 0, 3, 1, 2], np.int64)
    flips = np.array([1, 0, 0, 1, 1], np.uint8)
    shape = (5, h, w, 3) if channels_last else (5, 3, h, w)
    scale, shift = normalization(MEAN, STD)
    both(images, rows, flips, scale, shift, shape, kind, channels_last)


@given(st.integers(0, 2**32 - 1))
def test_half_rounding_is_numpys_for_every_float32(bits: int) -> None:
    value = np.array([bits], dtype=np.uint32).view(np.float32)
    with np.errstate(over="ignore"):
        expected = int(value.astype(np.float16).view(np.uint16)[0])
    assert core.half_of(float(value[0])) == expected


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rows": np.array([0, 5], np.int64)}, "a row is outside"),
        ({"rows": np.array([-1, 0], np.int64)}, "a row is outside"),
        ({"flips": np.zeros(3, np.uint8)}, "flips must hold one byte per row"),
        ({"out": np.zeros((2, 4, 4, 3), np.float32)}, "out must hold"),
        ({"out": np.zeros((2, 4, 4, 3), np.uint8), "kind": 1}, "out must hold"),
    ],
)
def test_both_refuse_arguments_that_do_not_fit(change: dict[str, object], message: str) -> None:
    images = np.zeros((5, 4, 4, 3), np.uint8)
    args = {
        "rows": np.array([0, 1], np.int64),
        "flips": None,
        "out": np.zeros((2, 4, 4, 3), np.uint8),
        "kind": 0,
        **change,
    }
    rows, flips, out, kind = args["rows"], args["flips"], args["out"], args["kind"]
    ones = (1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match=message):
        core.gather_images(images, 5, 4, 4, rows, flips, ones, ones, out, kind, True)
    with pytest.raises(ValueError, match=message):
        gather_images_pure(images, rows, flips, ones, ones, out, kind, True)  # type: ignore[arg-type]


def test_the_kernel_refuses_images_of_another_size() -> None:
    images = np.zeros((5, 4, 4, 3), np.uint8)
    out = np.zeros((1, 4, 4, 3), np.uint8)
    rows = np.array([0], np.int64)
    with pytest.raises(ValueError, match="images must hold n"):
        core.gather_images(images, 6, 4, 4, rows, None, (1.0,) * 3, (0.0,) * 3, out, 0, True)
