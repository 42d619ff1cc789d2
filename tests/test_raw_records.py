"""Decoding readers and data sources over TBL-RAW datasets (specs/tbl.md §12).

The expected values are TFDS's: tests/data/tfds_raw/decoded.json holds what TFDS yields for
the source dataset (its images as digests); and the source dataset itself read with
decode="tfds", each image resized with resize_image, the conversion's one resize.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import pickle
import re
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from readplan import (
    DatasetInfo,
    ExampleShuffle,
    ReadConfig,
    Reader,
    ReadPlan,
    SkipDecoding,
    data_source,
)
from readplan.errors import ConfigError, CorruptTblError
from readplan.example import FixedLen
from readplan.metadata.raw_images import resize_image
from readplan.records._damage import CorruptionReport
from tests.cli_runs import run
from tests.raw_datasets import SOURCE, converted_raw
from tests.remote_stores import wrapped_copy

pytest.importorskip("fastcrc")
pytest.importorskip("PIL")

DATA = Path(__file__).parent / "data" / "tfds_raw"
GOLDEN = json.loads((DATA / "decoded.json").read_text())
SIZE = 10
CONFIG = ReadConfig(shuffle_files=True, shuffle_seed=11)


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return converted_raw(tmp_path_factory, SIZE)


def plans(converted: Path, spec: str, config: ReadConfig = CONFIG) -> tuple[ReadPlan, ReadPlan]:
    return (
        ReadPlan(DatasetInfo.load(converted), spec, config),
        ReadPlan(DatasetInfo.load(SOURCE), spec, config),
    )


def resized(record: dict[str, Any]) -> dict[str, Any]:
    """A source record as the TBL-RAW dataset must give it: the image resized."""
    return {**record, "image": resize_image(record["image"], SIZE)}


def assert_same(got: dict[str, Any], expected: dict[str, Any]) -> None:
    assert list(got) == list(expected)
    for key, value in expected.items():
        if isinstance(value, np.ndarray):
            assert got[key].dtype == value.dtype
            assert np.array_equal(got[key], value), key
        else:
            assert type(got[key]) is type(value), key
            assert got[key] == value, key


def mapped(array: np.ndarray) -> bool:
    """Whether ``array`` is a view of a memory map (its chain of bases ends in one)."""
    base: Any = array
    while base is not None:
        if isinstance(base, mmap.mmap):
            return True
        base = getattr(base, "base", None) if isinstance(base, np.ndarray) else None
    return False


@pytest.mark.parametrize("read", GOLDEN["reads"], ids=lambda read: read["split"])
def test_decoded_records_are_tfds_examples_with_the_image_resized(
    converted: Path, read: dict[str, Any]
) -> None:
    config = ReadConfig(shuffle_files=read["shuffle_files"], shuffle_seed=read["shuffle_seed"])
    raw, source = plans(converted, read["split"], config)
    items = list(Reader(raw, decode="tfds"))
    originals = [item.record["image"] for item in Reader(source, decode="tfds")]
    golden = read["examples"]
    assert [item.tfds_id for item in items] == [
        example["tfds_id"].replace(".tfrecord-", ".tbl-") for example in golden
    ]
    for item, example, original in zip(items, golden, originals, strict=True):
        record = item.record
        assert list(record) == ["caption", "id", "image", "label"]
        assert (int(record["label"]), int(record["id"])) == (example["label"], example["id"])
        assert record["caption"] == example["caption"].encode()
        # TFDS's image (its digest), resized as the conversion documents.
        assert list(original.shape) == example["image_shape"]
        assert hashlib.sha256(original.tobytes()).hexdigest() == example["image_sha256"]
        image = record["image"]
        assert (image.shape, image.dtype) == ((SIZE, SIZE, 3), np.uint8)
        assert np.array_equal(image, resize_image(original, SIZE))
        # A view of the shard's memory map, not a copy; writable, copied on write.
        assert image.flags.writeable
        assert not image.flags.owndata
        assert mapped(image)


@pytest.mark.parametrize(("rank", "world_size", "workers"), [(0, 1, 1), (1, 3, 2)])
def test_items_and_batches_equal_the_source_decoded_and_resized(
    converted: Path, rank: int, world_size: int, workers: int
) -> None:
    raw, source = plans(converted, "train+test[:7]")
    kw: dict[str, Any] = {"epochs": 2, "rank": rank, "world_size": world_size}
    got = list(Reader(raw, decode="tfds", decode_workers=workers, **kw))
    expected = list(Reader(source, decode="tfds", **kw))
    assert len(got) == len(expected) > 0
    for a, b in zip(got, expected, strict=True):
        assert (a.epoch, a.position, a.file_index, a.record_index) == (
            b.epoch,
            b.position,
            b.file_index,
            b.record_index,
        )
        assert_same(a.record, resized(b.record))
    collating = Reader(raw, decode="tfds", decode_workers=workers, **kw)
    batches = list(collating.batches(5, drop_remainder=True))
    originals = list(Reader(source, decode="tfds", **kw).batches(5, drop_remainder=True))
    assert len(batches) == len(originals)
    for batch, original in zip(batches, originals, strict=True):
        assert np.array_equal(batch.positions, original.positions)
        images = np.stack([resize_image(r["image"], SIZE) for r in original.records])
        assert np.array_equal(batch.features["image"], images)
        for key in ("caption", "id", "label"):
            assert np.array_equal(batch.features[key], original.features[key]), key
        for a, b in zip(batch.records, original.records, strict=True):
            assert_same(a, resized(b))


def test_writing_an_image_changes_the_record_only(converted: Path, tmp_path: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(converted, root)
    files = {path.name: path.read_bytes() for path in root.iterdir()}
    raw = ReadPlan(DatasetInfo.load(root), "test", CONFIG)
    first, second = list(Reader(raw, decode="tfds"))[:2]
    before = second.record["image"].copy()
    first.record["image"][:] = 7
    second.record["image"] += 1
    assert (first.record["image"] == 7).all()
    assert np.array_equal(second.record["image"], before + 1)
    assert {path.name: path.read_bytes() for path in root.iterdir()} == files
    again = list(Reader(raw, decode="tfds"))[:2]
    assert np.array_equal(again[1].record["image"], before)
    assert not (again[0].record["image"] == 7).all()


def test_an_image_written_to_is_not_what_the_next_read_of_its_sample_gives(
    converted: Path,
) -> None:
    """A sample read again from the same open shard (a data source, a reader's later epoch)
    gives the file's pixels, not the earlier array a user wrote to."""
    source = data_source(str(converted), "test", decode="tfds")
    first = source[0]["image"]
    original = first.copy()
    first[:] = 7
    assert np.array_equal(source[0]["image"], original)
    assert np.array_equal(source[0]["image"], original)
    assert (first == 7).all()
    plan = ReadPlan(DatasetInfo.load(converted), "test", ReadConfig())
    epochs = [item.record["image"] for item in Reader(plan, decode="tfds", epochs=2)]
    once = len(epochs) // 2
    truth = [image.copy() for image in epochs[:once]]
    for image in epochs[:once]:
        image += 1
    assert all(np.array_equal(a, b) for a, b in zip(epochs[once:], truth))


@settings(max_examples=15, deadline=None)
@given(
    spec=st.sampled_from(["train", "test", "train[3:29]+test[:50%]", "train[1shard:]"]),
    seed=st.integers(0, 2**32),
    cycle=st.integers(1, 4),
    block=st.integers(1, 5),
    buffer=st.none() | st.integers(1, 16),
    world_size=st.integers(1, 3),
    epochs=st.integers(1, 2),
)
def test_any_order_is_the_sources_decoded_and_resized(
    converted: Path,
    spec: str,
    seed: int,
    cycle: int,
    block: int,
    buffer: int | None,
    world_size: int,
    epochs: int,
) -> None:
    config = ReadConfig(
        shuffle_files=True,
        shuffle_seed=seed,
        interleave_cycle_length=cycle,
        interleave_block_length=block,
        example_shuffle=None if buffer is None else ExampleShuffle(buffer, seed),
    )
    raw, source = plans(converted, spec, config)
    rank = seed % world_size
    kw: dict[str, Any] = {"epochs": epochs, "rank": rank, "world_size": world_size}
    got = list(Reader(raw, decode="tfds", **kw))
    expected = list(Reader(source, decode="tfds", **kw))
    assert [i.tfds_id for i in got] == [i.tfds_id.replace(".tfrecord-", ".tbl-") for i in expected]
    for a, b in zip(got, expected, strict=True):
        assert_same(a.record, resized(b.record))


def test_a_restored_reader_continues_exactly(converted: Path) -> None:
    raw, _ = plans(converted, "train")
    whole = [(i.epoch, i.position, i.record["id"]) for i in Reader(raw, epochs=3, decode="tfds")]
    for stop in (1, 39, 41, 100):
        reader = Reader(raw, epochs=3, decode="tfds")
        head = [(i.epoch, i.position, i.record["id"]) for _, i in zip(range(stop), reader)]
        state = reader.state_dict()
        rest = Reader(raw, epochs=3, decode="tfds", start=state)
        assert head + [(i.epoch, i.position, i.record["id"]) for i in rest] == whole
    reader = Reader(raw, epochs=3, decode="tfds")
    first = next(iter(reader.batches(8)))
    rest_batches = Reader(raw, epochs=3, decode="tfds", start=reader.state_dict()).batches(8)
    assert [first.positions.tolist()[0], next(iter(rest_batches)).positions.tolist()[0]] == [0, 8]


def test_example_features_and_schemas_give_the_metadata_and_the_image(converted: Path) -> None:
    raw, source = plans(converted, "test")
    schema = {"label": FixedLen((), np.int64), "caption": FixedLen((), bytes)}
    for decode in (True, schema):
        got = [i.record for i in Reader(raw, decode=decode)]
        expected = [i.record for i in Reader(source, decode=decode)]
        originals = [i.record for i in Reader(source, decode="tfds")]
        for a, b, original in zip(got, expected, originals, strict=True):
            b.pop("image", None)
            assert list(a) == [*b, "image"]
            assert_same(a, {**b, "image": resize_image(original["image"], SIZE)})
    skipped = [i.record for i in Reader(raw, decode="tfds", decoders={"caption": SkipDecoding()})]
    plain = [i.record for i in Reader(source, decode="tfds", decoders={"caption": SkipDecoding()})]
    for a, b in zip(skipped, plain, strict=True):
        assert_same(a, resized(b))


def test_decoding_the_stored_image_is_refused(converted: Path) -> None:
    raw, _ = plans(converted, "test")
    with pytest.raises(ConfigError, match="stores that image decoded") as err:
        Reader(raw, decode="tfds", decoders={"image": SkipDecoding()})
    assert err.value.field == "decoders"
    with pytest.raises(ConfigError, match="schema names 'image'") as err:
        Reader(raw, decode={"image": FixedLen((), bytes)})
    assert err.value.field == "decode"
    with pytest.raises(ConfigError, match="decoders apply to decode='tfds'"):
        Reader(raw, decode=True, decoders={"label": SkipDecoding()})
    with pytest.raises(ConfigError, match="stores that image decoded"):
        data_source(converted, "test", decode="tfds", decoders={"image": SkipDecoding()})
    # Without decoding the records are each image's bytes, as before.
    assert (
        next(iter(Reader(raw))).record
        == next(iter(Reader(raw, decode="tfds"))).record["image"].tobytes()
    )


def damaged_shard(
    converted: Path, folder: Path, k: int, damage: Callable[[bytearray], None]
) -> Path:
    """A copy of ``converted`` whose train shard ``k`` ``damage`` edited; the shard's path."""
    root = folder / "damaged"
    shutil.copytree(converted, root)
    path = root / f"readplan_raw-train.tbl-0000{k}-of-00003"
    data = bytearray(path.read_bytes())
    damage(data)
    path.write_bytes(bytes(data))
    return path


def flip_payload(data: bytearray) -> None:
    offset = struct.unpack_from("<Q", data, 64 + 24 * 2)[0]  # sample 2's payload
    data[offset + 5] ^= 0xFF


def bad_format(data: bytearray) -> None:
    data[64 + 24 * 2 + 20] = 200  # sample 2's index entry names no format


@pytest.mark.parametrize("damage", [flip_payload, bad_format])
def test_a_damaged_sample_is_skipped_or_raised_as_on_any_tbl_dataset(
    converted: Path, tmp_path: Path, damage: Callable[[bytearray], None]
) -> None:
    path = damaged_shard(converted, tmp_path, 1, damage)
    raw = ReadPlan(DatasetInfo.load(path.parent), "train", CONFIG)
    with pytest.raises(CorruptTblError) as err:
        list(Reader(raw, decode="tfds"))
    assert err.value.record_index == 2
    assert "position" in str(err.value)
    report = CorruptionReport()
    got = list(Reader(raw, decode="tfds", on_corruption="skip", report=report))
    plain = list(Reader(raw, on_corruption="skip", report=CorruptionReport()))
    assert [i.tfds_id for i in got] == [i.tfds_id for i in plain]
    assert len(got) == raw.num_examples - 1
    assert [(Path(lost.path), lost.record_index) for lost in report.lost] == [(path, 2)]
    for item, payload in zip(got, plain, strict=True):
        assert item.record["image"].tobytes() == payload.record
        # A shard whose index is damaged has no view: its images are copies.
        in_damaged = item.tfds_id.startswith(path.name)
        assert mapped(item.record["image"]) is not (in_damaged and damage is bad_format)


def test_a_damaged_metadata_section_raises_or_loses_the_samples_after_the_damage(
    converted: Path, tmp_path: Path
) -> None:
    def misname(data: bytearray) -> None:
        at = struct.unpack_from("<Q", data, 24)[0]  # the metadata section's first block
        for _ in range(4):  # the fifth block names a sample the file does not have
            at += 16 + struct.unpack_from("<I", data, at + 8)[0]
        struct.pack_into("<Q", data, at, 10_000)

    path = damaged_shard(converted, tmp_path, 0, misname)
    raw = ReadPlan(DatasetInfo.load(path.parent), "train", CONFIG)
    whole = list(Reader(raw))
    damaged = [i for i in whole if i.file_index == 0 and i.record_index >= 4]
    assert damaged
    with pytest.raises(CorruptTblError, match="metadata block") as err:
        list(Reader(raw, decode="tfds"))
    assert err.value.kind == "metadata_field"
    # The section is in doubt: the first record read of the file stops the reader.
    first = next(i for i in whole if i.file_index == 0)
    assert f"position {first.position} of epoch 0" in str(err.value)
    report = CorruptionReport()
    got = list(Reader(raw, decode="tfds", on_corruption="skip", report=report))
    assert [i.tfds_id for i in got] == [i.tfds_id for i in whole if i not in damaged]
    assert [(lost.position, lost.kind) for lost in report.lost] == [
        (i.position, "metadata_field") for i in damaged
    ]
    assert report.kinds() == {"metadata_field": 1}


def test_data_source_gives_the_decoded_records(converted: Path) -> None:
    spec = "train[3:30]+test"
    raw = data_source(converted, spec, decode="tfds")
    source = data_source(SOURCE, spec, decode="tfds")
    assert len(raw) == len(source) == 39
    keys = [5, 0, 38, 5, 17]
    for a, b in zip(raw.__getitems__(keys), source.__getitems__(keys), strict=True):
        assert_same(a, resized(b))
    for a, b in zip(raw, source, strict=True):
        assert_same(a, resized(b))
    # Sample 0 was handed out above: a read again gets a copy of the file's pixels; a
    # fresh source hands out the view of its map.
    assert not mapped(raw[0]["image"])
    first = data_source(converted, spec, decode="tfds")[0]
    assert type(first["id"]) is int
    assert mapped(first["image"])
    again = pickle.loads(pickle.dumps(raw))
    assert_same(again[7], resized(source[7]))
    as_examples = data_source(converted, spec, decode=True)[3]
    assert list(as_examples) == ["caption", "id", "label", "image"]
    assert len(data_source(converted, spec)[0]) == SIZE * SIZE * 3


def test_a_dataset_in_a_store_gives_copies(converted: Path) -> None:
    url, options, _ = wrapped_copy(converted, "raw")
    remote = data_source(url, "test", decode="tfds", storage_options=options)
    local = data_source(converted, "test", decode="tfds")
    for a, b in zip(remote.__getitems__([3, 1, 2]), local.__getitems__([3, 1, 2]), strict=True):
        assert_same(a, b)
        assert not mapped(a["image"])
        assert a["image"].flags.writeable
    plan = ReadPlan(DatasetInfo.load(url, storage_options=options), "test", CONFIG)
    items = list(Reader(plan, decode="tfds", storage_options=options))
    expected = list(Reader(ReadPlan(DatasetInfo.load(converted), "test", CONFIG), decode="tfds"))
    for a, b in zip(items, expected, strict=True):
        assert a.tfds_id == b.tfds_id
        assert_same(a.record, b.record)


def test_pytorch_workers_deliver_the_decoded_records_in_the_plan_order(converted: Path) -> None:
    torch = pytest.importorskip("torch")
    from readplan.torch import ReadplanIterableDataset

    raw, source = plans(converted, "test")
    expected = [resized(item.record) for item in Reader(source, decode="tfds")]
    dataset = ReadplanIterableDataset(raw, decode="tfds")
    # Workers take turns, one record each: the plan's order; records arrive as tensors
    # (writable arrays: torch takes them without a warning, which the suite would raise).
    for workers in (2, 0):
        loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=workers)
        got = list(loader)
        assert len(got) == len(expected)
        for record, original in zip(got, expected, strict=True):
            assert np.array_equal(record["image"].numpy(), original["image"])
            assert int(record["label"]) == original["label"]
    batched = ReadplanIterableDataset(raw, decode="tfds", batch_size=5)
    images = [batch["image"] for batch in batched]
    assert np.array_equal(np.concatenate(images), np.stack([r["image"] for r in expected]))


def test_inspect_describes_a_shard_by_its_metadata(
    converted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shard = converted / "readplan_raw-test.tbl-00000-of-00003"
    code, out, _ = run(capsys, "inspect", "--examples", "2", str(shard))
    assert code == 0
    assert f"raw images:  'image', {SIZE} x {SIZE} x 3 uint8" in out
    assert re.search(r"caption +bytes +\d+ +1 value per example", out)
    expected = [
        i.record
        for i in Reader(ReadPlan(DatasetInfo.load(SOURCE), "test[:2]", ReadConfig()), decode="tfds")
    ]
    for record in expected:
        assert repr(record["caption"].decode()) in out
    assert "not a tf.train.Example" not in out
    code, out, _ = run(capsys, "inspect", "--json", "--examples", "1", str(shard))
    summary = json.loads(out)["files"][0]
    assert summary["raw_image"] == {"feature": "image", "size": SIZE}
    assert sorted(summary["examples"]["examples"][0]["values"]) == ["caption", "id", "label"]


def test_the_viewer_shows_the_decoded_records(converted: Path) -> None:
    from readplan.viewer.examples import example_json, read_examples

    raw, source = plans(converted, "train")
    shown = [example_json(raw, item) for item in read_examples(raw, 0, 3, 2)]
    originals = [item.record for item in Reader(source, decode="tfds")][3:5]
    for page, original in zip(shown, originals, strict=True):
        assert [field["key"] for field in page["fields"]] == ["caption", "id", "image", "label"]
        assert (page["images"][0]["width"], page["images"][0]["height"]) == (SIZE, SIZE)
        assert next(f for f in page["fields"] if f["key"] == "id")["values"] == [original["id"]]


def test_shards_copied_without_their_metadata_read_with_the_plans(
    converted: Path, tmp_path: Path
) -> None:
    shards = tmp_path / "shards"
    shards.mkdir()
    for path in converted.glob("*.tbl-*"):
        shutil.copy(path, shards / path.name)
    raw, source = plans(converted, "test")
    got = list(Reader(raw, decode="tfds", data_dir=shards))
    expected = list(Reader(source, decode="tfds"))
    for a, b in zip(got, expected, strict=True):
        assert_same(a.record, resized(b.record))
    assert len(got) == len(expected)
    # The images map the shards read, in data_dir.
    base: Any = got[0].record["image"]
    while not isinstance(base, np.memmap):
        base = base.base
    assert Path(base.filename).parent == shards
