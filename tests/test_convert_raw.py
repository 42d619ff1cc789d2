"""TFDS image datasets converted to TBL-RAW: pixels, metadata, plans and ids (specs/tbl.md §10).

The source is the TFDS-made fixture tests/data/tfds_raw (generate_raw.py); every converted
sample is compared with the source record decoded as decode="tfds" does and resized by the
one shared resize.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from readplan import DatasetInfo, ReadConfig, Reader, ReadPlan, tbl, tfrecord
from readplan.cli import main
from readplan.convert import convert
from readplan.errors import ConfigError, DatasetInfoError
from readplan.metadata.features import FeaturesDict, load_features
from readplan.metadata.raw_images import RAW_KEY, RESIZE, raw_marker, resize_image

pytest.importorskip("fastcrc")
PIL = pytest.importorskip("PIL")

DATA = Path(__file__).parent / "data"
RAW_SOURCE = DATA / "tfds_raw" / "readplan_raw" / "1.0.0"
SIZE = 12


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("raw") / "raw"
    convert(RAW_SOURCE, target, raw=True, image_size=SIZE)
    return target


def test_info_features_and_marker(converted: Path) -> None:
    info = DatasetInfo.load(converted, verify_files=True)
    source = DatasetInfo.load(RAW_SOURCE)
    assert info.file_format == "tbl"
    assert {s: i.shard_lengths for s, i in info.splits.items()} == {
        s: i.shard_lengths for s, i in source.splits.items()
    }
    fields = json.loads((converted / "dataset_info.json").read_text())
    assert fields[RAW_KEY] == {
        "imageFeature": "image",
        "imageSize": SIZE,
        "resize": RESIZE,
        "pillow": PIL.__version__,
    }
    marker = raw_marker(str(converted))
    assert marker is not None
    assert (marker.image_feature, marker.image_size) == ("image", SIZE)
    assert marker.pillow == PIL.__version__
    assert raw_marker(str(RAW_SOURCE)) is None
    features = load_features(str(converted))
    assert features is not None
    assert features["image"].shape == (SIZE, SIZE, 3)
    assert sorted(features) == ["caption", "id", "image", "label"]


def test_every_sample_is_the_decoded_resized_source_image(converted: Path) -> None:
    source = DatasetInfo.load(RAW_SOURCE)
    features = source.features
    assert features is not None
    decode = features.decoder()
    others = FeaturesDict({k: v for k, v in features.items() if k != "image"}).decoder()
    seen = 0
    for split in source.splits:
        for k, path in enumerate(source.shard_path(split, i) for i in range(3)):
            target = converted / Path(path).name.replace(".tfrecord-", ".tbl-")
            with tbl.TblFile(target) as samples:
                view = samples.raw_view()
                for i, record in enumerate(tfrecord.read(path)):
                    expected = decode(record)
                    assert np.array_equal(view[i], resize_image(expected["image"], SIZE))
                    info = samples.info(i)
                    assert (info.format, info.width, info.height) == ("raw_u8", SIZE, SIZE)
                    meta = samples.metadata(i)
                    assert meta is not None
                    assert meta.type == "protobuf"
                    rest = others(meta.data)
                    assert sorted(rest) == ["caption", "id", "label"]
                    for name in rest:
                        assert rest[name] == expected[name], (split, k, i, name)
                    seen += 1
    assert seen == 52


def test_resize_is_pillow_bilinear_stretch() -> None:
    from PIL import Image

    rng = np.random.default_rng(3)
    image = rng.integers(0, 256, size=(7, 19, 3), dtype=np.uint8)
    pil = Image.fromarray(image, "RGB").resize((5, 5), Image.Resampling.BILINEAR)
    assert np.array_equal(resize_image(image, 5), np.asarray(pil))
    assert np.array_equal(resize_image(image[:5, :5], 5), image[:5, :5])
    with pytest.raises(ConfigError, match=r"\(h, w, 3\) uint8"):
        resize_image(image[..., :1], 5)


@pytest.mark.parametrize("shuffle", [False, True])
def test_plans_checkpoints_and_ids_are_the_sources(converted: Path, shuffle: bool) -> None:
    config = ReadConfig(shuffle_seed=7, shuffle_files=True) if shuffle else ReadConfig()
    for spec in ("train", "test[2:11]+train[:50%]"):
        a = ReadPlan(DatasetInfo.load(RAW_SOURCE), spec, config)
        b = ReadPlan(DatasetInfo.load(converted), spec, config)
        assert a.fingerprint == b.fingerprint
        for epoch in range(2):
            x, y = a.epoch(epoch), b.epoch(epoch)
            assert np.array_equal(x.file_index, y.file_index)
            assert np.array_equal(x.record_index, y.record_index)
            # A tfds_id names its shard file: the conversion's say tbl where the source's
            # say tfrecord, and are otherwise the same.
            ids = b.tfds_ids(y.file_index, y.record_index)
            assert a.tfds_ids(x.file_index, x.record_index) == [
                i.replace(".tbl-", ".tfrecord-") for i in ids
            ]
        state = Reader(a, epochs=2).state_dict()
        Reader(b, epochs=2, start=state)  # a source checkpoint resumes on the conversion


def test_cli_raw(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "cli"
    args = ["convert", str(RAW_SOURCE), str(target), "--format", "tbl", "--raw"]
    assert main([*args, "--image-size", "8"]) == 0
    assert "6 tbl shards, 52 records" in capsys.readouterr().out
    assert tbl.TblFile(next(target.glob("*train.tbl-00000*"))).raw_view().shape[1:] == (8, 8, 3)
    assert main(["convert", str(RAW_SOURCE), str(tmp_path / "no"), *args[3:]]) == 2
    assert "image_size must be an int" in capsys.readouterr().err
    two = ["convert", str(RAW_SOURCE), str(tmp_path / "two"), *args[3:], "--workers", "2"]
    assert main([*two, "--image-size", "8"]) == 0
    assert "6 tbl shards, 52 records" in capsys.readouterr().out


def test_raw_refusals(tmp_path: Path, converted: Path) -> None:
    features_dir = DATA / "tfds_features" / "readplan_features" / "1.0.0"
    with pytest.raises(ConfigError, match="exactly one Image") as err:
        convert(features_dir, tmp_path / "a", raw=True, image_size=8)
    assert "image_gray" in str(err.value)
    assert "image_jpeg" in str(err.value)
    with pytest.raises(ConfigError, match="uncompressed TBL"):
        convert(RAW_SOURCE, tmp_path / "b", raw=True, image_size=8, compression=True)
    with pytest.raises(ConfigError, match="uncompressed TBL"):
        convert(RAW_SOURCE, tmp_path / "b", format="tfrecord", raw=True, image_size=8)
    with pytest.raises(ConfigError, match="applies to raw=True"):
        convert(RAW_SOURCE, tmp_path / "b", image_size=8)
    for size in (0, 65536, 8.0, True):
        with pytest.raises(ConfigError, match="image_size"):
            convert(RAW_SOURCE, tmp_path / "b", raw=True, image_size=size)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="already a raw conversion"):
        convert(converted, tmp_path / "c", raw=True, image_size=8)


@pytest.mark.parametrize("workers", [1, 2])
def test_interrupted_conversion_leaves_no_dataset(tmp_path: Path, workers: int) -> None:
    source = tmp_path / "src"
    shutil.copytree(RAW_SOURCE, source)
    # A record whose image is not an image: decoding stops the conversion in shard 1.
    shard = source / "readplan_raw-train.tfrecord-00001-of-00003"
    records = list(tfrecord.read(shard))
    records[3] = records[3].replace(b"\x89PNG", b"\x89PNX")
    shard.unlink()
    tfrecord.write(str(shard), records)
    target = tmp_path / "dst"
    with pytest.raises(Exception, match="image"):
        convert(source, target, raw=True, image_size=8, workers=workers)
    assert not (target / "dataset_info.json").exists()
    assert not (target / "readplan_raw-train.tbl-00001-of-00003").exists()
    with pytest.raises(DatasetInfoError):
        DatasetInfo.load(target)


def test_two_workers_write_the_same_files(tmp_path: Path, converted: Path) -> None:
    done: list[tuple[str, int]] = []
    shards = convert(
        RAW_SOURCE,
        tmp_path / "two",
        raw=True,
        image_size=SIZE,
        workers=2,
        progress=lambda shard: done.append((shard.split, shard.shard_index)),
    )
    assert done == [(s.split, s.shard_index) for s in shards]
    assert done == [(split, k) for split in ("train", "test") for k in range(3)]
    names = sorted(p.name for p in converted.iterdir())
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == names
    for name in names:
        assert (tmp_path / "two" / name).read_bytes() == (converted / name).read_bytes()
    with pytest.raises(ConfigError, match="workers"):
        convert(RAW_SOURCE, tmp_path / "x", raw=True, image_size=SIZE, workers=0)


def test_the_marker_records_the_pillow_version_when_known(tmp_path: Path, converted: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(converted, copy)
    info = copy / "dataset_info.json"
    fields = json.loads(info.read_text())
    del fields[RAW_KEY]["pillow"]  # a dataset converted before the version was recorded
    info.write_text(json.dumps(fields))
    marker = raw_marker(str(copy))
    assert marker is not None
    assert marker.pillow is None
    assert "pillow" not in marker.to_json()
    fields[RAW_KEY]["pillow"] = 13
    info.write_text(json.dumps(fields))
    with pytest.raises(DatasetInfoError, match="pillow: a version") as err:
        raw_marker(str(copy))
    assert err.value.field == RAW_KEY
