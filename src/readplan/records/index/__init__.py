"""Index sidecars: record offsets of a TFRecord file, bound to it (``specs/tfrecord.md`` §8).

The implementation lives in this package's private modules; this module is the import path
the rest of readplan and the public re-export module use.
"""

from __future__ import annotations

from readplan.records.index._format import (
    HEADER_SIZE,
    MAGIC,
    VERSION,
)
from readplan.records.index._sidecar import (
    INDEX_SUFFIX,
    RecordIndex,
    bind_index,
    build_index,
    check_offsets,
    export_text,
    import_text,
    index_open_file,
    index_path_for,
    load_index,
    load_index_for,
    resolve_compression,
    write_index,
)
from readplan.records.tfrecord._offset_walk import (
    walk_offsets,
)

__all__ = [
    "HEADER_SIZE",
    "INDEX_SUFFIX",
    "MAGIC",
    "VERSION",
    "RecordIndex",
    "bind_index",
    "build_index",
    "check_offsets",
    "export_text",
    "import_text",
    "index_open_file",
    "index_path_for",
    "load_index",
    "load_index_for",
    "resolve_compression",
    "walk_offsets",
    "write_index",
]
