"""Every served view in a real browser (headless Chromium): it loads with no console error,
its numbers are readplan's own (split counts, the ids of a step, a state's position), and its
images render."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import numpy as np
import pytest

import readplan
from readplan.cli.framing import inspect_file
from tests.viewer_harness import (
    FEATURES_DIR,
    FEATURES_PATH,
    FEATURES_ROOT,
    TFRECORD_DIR,
    chromium,
    console_errors,
    running,
    wait_for,
)

DATASET = {"root": "0", "path": FEATURES_PATH}
CONFIG = {"shuffle_files": "1", "shuffle_seed": "7", "interleave_cycle_length": "3"}
READ_CONFIG = readplan.ReadConfig(shuffle_files=True, shuffle_seed=7, interleave_cycle_length=3)


@pytest.fixture(scope="module")
def saved_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A reader's state saved part-way through epoch 1."""
    info = readplan.DatasetInfo.load(FEATURES_DIR)
    plan = readplan.ReadPlan(info, "train", READ_CONFIG)
    path = tmp_path_factory.mktemp("state") / "reader.json"
    reader = readplan.Reader(plan, epochs=2)
    with reader:
        for _ in zip(range(60 + 13), reader):
            pass
        reader.save(path)
    return path


@pytest.fixture(scope="module")
def site(saved_state: Path) -> Iterator[Any]:
    paths = [FEATURES_ROOT, saved_state, TFRECORD_DIR / "damaged_flip_length_bit.tfrecord"]
    with running([str(p) for p in paths]) as server:
        browser = chromium()
        try:
            browser.get(server.url)
            wait_for(browser, "return window.RP && RP.loaded")
            yield server, browser
        finally:
            browser.quit()


def visit(site: Any, page: str, params: dict[str, str] | None = None) -> Any:
    server, browser = site
    query = f"?{urlencode(params)}" if params else ""
    browser.get(f"http://{server.host_header}{page}{query}")
    assert wait_for(browser, "return window.RP && RP.loaded === true", timeout=60)
    failed = browser.execute_script("return RP.failed || null")
    assert failed is None, failed
    assert console_errors(browser) == []
    return browser


def images_render(browser: Any) -> list[int]:
    widths: list[int] = browser.execute_script(
        "return Promise.all(Array.from(document.querySelectorAll('img')).map("
        "(img) => img.decode().then(() => img.naturalWidth, () => 0)))"
    )
    assert widths
    assert min(widths) > 0
    return widths


def test_home_lists_what_is_served(site: Any) -> None:
    server, browser = site
    browser.get(server.url)
    assert wait_for(browser, "return window.RP && RP.loaded === true")
    assert "token" not in browser.current_url  # taken out of the address bar once loaded
    browser = visit(site, "/")
    text = browser.find_element("css selector", "table.roots").text
    assert FEATURES_PATH in text
    assert "saved state" in text


def test_dataset_page_counts_and_first_examples(site: Any) -> None:
    browser = visit(site, "/dataset", DATASET)
    info = readplan.DatasetInfo.load(FEATURES_DIR)
    shown = browser.execute_script(
        "return Object.fromEntries(Array.from(document.querySelectorAll('[data-split]'))"
        ".map((e) => [e.dataset.split, Number(e.dataset.examples)]))"
    )
    assert shown == {name: split.num_examples for name, split in info.splits.items()}
    ids = browser.execute_script(
        "return Array.from(document.querySelectorAll('.tile')).map((t) => t.dataset.tfdsId)"
    )
    plan = readplan.ReadPlan(info, "train", readplan.ReadConfig(interleave_cycle_length=1))
    assert ids == plan.epoch(0).tfds_ids()[: len(ids)]
    assert len(ids) == 8
    images_render(browser)
    tree = browser.find_element("css selector", ".tree").text
    assert "BBoxFeature" in tree
    assert "airplane" in tree


def test_gallery_filters_by_class_and_draws_boxes(site: Any) -> None:
    browser = visit(
        site, "/gallery", {**DATASET, "split": "train", "label": "label:2", "count": "6"}
    )
    info = readplan.DatasetInfo.load(FEATURES_DIR)
    plan = readplan.ReadPlan(info, "train", readplan.ReadConfig(interleave_cycle_length=1))
    with readplan.Reader(plan, decode="tfds") as reader:
        cats = [item.tfds_id for item in reader if int(item.record["label"]) == 2][:6]
    ids = browser.execute_script(
        "return Array.from(document.querySelectorAll('.tile')).map((t) => t.dataset.tfdsId)"
    )
    assert ids == cats
    assert "cat" in browser.find_element("css selector", ".tile").text
    boxes = browser.execute_script("return document.querySelectorAll('.tile rect').length")
    assert boxes >= len(ids)
    images_render(browser)


def test_gallery_pages_by_position_and_shard(site: Any) -> None:
    browser = visit(site, "/gallery", {**DATASET, "split": "train", "shard": "2", "start": "4"})
    info = readplan.DatasetInfo.load(FEATURES_DIR)
    plan = readplan.ReadPlan(
        info, "train[2shard:3shard]", readplan.ReadConfig(interleave_cycle_length=1)
    )
    ids = browser.execute_script(
        "return Array.from(document.querySelectorAll('.tile')).map((t) => t.dataset.tfdsId)"
    )
    assert ids == plan.epoch(0).tfds_ids()[4:]
    assert all("00002-of-00004" in i for i in ids)


@pytest.mark.parametrize("epoch", [0, 1, 5])
def test_read_order_step_ids(site: Any, epoch: int) -> None:
    params = {
        **DATASET,
        **CONFIG,
        "split": "train",
        "epoch": str(epoch),
        "batch_size": "5",
        "step": "3",
    }
    browser = visit(site, "/order", params)
    info = readplan.DatasetInfo.load(FEATURES_DIR)
    order = readplan.ReadPlan(info, "train", READ_CONFIG).epoch(epoch)
    ids = browser.execute_script(
        "return Array.from(document.querySelectorAll('#step-ids li')).map((li) => li.textContent)"
    )
    assert ids == order.tfds_ids()[15:20]
    tiles = browser.execute_script(
        "return Array.from(document.querySelectorAll('.tile')).map((t) => t.dataset.tfdsId)"
    )
    assert tiles == ids
    drawn = browser.execute_script("return RP.order.picture")
    assert drawn["files"] == order.file_index.tolist()
    width = browser.execute_script("return document.getElementById('order-picture').width")
    assert width > 0
    images_render(browser)


def test_saved_state_given_on_the_command_line(site: Any, saved_state: Path) -> None:
    browser = visit(site, "/state", {"root": "1"})
    state = json.loads(saved_state.read_text())
    checkpoint = readplan.Checkpoint.from_dict(state)
    assert (
        browser.execute_script(
            "return Number(document.getElementById('state-epoch').dataset.epoch)"
        )
        == checkpoint.epoch
    )
    shown = browser.execute_script(
        "return Number(document.getElementById('state-position').dataset.position)"
    )
    assert shown == checkpoint.position == 13
    info = readplan.DatasetInfo.load(FEATURES_DIR)
    plan = readplan.ReadPlan(info, "train", READ_CONFIG)
    expanded = plan.expand(checkpoint)
    files = browser.execute_script(
        "return RP.state.files.map((f) => [f.file, f.consumed, f.remaining])"
    )
    assert files == [list(entry) for entry in expanded.files]
    following = browser.execute_script(
        "return Array.from(document.querySelectorAll('#next-ids li')).map((li) => li.textContent)"
    )
    assert following == plan.epoch(1).tfds_ids()[13 : 13 + len(following)]
    images_render(browser)


def test_saved_state_uploaded_in_the_page(site: Any, saved_state: Path) -> None:
    browser = visit(site, "/state", DATASET)
    browser.find_element("id", "state-file").send_keys(str(saved_state))
    assert wait_for(browser, "return document.getElementById('state-position')")
    position = browser.execute_script(
        "return Number(document.getElementById('state-position').dataset.position)"
    )
    assert position == 13
    assert console_errors(browser) == []


def test_file_view_shows_inspect_numbers_and_damage(site: Any) -> None:
    browser = visit(site, "/file", {"root": "2"})
    assert wait_for(browser, "return window.RP.summary")
    summary = browser.execute_script("return RP.summary")
    path = TFRECORD_DIR / "damaged_flip_length_bit.tfrecord"
    expected = inspect_file(str(path))
    assert summary["records"] == expected["records"] == 39
    assert summary["damage"] == json.loads(json.dumps(expected["damage"]))
    kinds = browser.execute_script(
        "return Array.from(document.querySelectorAll('code.kind')).map((c) => c.textContent)"
    )
    assert kinds == ["header_crc"]


def test_local_files_view_is_the_offline_page(site: Any) -> None:
    browser = visit(site, "/files")
    browser.find_element("id", "pick").send_keys(str(TFRECORD_DIR / "examples.tfrecord.gz"))
    assert wait_for(browser, "return RP.results['examples.tfrecord.gz']")
    assert browser.execute_script("return RP.results['examples.tfrecord.gz'].records") == 40
    assert console_errors(browser) == []


def test_file_records_with_flattened_yolo_boxes(site: Any, tmp_path: Path) -> None:
    """A detection TFRecord (ModelPack-style: an encoded image, boxes as a flat list of
    YOLO centre-x, centre-y, width, height, labels) shown through a schema."""
    from PIL import Image

    picture = tmp_path / "p.png"
    Image.new("RGB", (40, 20), (10, 120, 200)).save(picture)
    boxes = [[0.5, 0.5, 0.2, 0.4], [0.25, 0.75, 0.1, 0.1]]
    record = readplan.example.encode(
        {
            "image": [picture.read_bytes()],
            "bbox": np.array(boxes, dtype=np.float32).ravel(),
            "label": np.array([3, 1]),
        }
    )
    shard = tmp_path / "detections.tfrecord"
    readplan.tfrecord.write(shard, [record] * 3)
    _, browser = site
    with running([str(shard)]) as other:
        browser.get(other.url)
        wait_for(browser, "return window.RP && RP.loaded")
        params = {"root": "0", "image": "image", "boxes": "bbox", "labels": "label"}
        browser.get(f"http://{other.host_header}/file?{urlencode(params)}")
        assert wait_for(browser, "return window.RP && RP.records")
        assert console_errors(browser) == []
        rects = browser.execute_script(
            "return Array.from(document.querySelectorAll('.tile')[0].querySelectorAll('rect'))"
            ".map((r) => ['x', 'y', 'width', 'height'].map((a) => Number(r.getAttribute(a))))"
        )
        images_render(browser)
    want = [[cx - w / 2, cy - h / 2, w, h] for cx, cy, w, h in boxes]
    assert np.allclose(rects, want, atol=1e-6)
    assert browser.execute_script("return RP.records.records") == 3
