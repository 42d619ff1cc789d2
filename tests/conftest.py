"""Shared test configuration: data paths and hypothesis profiles."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

DATA = Path(__file__).parent / "data"

settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for the index sidecars of a module's read-only datasets (built once per
    module, not beside the shared test data)."""
    return tmp_path_factory.mktemp("indexes")


@pytest.fixture(scope="session")
def gcs_store() -> Iterator[Any]:
    """A GCS emulator on a free loopback port, for the whole session."""
    pytest.importorskip("fsspec")
    from tests.remote_stores import gcs_emulator, pin_clients_to_loopback

    pin_clients_to_loopback()  # before gcsfs is imported: it reads its settings then
    pytest.importorskip("gcsfs")

    with gcs_emulator() as store:
        yield store


@pytest.fixture(scope="session")
def s3_store() -> Iterator[Any]:
    """An S3 emulator (moto) on a free loopback port, for the whole session."""
    pytest.importorskip("fsspec")
    from tests.remote_stores import pin_clients_to_loopback, s3_emulator

    pin_clients_to_loopback()
    pytest.importorskip("s3fs")

    with s3_emulator() as store:
        yield store


@pytest.fixture(params=["gs", "s3"])
def store(request: pytest.FixtureRequest) -> Any:
    """Each emulated store in turn."""
    return request.getfixturevalue("gcs_store" if request.param == "gs" else "s3_store")


@pytest.fixture(params=["memory", "gs", "s3"])
def target(request: pytest.FixtureRequest) -> Any:
    """Each store a counting ``wrapped://`` copy forwards to in turn: in-process memory
    (``None``: no content version, object times only), or an emulator (GCS generations,
    S3 ETags)."""
    if request.param == "memory":
        return None
    return request.getfixturevalue("gcs_store" if request.param == "gs" else "s3_store")
