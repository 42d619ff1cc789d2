"""TBL-RAW files and TurboLoader 2.39 (the reference, in the test extra), both ways.

TurboLoader's preprocess_to_tbl writes RAW_U8 files readplan reads (raw view, samples,
dimensions, image batches); readplan's converted shards are read by TurboLoader's
TblReaderV2, turboloader.tbl.open_raw_view and TblRawImageLoader.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest

from readplan import tbl
from readplan.convert import convert
from readplan.records.tbl._gather import gather_images, normalization

pytest.importorskip("fastcrc")
PIL = pytest.importorskip("PIL.Image")
turboloader = pytest.importorskip("turboloader")
turbo_tbl = pytest.importorskip("turboloader.tbl")

SOURCE = Path(__file__).parent / "data" / "tfds_raw" / "readplan_raw" / "1.0.0"
SIZE = 24


def _jpeg_tar(path: Path, count: int) -> None:
    rng = np.random.default_rng(8)
    with tarfile.open(path, "w") as tar:
        for k in range(count):
            h, w = int(rng.integers(20, 60)), int(rng.integers(20, 60))
            pixels = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
            data = io.BytesIO()
            PIL.fromarray(pixels, "RGB").save(data, "JPEG", quality=90)
            info = tarfile.TarInfo(f"{k:04d}.jpg")
            info.size = len(data.getvalue())
            tar.addfile(info, io.BytesIO(data.getvalue()))


def test_readplan_reads_preprocess_to_tbl_files(tmp_path: Path) -> None:
    _jpeg_tar(tmp_path / "images.tar", 11)
    out = tmp_path / "images.tbl"
    count = turboloader.preprocess_to_tbl(
        str(tmp_path / "images.tar"), str(out), image_size=SIZE, num_workers=1
    )
    assert count == 11
    reference, height, width = turbo_tbl.open_raw_view(str(out))
    with tbl.TblFile(out) as samples:
        assert len(samples) == 11
        view = samples.raw_view()
        assert view.shape == (11, SIZE, SIZE, 3) == reference.shape
        assert (height, width) == (SIZE, SIZE)
        assert np.array_equal(view, reference)
        for i in range(11):
            info = samples.info(i)
            assert (info.format, info.width, info.height) == ("raw_u8", SIZE, SIZE)
            assert samples[i] == bytes(reference[i].tobytes())
    rows = np.array([3, 0, 10], dtype=np.int64)
    out_u8 = np.empty((3, SIZE, SIZE, 3), np.uint8)
    gather_images(view, rows, None, (1.0,) * 3, (0.0,) * 3, out_u8, 0, True)
    assert np.array_equal(out_u8, reference[rows])


def test_turboloader_reads_readplans_raw_shards(tmp_path: Path) -> None:
    target = tmp_path / "raw"
    convert(SOURCE, target, raw=True, image_size=SIZE)
    shards = sorted(target.glob("*.tbl-*"))
    assert len(shards) == 6
    for shard in shards:
        with tbl.TblFile(shard) as samples:
            ours = np.array(samples.raw_view())
        reader = turboloader.TblReaderV2(str(shard), verify_checksums=True)
        assert reader.num_samples() == len(ours)
        assert reader.has_metadata()
        for i in range(len(ours)):
            assert bytes(reader.read_sample(i)) == ours[i].tobytes()
            info = reader.get_sample_info(i)
            assert (info["width"], info["height"]) == (SIZE, SIZE)
            assert info["format"].name == "RAW_U8"
            assert not info["is_compressed"]
            assert info["has_metadata"]
        view, height, width = turbo_tbl.open_raw_view(str(shard))
        assert (height, width) == (SIZE, SIZE)
        assert np.array_equal(np.asarray(view), ours)


def test_turboloader_serves_readplans_raw_shard(tmp_path: Path) -> None:
    target = tmp_path / "raw"
    convert(SOURCE, target, raw=True, image_size=SIZE)
    shard = sorted(target.glob("*train.tbl-*"))[0]
    with tbl.TblFile(shard) as samples:
        ours = np.array(samples.raw_view())
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    loader = turboloader.TblRawImageLoader(
        str(shard), batch_size=4, mean=mean, std=std, shuffle=False
    )
    scale, shift = normalization(mean, std)
    seen = 0
    for batch, meta in loader:
        indices = np.asarray(meta["indices"], dtype=np.int64)
        expected = np.empty((len(indices), 3, SIZE, SIZE), np.float32)
        gather_images(ours, indices, None, scale, shift, expected, 1, False)
        # TurboLoader normalizes in its own order of operations: the same values within a
        # few float32 ulps (7e-7 measured), not bit for bit.
        assert np.allclose(np.asarray(batch), expected, rtol=0, atol=2e-6)
        seen += len(indices)
    assert seen == len(ours)
