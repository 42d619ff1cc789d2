"""Round-3 feature declarations TFDS 4.9.10 wrote: a deprecated ``Text(encoder=...)`` and a
``LabeledImage`` (``tests/data/tfds_features3/``, written by ``generate_features3.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from readplan.errors import FeatureError
from readplan.example import encode
from readplan.metadata.features import LabeledImage, SkipDecoding, UnknownFeature, load_features
from tests.conftest import DATA

HERE = DATA / "tfds_features3"
TEXT_ENCODER = json.loads((HERE / "text_encoder.json").read_text(encoding="utf-8"))


def test_a_text_with_an_encoder_loads_and_says_why_it_is_not_read(tmp_path: Path) -> None:
    assert "Deprecated encoder not supported" in TEXT_ENCODER["tfds_from_json_error"]
    (tmp_path / "features.json").write_text(json.dumps(TEXT_ENCODER["features_json"]))
    features = load_features(tmp_path)
    assert features is not None
    words = features["words"]
    assert isinstance(words, UnknownFeature)
    assert "deprecated text encoder" in words.reason
    assert "use_encoder" in words.reason
    with pytest.raises(
        FeatureError, match=r"feature words is a .*Text: features\.json declares"
    ) as err:
        features.decoder()
    assert err.value.feature == "words"
    # The dataset's other features still decode; the token ids come raw on request.
    record = encode({"id": [3], "words": [104, 105]})
    decoded = features.decode(record, decoders={"words": SkipDecoding()})
    assert decoded["id"] == 3
    assert decoded["words"]["words"].tolist() == [104, 105]
    assert features.decode(record, unknown="raw")["words"]["words"].tolist() == [104, 105]


def test_a_labeled_image_has_its_class_names() -> None:
    features = load_features(HERE / "readplan_features3" / "1.0.0")
    assert features is not None
    seg = features["seg"]
    assert isinstance(seg, LabeledImage)
    assert seg.names == ("bg", "cat", "dog", "car")
    assert seg.num_classes == 4
    assert seg.shape == (None, None, 1)
    with pytest.raises(FeatureError, match="one channel"):
        LabeledImage((None, None, 3))
    assert np.dtype(seg.dtype) == np.uint8
