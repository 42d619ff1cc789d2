"""Sequences of fixed-length Sequences: TFDS writes them but cannot read them; readplan does.

``tests/data/tfds_fixed_sequences/`` holds the dataset TFDS 4.9.10 wrote
(``generate_fixed_sequences.py``), the examples given to it and the error TFDS's
``as_dataset`` raises on each such feature. TFDS stores them as ragged entries
(``<key>/ragged_flat_values``, ``<key>/ragged_row_lengths_0``); readplan reads those
(``specs/features.md`` §3.8): one array when every Sequence below the outermost has a fixed
length, rows of the ragged form otherwise.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from readplan import tfrecord
from readplan.errors import ExampleError
from readplan.example import encode
from readplan.metadata.features import FeaturesDict, Sequence, Tensor, load_features
from tests.conftest import DATA

HERE = DATA / "tfds_fixed_sequences"
ORACLE = json.loads((HERE / "fixed_sequences.json").read_text(encoding="utf-8"))
DIRECTORY = HERE / ORACLE["dataset_dir"]


def _as_lists(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.dtype == object:
        return [_as_lists(row) for row in value]
    return np.asarray(value).tolist()


def test_tfds_cannot_read_them() -> None:
    assert all(error and "ragged_flat_values" in error for error in ORACLE["tfds_errors"].values())
    assert "rows3/ragged_flat_values" in ORACLE["stored_entries"]


def test_readplan_reads_what_was_written() -> None:
    features = load_features(DIRECTORY)
    assert features is not None
    file = DIRECTORY / "readplan_seqfix-train.tfrecord-00000-of-00001"
    decoded = list(map(features.decoder(), tfrecord.read(file)))
    decoded += features.batch_decoder()(list(tfrecord.read(file)))
    assert len(decoded) == 2 * len(ORACLE["written"])
    for example in decoded:
        written = ORACLE["written"][str(int(example["id"]))]
        rows3 = example["rows3"]
        assert rows3.dtype == np.int64
        assert rows3.shape == (len(written["rows3"]), 3)
        assert rows3.tolist() == written["rows3"]
        assert example["square"].shape == (2, 2)
        assert example["square"].tolist() == written["square"]
        assert example["points"].dtype == np.float32
        assert example["points"].tolist() == written["points"]
        # The inner Sequence has no fixed length: rows of the ragged form.
        assert example["two_rows"].dtype == object
        assert _as_lists(example["two_rows"]) == written["two_rows"]


def test_lengths_that_contradict_the_declared_ones_are_refused() -> None:
    features = FeaturesDict({"x": Sequence(Sequence(Tensor((), "int64"), 3))})
    good = encode({"x/ragged_flat_values": [1, 2, 3], "x/ragged_row_lengths_0": [3]})
    assert features.decode(good)["x"].tolist() == [[1, 2, 3]]
    bad = encode({"x/ragged_flat_values": [1, 2], "x/ragged_row_lengths_0": [2]})
    with pytest.raises(ExampleError, match="length 3 at level 1 holds"):
        features.decode(bad)
    wrong_sum = encode({"x/ragged_flat_values": [1, 2], "x/ragged_row_lengths_0": [3]})
    with pytest.raises(ExampleError, match="sums to 3"):
        features.decode(wrong_sum)


def test_encoded_values_below_two_sequences_are_refused() -> None:
    # TFDS stores their bytes as ragged entries too, and cannot decode them either.
    from readplan.errors import FeatureError
    from readplan.metadata.features import Image

    for inner in (Image(), Tensor((2,), "int16", "zlib")):
        with pytest.raises(FeatureError, match="an encoded value below two Sequences"):
            FeaturesDict({"x": Sequence(Sequence(inner))}).decoder()
