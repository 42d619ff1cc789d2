"""readplan.index over object stores: sidecars loaded, and text indexes exported and imported,
in the GCS and S3 emulators (``conftest.py``'s session fixtures), reached with
``storage_options``; ``wrapped://`` (``tests/remote_stores.py``) counts the requests.

Expected offsets come from the sizes TensorFlow reported when it wrote the fixture.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from readplan.errors import IndexFileError, ObjectNotFoundError
from readplan.index import build_index, export_text, import_text, load_index
from tests.tfrecord_fixtures import FILES, FIXTURES

pytest.importorskip("fsspec")
from tests.remote_stores import Store, put, wrapped_copy

NAME = "examples.tfrecord"
SIZES = FILES[NAME]["record_sizes"]
OFFSETS = [sum(size + 16 for size in SIZES[:i]) for i in range(len(SIZES))]
DATA = (FIXTURES / NAME).read_bytes()


def _uploaded(store: Store) -> str:
    """The fixture file in a new bucket of ``store``; its URL."""
    fs = store.filesystem()
    bucket = f"readplan-index-{uuid.uuid4().hex[:8]}"
    fs.mkdir(bucket)
    put(store.protocol, fs, f"{bucket}/data/{NAME}", DATA)
    fs.invalidate_cache()
    return store.url(bucket, f"data/{NAME}")


def test_load_index_reads_a_sidecar_beside_the_data_in_a_bucket(store: Store) -> None:
    url = _uploaded(store)
    options = store.storage_options
    with pytest.raises(ObjectNotFoundError) as missing:
        load_index(url, storage_options=options)
    assert missing.value.url == f"{url}.index"
    assert build_index(url, storage_options=options) == f"{url}.index"
    index = load_index(url, storage_options=options)
    assert index.offsets.tolist() == OFFSETS
    assert (index.data_path, index.data_size, index.stream_size) == (url, len(DATA), len(DATA))
    # Built from the stored object: the sidecar names its version.
    assert index.source is not None
    assert index.source.startswith(f"{url} ")


def test_load_index_finds_a_sidecar_in_an_index_dir_of_another_bucket(store: Store) -> None:
    url = _uploaded(store)
    options = store.storage_options
    index_dir = _uploaded(store).rsplit("/", 1)[0] + "/sidecars"
    written = build_index(url, index_dir=index_dir, storage_options=options)
    assert written == f"{index_dir}/{NAME}.index"
    assert load_index(url, index_dir=index_dir, storage_options=options).offsets.tolist() == (
        OFFSETS
    )
    assert load_index(url, index_path=written, storage_options=options).offsets.tolist() == (
        OFFSETS
    )


def test_a_sidecar_of_another_version_is_refused_by_load_index(store: Store) -> None:
    url = _uploaded(store)
    options = store.storage_options
    build_index(url, storage_options=options)
    changed = bytearray(DATA)
    changed[20] ^= 0xFF
    fs = store.filesystem()
    put(store.protocol, fs, url.split("://", 1)[1], bytes(changed))
    fs.invalidate_cache()
    with pytest.raises(IndexFileError) as caught:
        load_index(url, storage_options=options)
    assert (caught.value.path, caught.value.field) == (f"{url}.index", "binding_crc")


@pytest.fixture(params=["gs", "s3"])
def counted(request: pytest.FixtureRequest, tmp_path: Any) -> tuple[str, dict[str, Any], Any]:
    """The fixture file in an emulator behind a counting ``wrapped://`` store."""
    store = request.getfixturevalue("gcs_store" if request.param == "gs" else "s3_store")
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / NAME).write_bytes(DATA)
    url, options, fs = wrapped_copy(folder, "data", store)
    return f"{url}/{NAME}", options, fs


def test_load_index_costs_one_lookup_and_one_request(
    counted: tuple[str, dict[str, Any], Any],
) -> None:
    url, options, fs = counted
    build_index(url, storage_options=options)
    fs.requests.clear()
    assert load_index(url, storage_options=options).offsets.tolist() == OFFSETS
    # The data's lookup, the sidecar's one ranged read; it names the version looked up, so
    # the data's ends are not read.
    assert dict(fs.requests) == {"info": 1, "get": 1}


def test_a_text_index_goes_to_and_comes_from_a_bucket(
    counted: tuple[str, dict[str, Any], Any],
) -> None:
    url, options, fs = counted
    build_index(url, storage_options=options)
    text_url = f"{url}.idx"
    assert export_text(load_index(url, storage_options=options), text_url, storage_options=options)
    text = bytes(fs.cat_file(text_url))
    assert text == "".join(f"{o} {s + 16}\n" for o, s in zip(OFFSETS, SIZES)).encode()
    sidecar = f"{url}.imported.index"
    fs.requests.clear()
    assert import_text(text_url, url, index_path=sidecar, storage_options=options) == sidecar
    # The text; the data's lookup, first 12 bytes (is it compressed?), ends (one read: it
    # is under 128 KiB) and the header of each record (all 40 are spot-checked), each an
    # exact read, no read-ahead block; one upload.
    assert len(SIZES) == 40
    assert dict(fs.requests) == {"get": 3 + len(SIZES), "info": 1, "put": 1}
    fs.requests.clear()
    imported = load_index(url, index_path=sidecar, storage_options=options)
    assert imported.offsets.tolist() == OFFSETS
    # Imported through the stored object, the sidecar names its version too.
    assert dict(fs.requests) == {"info": 1, "get": 1}
