"""Every image TensorFlow's ``tf.image.decode_image`` decodes, decoded by readplan the same.

``tests/data/tfds_images/decode_image_cases.json`` was written by
``tests/data/tfds_images/generate_images.py`` with TensorFlow 2.21: PNGs of every bit depth
and colour type (``tRNS``, Adam7, every row filter, ``gAMA``), BMPs, JPEGs (gray, colour,
CMYK) and GIFs (one frame, animated), each decoded at channels None/1/2/3/4 to uint8 and
uint16, as TFDS's ``Image`` decodes them. Where TF gives pixels readplan gives the same
bits (every one of them); where TF fails readplan refuses, except where ``specs/features.md``
§4 says otherwise (2 channels from a PNG).
"""

from __future__ import annotations

import base64
import functools
import json
from typing import Any

import numpy as np
import pytest

from readplan.errors import FeatureError
from tests.conftest import DATA

pytest.importorskip("PIL")
pytest.importorskip("simplejpeg")

from readplan.metadata._images import decode_image

CASES_FILE = DATA / "tfds_images" / "decode_image_cases.json"


@functools.cache
def _cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(CASES_FILE.read_text(encoding="utf-8"))["cases"]
    return cases


def _expected(result: dict[str, Any]) -> np.ndarray:
    raw = base64.b64decode(result["values"])
    return np.frombuffer(raw, dtype=np.dtype(result["dtype"]).newbyteorder("<")).reshape(
        result["shape"]
    )


def _readplan_only(case: dict[str, Any], channels: int | None) -> bool:
    """readplan decodes a valid PNG (one TF decodes to 1 channel) to 2 channels (gray +
    alpha); TF's decode_image refuses 2 for every image."""
    return case["name"].startswith("png") and channels == 2 and case["decoded"]["1/uint8"]["ok"]


CALLS = [(index, key) for index, case in enumerate(_cases()) for key in sorted(case["decoded"])]


@pytest.mark.parametrize(
    ("index", "key"), CALLS, ids=[f"{_cases()[i]['name']}-{k}" for i, k in CALLS]
)
def test_decode_image_matches_tensorflow(index: int, key: str) -> None:
    case = _cases()[index]
    tf_result = case["decoded"][key]
    channels_text, dtype = key.split("/")
    channels = int(channels_text) or None
    data = base64.b64decode(case["bytes"])
    if not tf_result["ok"]:
        if _readplan_only(case, channels):
            got = decode_image(data, channels=channels, dtype=dtype, where="image")
            assert got.shape[-1] == 2
            assert str(got.dtype) == dtype
            return
        with pytest.raises(FeatureError) as err:
            decode_image(data, channels=channels, dtype=dtype, where="image")
        assert err.value.feature == "image"
        return
    got = decode_image(data, channels=channels, dtype=dtype, where="image")
    expected = _expected(tf_result)
    assert str(got.dtype) == tf_result["dtype"]
    assert list(got.shape) == tf_result["shape"]
    assert np.array_equal(got, expected)


def test_every_kind_of_image_is_covered() -> None:
    kinds = {case["name"].split()[0] for case in _cases()}
    assert kinds == {"png", "bmp", "jpeg", "gif"}
    agreed = sum(result["ok"] for case in _cases() for result in case["decoded"].values())
    assert agreed > 300  # TF decodes most of the 520 calls; each is a case above
