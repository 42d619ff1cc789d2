"""JPEGs decoded one at a time write into memory handed out again once nothing holds it
(specs/features.md §4): an image still held keeps its pixels, whatever is decoded after it,
and the memory of one dropped is what the next image of its size takes."""

from __future__ import annotations

import numpy as np
import pytest

simplejpeg = pytest.importorskip("simplejpeg")

from readplan.metadata._images import decode_image  # noqa: E402
from tests.array_memory import address_of, errors_of_threads  # noqa: E402


def jpeg(seed: int, height: int = 200, width: int = 240) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    return bytes(simplejpeg.encode_jpeg(pixels, quality=90))


def alone(data: bytes) -> np.ndarray:
    """The JPEG decoded into an array of its own, with TensorFlow's choices."""
    return simplejpeg.decode_jpeg(data, colorspace="RGB", fastdct=True, fastupsample=False)


def decoded(data: bytes) -> np.ndarray:
    return decode_image(data, channels=3, dtype="uint8", where="image")


def test_an_image_held_keeps_its_pixels_and_one_dropped_gives_its_memory_to_the_next() -> None:
    first_bytes, second_bytes = jpeg(1), jpeg(2)
    first = decoded(first_bytes)
    second = decoded(second_bytes)
    assert not np.shares_memory(first, second)
    assert np.array_equal(first, alone(first_bytes))
    assert np.array_equal(second, alone(second_bytes))
    where = address_of(second)
    del second
    third = decoded(first_bytes)
    assert address_of(third) == where
    assert np.array_equal(third, alone(first_bytes))
    assert np.array_equal(first, alone(first_bytes))


@pytest.mark.parametrize(
    "hold",
    [lambda a: a[10:20], memoryview, lambda a: a.reshape(-1)[::7]],
    ids=["view", "memoryview", "strided view"],
)
def test_what_is_made_from_an_image_keeps_its_memory_from_the_next(hold: object) -> None:
    data = jpeg(3)
    image = decoded(data)
    kept = hold(image)  # type: ignore[operator]
    snapshot = np.array(kept)
    where = address_of(image)
    del image
    others = [decoded(jpeg(4)) for _ in range(3)]
    assert all(address_of(other) != where for other in others)
    assert np.array_equal(np.array(kept), snapshot)


def test_threads_decoding_side_by_side_never_share_an_image() -> None:
    datas = [jpeg(seed) for seed in range(4)]
    wants = [alone(data) for data in datas]

    def work(k: int, errors: list[str]) -> None:
        held = []
        for _ in range(40):
            held.append(decoded(datas[k]))
            if len(held) > 3:
                held.pop(0)
            if not all(np.array_equal(image, wants[k]) for image in held):
                errors.append(f"thread {k}'s image was written by another")

    assert errors_of_threads(work, 4) == []
