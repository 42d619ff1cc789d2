"""Screenshots of the viewer's main views for the README, and each view's load time.

    python docs/screenshots.py [OUT_DIR]     (default: docs/img)

Serves tests/data's TFDS-written feature dataset and a reader state saved part-way through
epoch 1, opens each view in Debian's headless Chromium (Selenium), waits until the page has
its data, saves a palette PNG, and prints the median load time of 3 loads per view.
"""

from __future__ import annotations

import io
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.viewer_harness import (
    FEATURES_DIR,
    FEATURES_PATH,
    FEATURES_ROOT,
    TFRECORD_DIR,
    chromium,
    running,
    wait_for,
)

import readplan

DATASET = {"root": "0", "path": FEATURES_PATH}
ORDER = {
    **DATASET,
    "split": "train",
    "shuffle_files": "1",
    "shuffle_seed": "7",
    "interleave_cycle_length": "3",
    "epoch": "1",
    "batch_size": "6",
    "step": "2",
}
VIEWS = {
    "dataset": ("/dataset", DATASET),
    "gallery": ("/gallery", {**DATASET, "split": "train", "count": "10"}),
    "order": ("/order", ORDER),
    "state": ("/state", {"root": "1"}),
    "file": ("/file", {"root": "2"}),
}


def saved_state(folder: Path) -> Path:
    info = readplan.DatasetInfo.load(FEATURES_DIR)
    config = readplan.ReadConfig(shuffle_files=True, shuffle_seed=7, interleave_cycle_length=3)
    path = folder / "reader.json"
    with readplan.Reader(readplan.ReadPlan(info, "train", config), epochs=2) as reader:
        for _ in zip(range(73), reader):
            pass
        reader.save(path)
    return path


def small_png(png: bytes, path: Path) -> None:
    picture = Image.open(io.BytesIO(png)).convert("RGB")
    picture.quantize(colors=64).save(path, optimize=True)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        # Copies, so that the pictures show short paths of no particular machine.
        datasets = Path(folder) / "tensorflow_datasets"
        shutil.copytree(FEATURES_ROOT, datasets)
        state = saved_state(Path(folder))
        damaged = Path(folder) / "damaged.tfrecord"
        shutil.copyfile(TFRECORD_DIR / "damaged_flip_length_bit.tfrecord", damaged)
        with running([str(datasets), str(state), str(damaged)]) as server:
            browser = chromium()
            browser.set_window_size(1100, 820)
            try:
                browser.get(server.url)
                wait_for(browser, "return window.RP && RP.loaded")
                for name, (page, params) in VIEWS.items():
                    url = f"http://{server.host_header}{page}?{urlencode(params)}"
                    times = []
                    for _ in range(3):
                        started = time.perf_counter()
                        browser.get(url)
                        wait_for(browser, "return window.RP && RP.loaded === true", 60)
                        if name == "file":
                            wait_for(browser, "return RP.summary")
                        times.append(time.perf_counter() - started)
                    small_png(browser.get_screenshot_as_png(), out / f"viewer-{name}.png")
                    print(f"{name:8} {statistics.median(times) * 1000:7.0f} ms (median of 3)")
            finally:
                browser.quit()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "img")
