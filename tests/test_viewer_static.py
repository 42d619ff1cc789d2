"""The offline page (``readplan view --static``) in a real browser: it walks the TF-written
fixtures and damaged copies of them to the same counts, sizes, features and damage as
readplan's own reader (``tfrecord.read`` in skip mode, ``readplan inspect``)."""

from __future__ import annotations

import gzip
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from readplan import tfrecord
from readplan.cli.framing import inspect_file
from readplan.cli.main import main
from tests.conftest import DATA
from tests.viewer_harness import TFRECORD_DIR, chromium, console_errors, wait_for

MANIFEST = json.loads((TFRECORD_DIR / "manifest.json").read_text())
TBL_DIR = DATA / "tbl"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("page") / "viewer.html"
    assert main(["view", "--static", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = chromium()
    try:
        yield driver
    finally:
        driver.quit()


def walk(browser: Any, page: Path, files: list[Path]) -> dict[str, Any]:
    """The page's results for ``files``, picked through its file input."""
    browser.get(page.as_uri())
    wait_for(browser, "return window.RP && document.getElementById('pick')")
    browser.find_element("id", "pick").send_keys("\n".join(str(f) for f in files))
    script = f"return Object.keys(RP.results).length >= {len(files)} && !RP.busy"
    assert wait_for(browser, script, timeout=120)
    results: dict[str, Any] = browser.execute_script("return RP.results")
    assert console_errors(browser) == []
    return results


def expected(path: Path) -> dict[str, Any]:
    """What readplan itself finds: records, sizes and damage in skip mode."""
    report = tfrecord.CorruptionReport()
    sizes = [
        len(r) for r in tfrecord.read(path, compression="auto", on_corruption="skip", report=report)
    ]
    damage = [(e.kind, e.offset, e.record_index, e.resume_offset) for e in report]
    return {"records": len(sizes), "total": sum(sizes), "damage": damage}


def seen(result: dict[str, Any]) -> dict[str, Any]:
    damage = [
        (e["kind"], e["offset"], e["record_index"], e["resume_offset"]) for e in result["damage"]
    ]
    total = result["record_bytes"]["total"] if result["record_bytes"] else 0
    return {"records": result["records"], "total": total, "damage": damage}


def test_static_page_needs_no_network(page: Path) -> None:
    html = page.read_text()
    assert "connect-src" not in html
    assert "default-src 'none'" in html
    # The only URL is the SVG namespace name, which is never fetched.
    assert html.replace("http://www.w3.org/2000/svg", "").count("://") == 0


def test_tf_written_fixtures_and_damaged_copies(browser: Any, page: Path) -> None:
    files = sorted(TFRECORD_DIR.glob("*.tfrecord*"))
    results = walk(browser, page, files)
    for path in files:
        result = results[path.name]
        assert seen(result) == expected(path), path.name
        if path.name in MANIFEST["files"]:
            assert result["records"] == len(MANIFEST["files"][path.name]["record_sizes"])
        summary = inspect_file(str(path))
        assert result["features"] == summary["features"], path.name
        assert result["record_bytes"] == summary["record_bytes"], path.name
    damaged = [name for name in results if name.startswith("damaged_")]
    assert sorted(damaged) == sorted(MANIFEST["damaged"])


def _damaged_copies(tmp: Path) -> list[Path]:
    source = (TFRECORD_DIR / "examples.tfrecord").read_bytes()
    offsets = tfrecord.frame_offsets(TFRECORD_DIR / "examples.tfrecord")[0].tolist()
    out = {}
    two = bytearray(source)
    two[offsets[3] + 2] ^= 0x10  # a length header
    two[offsets[20] + 30] ^= 0x01  # a payload byte
    out["two_damages.tfrecord"] = bytes(two)
    out["garbage_between.tfrecord"] = source[: offsets[7]] + b"\x00" * 37 + source[offsets[7] :]
    out["only_garbage.tfrecord"] = b"not a tfrecord file, just text" * 3
    embedded = tfrecord_bytes([source[: offsets[4]], b"x" * 40])  # a file stored as a record
    out["embedded.tfrecord"] = embedded[:9] + b"\xff" + embedded[10:]
    paths = []
    for name, data in out.items():
        (tmp / name).write_bytes(data)
        paths.append(tmp / name)
    return paths


def tfrecord_bytes(records: list[bytes]) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "records.tfrecord"
        tfrecord.write(path, records)
        return path.read_bytes()


def test_more_damage_is_located_like_the_reader(browser: Any, page: Path, tmp_path: Path) -> None:
    files = _damaged_copies(tmp_path)
    results = walk(browser, page, files)
    for path in files:
        assert seen(results[path.name]) == expected(path), path.name


def _compressed_copies(tmp: Path) -> list[Path]:
    """GZIP and ZLIB files cut, flipped, with garbage after them, and of several members."""
    gz = (TFRECORD_DIR / "examples.tfrecord.gz").read_bytes()
    zz = (TFRECORD_DIR / "examples.tfrecord.zz").read_bytes()
    raw = (TFRECORD_DIR / "examples.tfrecord").read_bytes()
    cases = {
        "cut.gz": gz[: len(gz) // 2],
        "flipped.gz": gz[:500] + bytes([gz[500] ^ 4]) + gz[501:],
        "garbage_after.gz": gz + b"garbage!",
        "two_members.gz": gz + gz,
        "two_members_garbage.gz": gz + gz + b"zz",
        "second_member_cut.gz": gz + gz[: len(gz) // 2],
        "three_members.gz": b"".join(
            gzip.compress(part) for part in (raw[:2000], raw[2000:5000], raw[5000:])
        ),
        "trailer_crc.gz": gz[:-8] + bytes([gz[-8] ^ 1]) + gz[-7:],
        "cut_in_a_frame.gz": gzip.compress(raw[:1000]),
        "cut_in_a_frame_garbage.gz": gzip.compress(raw[:1000]) + b"junk",
        "bad_frame.gz": gzip.compress(raw[:300] + b"\x00" * 20 + raw[300:]),
        "cut.zz": zz[: len(zz) // 2],
        "garbage_after.zz": zz + b"xx",
        "adler.zz": zz[:-1] + bytes([zz[-1] ^ 1]),
    }
    paths = []
    for name, data in cases.items():
        (tmp / name).write_bytes(data)
        paths.append(tmp / name)
    return paths


def test_compressed_damage_like_the_reader(browser: Any, page: Path, tmp_path: Path) -> None:
    """Only bytes the stream's checksums confirm give records (specs/tfrecord.md §3.2), and
    concatenated GZIP members are one stream, in the page as in tfrecord.read."""
    files = _compressed_copies(tmp_path)
    results = walk(browser, page, files)
    for path in files:
        assert seen(results[path.name]) == expected(path), path.name


def test_tbl_files_match_inspect(browser: Any, page: Path, tmp_path: Path) -> None:
    files = sorted(TBL_DIR.glob("*.tbl"))
    mixed = (TBL_DIR / "mixed.tbl").read_bytes()
    damaged = tmp_path / "mixed_damaged.tbl"
    index = bytearray(mixed)
    payload_of_2 = int.from_bytes(index[64 + 48 : 64 + 56], "little")
    index[payload_of_2] ^= 0xFF
    damaged.write_bytes(bytes(index))
    files.append(damaged)
    results = walk(browser, page, files)
    for path in files:
        summary = inspect_file(str(path))
        result = results[path.name]
        assert result["container"] == "tbl"
        assert result["records"] == summary["records"], path.name
        assert result["record_bytes"] == summary["record_bytes"], path.name
        got = [(e["kind"], e["offset"], e["record_index"]) for e in result["damage"]]
        want = [(e["kind"], e["offset"], e["record_index"]) for e in summary["damage"]]
        assert got == want, path.name
        assert result["features"] == summary["features"], path.name


def test_images_in_bytes_features_render(browser: Any, page: Path, tmp_path: Path) -> None:
    from PIL import Image

    from readplan import example

    picture = tmp_path / "picture.png"
    Image.new("RGB", (7, 5), (200, 30, 90)).save(picture)
    record = example.encode({"image/encoded": [picture.read_bytes()], "label": [3]})
    path = tmp_path / "images.tfrecord"
    tfrecord.write(path, [record, record])
    walk(browser, page, [path])
    widths = browser.execute_script(
        "return Promise.all(Array.from(document.querySelectorAll('img.thumb')).map("
        "(img) => img.decode().then(() => img.naturalWidth, () => 0)))"
    )
    if not widths:
        pytest.fail("no image thumbnails in the first examples of examples.tfrecord")
    assert all(width > 0 for width in widths)


def test_random_damage_is_located_like_the_reader(browser: Any, page: Path, tmp_path: Path) -> None:
    """Bit flips, cuts and inserted bytes at random places (seeded): the page's damage list
    equals the reader's for every copy."""
    import random

    source = (TFRECORD_DIR / "examples.tfrecord").read_bytes()
    chance = random.Random(24)
    files = []
    for number in range(40):
        data = bytearray(source)
        for _ in range(chance.randint(1, 3)):
            at = chance.randrange(len(data))
            action = chance.choice(("flip", "cut", "insert"))
            if action == "flip":
                data[at] ^= 1 << chance.randrange(8)
            elif action == "cut":
                del data[at : at + chance.randint(1, 40)]
            else:
                data[at:at] = bytes(chance.randrange(256) for _ in range(chance.randint(1, 30)))
        path = tmp_path / f"random_{number:02}.tfrecord"
        path.write_bytes(bytes(data))
        files.append(path)
    results = walk(browser, page, files)
    for path in files:
        assert seen(results[path.name]) == expected(path), path.name


_SPY = """
RP.reads = [];
const slice = Blob.prototype.slice;
Blob.prototype.slice = function (...args) {
  const part = slice.apply(this, args);
  part.fromSlice = true;
  return part;
};
for (const name of ["arrayBuffer", "text", "stream"]) {
  const original = Blob.prototype[name];
  Blob.prototype[name] = function (...args) {
    RP.reads.push([name, this.size, this.fromSlice === true]);
    return original.apply(this, args);
  };
}
"""


def test_files_are_read_in_slices_never_whole(browser: Any, page: Path, tmp_path: Path) -> None:
    records = [bytes([k % 251]) * (3000 + k) for k in range(1500)]
    plain = tmp_path / "big.tfrecord"
    tfrecord.write(plain, records)
    zipped = tmp_path / "big.tfrecord.gz"
    tfrecord.write(zipped, records, compression="GZIP")
    browser.get(page.as_uri())
    wait_for(browser, "return window.RP && document.getElementById('pick')")
    browser.execute_script(_SPY)
    browser.find_element("id", "pick").send_keys(f"{plain}\n{zipped}")
    assert wait_for(browser, "return Object.keys(RP.results).length >= 2 && !RP.busy")
    reads = browser.execute_script("return RP.reads")
    assert plain.stat().st_size > 4 << 20
    assert reads
    assert all(from_slice for _, _, from_slice in reads), reads
    assert max(size for _, size, _ in reads) <= 1 << 20
    results = browser.execute_script("return RP.results")
    assert results["big.tfrecord"]["records"] == results["big.tfrecord.gz"]["records"] == 1500
