"""What can still be read of a damaged TBL v2 shard (``specs/reader.md`` §3, ``tbl.md`` §6).

A TBL file's index places every sample on its own, so nothing is lost to
resynchronisation: exactly the damaged samples are lost.  The shard is read once when the
reader switches to salvage, to find them; the damage of the index and of LZ4 blocks is
reported then, a payload checksum failure when the reader reaches that sample (as for
TFRecord frames).
"""

from __future__ import annotations

from readplan.reading.salvage import Lost
from readplan.records import tbl
from readplan.records._damage import KIND_DATA_CRC, CorruptionEvent, CorruptionReport
from readplan.storage import StorageOptions

__all__ = ["TblSalvage"]


class TblSalvage:
    """The undamaged samples of one damaged TBL v2 shard, read on demand.

    Damage to the header is not salvageable (nothing in the file can be trusted): opening
    raises :class:`~readplan.errors.CorruptTblError`.
    """

    def __init__(self, path: str, *, planned: int, storage_options: StorageOptions = None) -> None:
        self.path = path
        report = CorruptionReport()
        self._file = tbl.TblFile(
            path, on_corruption="skip", report=report, storage_options=storage_options
        )
        for _ in self._file:  # finds every damaged sample, reporting it
            pass
        self._lost = {event.record_index: event for event in report.events if event.records_lost}
        self.events = tuple(event for event in report.events if event.kind != KIND_DATA_CRC)

    def read(self, index: int) -> bytes | Lost:
        """Sample ``index``'s payload, or why it is lost."""
        event = self._lost.get(index)
        if event is not None:
            return Lost(index, event.offset, event.kind)
        return self._file[index]

    def data_crc_event(self, lost: Lost) -> CorruptionEvent:
        """The file-level report of a sample dropped for its payload checksum."""
        return self._lost[lost.record_index]

    def close(self) -> None:
        self._file.close()
