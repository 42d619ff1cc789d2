"""TensorFlow-written TFRecord fixtures (tests/data/tfrecord) and what their manifest records.

``FILES`` gives, per intact file, its compression and each record's size and SHA-256 (and the
decoded features where the records are Examples); ``DAMAGED`` gives the mutated copies.
"""

from __future__ import annotations

import hashlib
import json

from tests.conftest import DATA

FIXTURES = DATA / "tfrecord"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text(encoding="utf-8"))
FILES = MANIFEST["files"]
DAMAGED = MANIFEST["damaged"]


def sha(records: list[bytes]) -> list[str]:
    """The SHA-256 of each record, as the manifest lists them."""
    return [hashlib.sha256(r).hexdigest() for r in records]
