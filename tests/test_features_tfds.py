"""Every leaf TFDS yields for the feature datasets, checked against readplan's decoding.

``tests/data/tfds_features/readplan_features_as_numpy.json`` (the features fixture) and
``tests/data/vectors/features/readplan_feature_vectors_as_numpy.json`` (more dtypes, shapes,
sequences and image encodings) were written by TFDS 4.9.10 / TF 2.21
(``tfds.as_numpy(builder.as_dataset(...))``); the fixture's README gives the schema. The test
is driven by the JSON alone (paths, positions, leaves), so any dataset recorded the same way
is checked the same way.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from readplan import tfrecord
from readplan.metadata.features import ClassLabel, Image, SkipDecoding, load_features
from tests.features_oracle import (
    DATASET_DIR,
    ORACLE,
    ORACLE_FILES,
    assert_same_leaves,
    dataset_dir,
    oracle,
)

CASES = [(name, i) for name in ORACLE_FILES for i in range(len(oracle(name)["cases"]))]


def _needs_image_extra(name: str, case: dict[str, Any]) -> bool:
    features = load_features(dataset_dir(name))
    assert features is not None
    return any(
        isinstance(feature, Image) or getattr(feature, "feature", None).__class__ is Image
        for key, feature in features.items()
        if key not in (case["decoders"] or {})
    )


@functools.cache
def _shard_records(name: str, split: str, shard: int) -> list[bytes]:
    recorded = oracle(name)
    lengths = recorded["shard_lengths"][split]
    file = f"{recorded['dataset']}-{split}.tfrecord-{shard:05d}-of-{len(lengths):05d}"
    return list(tfrecord.read(dataset_dir(name) / file))


def _decoders(case: dict[str, Any]) -> dict[str, Any] | None:
    names = case["decoders"]
    if names is None:
        return None
    assert set(names.values()) == {"SkipDecoding"}
    return {name: SkipDecoding() for name in names}


@pytest.mark.parametrize("batched", [False, True], ids=["one at a time", "as one batch"])
@pytest.mark.parametrize(("name", "index"), CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_every_leaf_matches_tfds(name: str, index: int, batched: bool) -> None:
    case = oracle(name)["cases"][index]
    if _needs_image_extra(name, case):
        pytest.importorskip("PIL")
        pytest.importorskip("simplejpeg")
    features = load_features(dataset_dir(name))
    assert features is not None
    assert len(case["examples"]) == case["num_examples"]
    records = [
        _shard_records(name, split, shard)[offset] for split, shard, offset in case["positions"]
    ]
    if batched:
        decoded = features.batch_decoder(decoders=_decoders(case))(records)
    else:
        decoded = list(map(features.decoder(decoders=_decoders(case)), records))
    for k, (expected, (split, _, _)) in enumerate(zip(case["examples"], case["positions"])):
        assert split == case["split"]
        assert_same_leaves(decoded[k], expected, f"example {k} ({case['tfds_ids'][k]})")


def test_structure_nests_like_tfds() -> None:
    features = load_features(DATASET_DIR)
    assert features is not None
    last = ORACLE["cases"][-1]
    split, shard, offset = last["positions"][0]
    got = features.decode(_shard_records("fixture", split, shard)[offset], decoders=_decoders(last))
    nested_paths = [path.split("/") for path in ORACLE["element_spec"]]
    for parts in nested_paths:
        node: Any = got
        for part in parts[:-1]:
            assert isinstance(node[part], dict)
            node = node[part]
        assert parts[-1] in node
    # TFDS yields every dict with its keys sorted.
    for node in [got, *(v for v in _flatten_dicts(got))]:
        assert list(node) == sorted(node)


def _flatten_dicts(value: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for inner in value.values():
        if isinstance(inner, dict):
            found.append(inner)
            found.extend(_flatten_dicts(inner))
    return found


def test_class_names_come_from_labels_files() -> None:
    features = load_features(DATASET_DIR)
    assert features is not None
    for path, names in ORACLE["class_names"].items():
        feature: Any = features
        for part in path.split("/"):
            feature = feature[part]
            while not isinstance(feature, ClassLabel) and hasattr(feature, "feature"):
                feature = feature.feature
        assert isinstance(feature, ClassLabel)
        assert list(feature.names) == names
        assert feature.num_classes == len(names)
        assert [feature.int2str(i) for i in range(len(names))] == names
        assert [feature.str2int(name) for name in names] == list(range(len(names)))


@pytest.mark.parametrize("name", ORACLE_FILES)
def test_the_oracles_are_complete(name: str) -> None:
    # Every split's examples are all there, so the leaf test covers every record.
    for case in oracle(name)["cases"]:
        lengths = oracle(name)["shard_lengths"][case["split"]]
        assert case["num_examples"] == sum(lengths)
        assert sorted(map(tuple, case["positions"])) == [
            (case["split"], shard, i) for shard, n in enumerate(lengths) for i in range(n)
        ]
    assert (dataset_dir(name) / "features.json").is_file()
