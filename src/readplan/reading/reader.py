"""The reader: a plan's records, from the shard files, in exactly the plan's order.

``specs/reader.md`` is normative.  A :class:`Reader` follows ``plan.epoch(e)`` position by
position, epoch after epoch.  It opens a shard when the plan's interleave first reads from
it and closes it after the plan's last read from it, so no more files are open than the
interleave has slots; within a file it reads records in runs, each run streamed from where
the previous one ended or found by seeking (index sidecar) or by a header walk, so no
payload is read that is not delivered.

Its state is a checkpoint (``specs/checkpoint.md``) plus the rank: restoring it seeks
straight to the next record, whatever the position.  In elastic mode rank ``r`` of ``w``
delivers the positions ``p`` with ``p mod w == r`` of one global order, and
:func:`merge_states` turns the states of all ranks, saved in lockstep, into one global
state from which any number of ranks continues exactly.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator, Mapping
from functools import partial
from itertools import chain, islice
from typing import Any, Literal, TypeAlias, TypeVar, overload

import numpy as np
import numpy.typing as npt

from readplan.errors import ConfigError, ReadplanTypeError
from readplan.plan import EpochOrder, ReadPlan
from readplan.reading import raw_batches
from readplan.reading.batching import (
    close_iterator,
    collated_batches,
    decoded,
    packed_batch,
    rebatch,
)
from readplan.reading.chunks import Chunk, Runs, last_read_marks
from readplan.reading.collate import Ragged, check_collate_options
from readplan.reading.containers import container_for
from readplan.reading.item_runs import ItemPiece, ItemsEndedError, chunk_items
from readplan.reading.items import Batch, Item
from readplan.reading.located import located_at
from readplan.reading.options import (
    any_remote,
    check_batching,
    check_epochs,
    check_files_reachable,
    check_packed,
    check_rank,
)
from readplan.reading.prefetch import DEFAULT_SPAN_AHEAD, ShardWarmer, SpanFetcher
from readplan.reading.ranks import (
    remaining,
)
from readplan.reading.raw_records import RawReads, reader_decoder
from readplan.reading.reader_state import ReaderState
from readplan.reading.run_streams import read_runs
from readplan.reading.runs import Closes, Shard, without_lost
from readplan.reading.windows import file_reads, read_spans
from readplan.reading.workers import check_decode_workers
from readplan.records._damage import (
    CorruptionReport,
    OnCorruption,
    check_damage_options,
)
from readplan.state.binding import ReaderBinding
from readplan.state.checkpoint import Checkpoint
from readplan.storage import basename, join, to_str

__all__ = ["Reader", "Start"]

Start: TypeAlias = "Checkpoint | Mapping[str, Any] | str | os.PathLike[str]"
"""Where a reader starts: a state, a checkpoint, or the path of a saved state."""
_B = TypeVar("_B", Batch, raw_batches.ImageBatch)
_P = TypeVar("_P")


# Positions of the plan taken per step, and records delivered per batch: large enough that
# numpy's fixed costs vanish, small enough that a batch of large records stays in memory.
_CHUNK = 1 << 16
_FIRST_CHUNK = 1 << 12
_CHUNK_RANKS = 4
_BATCH = 256
# Records per read under raw item iteration, whose batches nobody sees: up to _ITEM_BATCH
# while they hold at most _ITEM_BATCH_BYTES, so that small records spread each read's
# steps over eight times as many items.
_ITEM_BATCH = 1 << 11
_ITEM_BATCH_BYTES = 1 << 20
# Bytes of records a rank of several reads together (in spans, file by file): enough that
# the per-file costs vanish, little enough to hold.
_WINDOW_BYTES = 1 << 23
SPAN_AHEAD = DEFAULT_SPAN_AHEAD
"""File reads a rank of several (or an example shuffle) keeps fetched ahead from a store
(``specs/storage.md`` §5); 0 fetches each span when the reader reaches it."""


class Reader(ReaderState):
    """Records of ``plan``, read from its shard files in the plan's order (``specs/reader.md``).

    Args:
        plan: the read plan.
        data_dir: the shard files' folder (a path or URL); default: the instructions' names.
        epochs: read epochs ``0 .. epochs - 1`` (a start state skips what it delivered);
            ``None`` reads forever.
        decode: ``"tfds"`` delivers each record as ``tfds.as_numpy`` yields it, decoded with
            the dataset's ``features.json`` (``specs/features.md``); ``None``/``False``
            delivers bytes, ``True`` decoded ``tf.train.Example`` features
            (:func:`readplan.example.decode`), a schema mapping parsed features
            (:func:`readplan.example.parse`).  A TBL-RAW dataset's records are decoded
            from their metadata, the image the stored array (``specs/tbl.md`` §12).
        decoders: with ``decode="tfds"``, TFDS's per-feature decoders, e.g.
            ``{"image": readplan.SkipDecoding()}`` for the encoded bytes.
        start: where to continue from: a state (from :meth:`state_dict`), a
            :class:`~readplan.Checkpoint`, or the path of a file written by
            :meth:`save` (the next record is found by seeking).
        rank, world_size: elastic mode; this reader delivers the positions ``p`` of each
            epoch's global order with ``p % world_size == rank``.
        on_corruption: ``"raise"`` stops at the first damaged record; ``"skip"`` delivers
            every undamaged record in plan order and lists each lost one in ``report``.
        report: a :class:`~readplan.tfrecord.CorruptionReport` collecting the damage met.
        index_dir, storage_options: sidecar folder; fsspec options (``specs/storage.md``).
        decode_workers: threads decoding batches a few ahead (``specs/reader.md`` §7), with
            one thread's results, errors and states; reading stays in the iterating thread.

    Iterating yields :class:`Item` objects; :meth:`batches` yields the same deliveries as
    :class:`Batch` objects, with less overhead per record.  A new iteration continues from
    the current state and ends the previous one.  ``len(reader)`` is the number of items
    an iteration started now delivers.
    """

    def __init__(
        self,
        plan: ReadPlan,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        epochs: int | None = 1,
        decode: bool | Literal["tfds"] | Mapping[str, Any] | None = None,
        decoders: Mapping[str, Any] | None = None,
        start: Start | None = None,
        rank: int = 0,
        world_size: int = 1,
        on_corruption: OnCorruption = "raise",
        report: CorruptionReport | None = None,
        index_dir: str | os.PathLike[str] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        decode_workers: int = 1,
    ) -> None:
        if not isinstance(plan, ReadPlan):
            raise ConfigError(
                f"plan must be a readplan.ReadPlan, got {type(plan).__name__}",
                field="plan",
                value=plan,
            )
        check_epochs(epochs)
        check_rank(rank, world_size)
        check_damage_options(on_corruption, report)
        self.plan = plan
        self.data_dir = None if data_dir is None else to_str(data_dir)
        self.index_dir, self.storage_options = index_dir, storage_options
        self.epochs = epochs
        self.rank = rank
        self.world_size = world_size
        self.on_corruption = on_corruption
        self.report = report
        self._decode, raw = reader_decoder(decode, decoders, plan, self.data_dir, storage_options)
        skip = on_corruption == "skip"
        self._raw = raw and RawReads(raw, self._path, storage_options, skip, report)
        self.decode_workers = check_decode_workers(decode_workers)
        self._container = container_for(
            plan.info.file_format, available=plan.info.available_file_formats
        )
        # From the instruction columns: no step per file, whatever the number of files.
        table = plan.instructions
        self._ends = table.skip + table.num_records
        self._last_records = self._ends - 1
        self._sequential = world_size == 1 and plan.config.example_shuffle is None
        remote = any_remote(plan, self.data_dir, self._path)
        # Reads in spans open their files ahead themselves, with their sidecars and spans.
        self._spans_ahead = SpanFetcher(remote and not self._sequential, SPAN_AHEAD)
        warm = remote and not self._spans_ahead.enabled
        self._warmer = ShardWarmer(self._path, warm, storage_options)
        self._record_bytes = _WINDOW_BYTES  # unknown: the first window is one batch
        self._epoch = 0
        self._next = self._first_share(0)
        self._current: ItemPiece | None = None
        self._active: Generator[Any, None, None] | None = None
        self._binding = ReaderBinding(self._path, storage_options)
        if start is not None:
            self._start_from(start)

    def __repr__(self) -> str:
        epoch, position = self._frontier()
        return (
            f"Reader({self.plan!r}, epoch={epoch}, next_position={position}, "
            f"rank={self.rank}, world_size={self.world_size})"
        )

    def __len__(self) -> int:
        """Items an iteration started now delivers: this rank's, to the end of ``epochs``.

        With ``on_corruption="skip"`` records lost to damage are counted too (an upper bound).
        """
        if self.epochs is None:
            raise ReadplanTypeError(
                "a reader with epochs=None reads forever and has no len(); pass epochs=N",
                field="epochs",
                value=None,
            )
        epoch, position = self._frontier()
        size = self.plan.num_examples
        return remaining(self.epochs, epoch, position, size, self.rank, self.world_size)

    # -- iteration --------------------------------------------------------------------

    def __iter__(self) -> Iterator[Item]:
        self._begin()
        lists = self._item_lists(*self._frontier())
        self._active = lists
        return chain.from_iterable(lists)

    @overload
    def batches(
        self,
        batch_size: int | None = None,
        *,
        drop_remainder: bool = False,
        ragged: Ragged = "list",
        padding_values: Mapping[str, Any] | None = None,
        packed: bool = False,
    ) -> Iterator[Batch]: ...

    @overload
    def batches(
        self,
        batch_size: int,
        *,
        drop_remainder: bool = False,
        normalize: tuple[Any, Any] | None = None,
        layout: raw_batches.Layout | None = None,
        dtype: raw_batches.OutKind | None = None,
        hflip: float | None = None,
        seed: int | None = None,
    ) -> Iterator[raw_batches.ImageBatch]: ...

    def batches(
        self,
        batch_size: int | None = None,
        *,
        drop_remainder: bool = False,
        ragged: Ragged = "list",
        padding_values: Mapping[str, Any] | None = None,
        packed: bool = False,
        normalize: tuple[Any, Any] | None = None,
        layout: raw_batches.Layout | None = None,
        dtype: raw_batches.OutKind | None = None,
        hflip: float | None = None,
        seed: int | None = None,
    ) -> Iterator[Batch] | Iterator[raw_batches.ImageBatch]:
        """The deliveries as :class:`Batch` objects, in order (``specs/reader.md`` §1).

        Without ``batch_size`` batches follow the reader's reads (up to 256 records).  With
        it every batch holds ``batch_size`` deliveries of one epoch, except the last of
        each epoch, which is shorter or, with ``drop_remainder``, left out; a decoding
        reader also collates each batch into ``batch.features`` (a dict of stacked arrays;
        ``ragged``/``padding_values`` say what becomes of leaves whose shapes differ).
        ``packed=True``: each batch's raw records as one :class:`~readplan.PackedRecords`.

        Any of ``normalize``, ``layout``, ``dtype``, ``hflip``, ``seed`` (a TBL-RAW
        dataset only) gives :meth:`image_batches`' batches with those options instead.
        """
        images: dict[str, Any] = {"normalize": normalize, "layout": layout, "dtype": dtype}
        images |= {"hflip": hflip, "seed": seed}
        asked = raw_batches.asked_options(
            images, batch_size, drop_remainder, packed=packed, ragged=ragged, padding=padding_values
        )
        if asked is not None:
            return self._image_batches(asked)
        check_batching(batch_size, drop_remainder)
        check_collate_options(ragged, padding_values)
        check_packed(packed, decoding=self._decode is not None)
        self._begin()
        produced: Iterator[Batch] = self._read(*self._frontier())
        if batch_size is None:
            produced = self._decoded(produced)
        elif self._decode is None:
            produced = rebatch(produced, batch_size, drop_remainder)
        else:
            # Records are decoded per delivered batch, which is collated from its columns.
            produced = collated_batches(
                produced,
                batch_size,
                drop_remainder,
                self._decode,
                ragged,
                padding_values,
                self._located_in,
                self.decode_workers,
            )
        if packed:
            produced = map(packed_batch, produced)
        batches = self._delivered_batches(produced)
        self._active = batches
        return batches

    def _item_lists(self, epoch: int, position: int) -> Generator[Iterator[Item], None, None]:
        # Each piece's items are made in C as they are taken (the memory of the item just
        # freed is still in the cache); the state reads how far it got from its length hint.
        try:
            for piece in self._item_pieces(epoch, position):
                self._settle()
                self._current = piece
                yield piece[2]
        except ItemsEndedError:
            pass  # the error that ended the iteration reached the caller from its items
        self._settle()

    def _item_pieces(self, epoch: int, position: int) -> Iterator[ItemPiece]:
        if self._decode is None and not self._raw and self._sequential and not self._warmer.enabled:
            # A raw reader streaming local files: items straight from the streams.
            for produced in self._epochs(epoch, position, self._chunk_items):
                yield from produced
            return
        # Decoding readers keep reads of _BATCH: a larger batch's decode runs slower per record.
        larger = self._decode is None
        for batch in self._decoded(self._read(epoch, position, items=larger)):
            yield batch.epoch, batch.positions, batch.iter_items()

    def image_batches(
        self,
        batch_size: int,
        *,
        normalize: tuple[Any, Any] | None = None,
        layout: raw_batches.Layout = "NCHW",
        dtype: raw_batches.OutKind = "float32",
        hflip: float = 0.0,
        seed: int = 0,
        drop_remainder: bool = False,
    ) -> Iterator[raw_batches.ImageBatch]:
        """A TBL-RAW dataset's deliveries as image batches gathered from the shards' memory
        maps, normalized, flipped by (seed, epoch, position), as :meth:`batches` cuts them
        (``specs/tbl.md`` §11)."""
        options = raw_batches.ImageOptions(
            batch_size, normalize, layout, dtype, hflip, seed, drop_remainder
        )
        return self._image_batches(options)

    def _image_batches(self, options: raw_batches.ImageOptions) -> Iterator[raw_batches.ImageBatch]:
        self._begin()
        produced = raw_batches.serve(self, self._path, self._frontier(), options)
        batches = self._delivered_batches(produced)
        self._active = batches
        return batches

    def _delivered_batches(self, produced: Iterator[_B]) -> Generator[_B, None, None]:
        try:
            for batch in produced:
                self._epoch = batch.epoch
                self._next = self._after(int(batch.positions[-1]))
                yield batch
        finally:
            close_iterator(produced)

    def _begin(self) -> None:
        self._settle()
        self.close()

    def _settle(self) -> None:
        self._epoch, self._next = self._frontier()
        self._current = None

    def close(self) -> None:
        """End the current iteration and close its files; the state is kept."""
        active, self._active = self._active, None
        if active is not None:
            active.close()

    # -- production ---------------------------------------------------------------------

    def _decoded(self, produced: Iterator[Batch]) -> Iterator[Batch]:
        decoder = self._decode
        if decoder is None:
            return produced
        return decoded(produced, decoder, self._located_in, self.decode_workers)

    def _read(self, epoch: int, position: int, *, items: bool = False) -> Iterator[Batch]:
        """The batches of undecoded records the reads give, from ``position`` of ``epoch``
        (``items``: batches for item iteration, larger when the records are small)."""
        for produced in self._epochs(epoch, position, partial(self._chunk_batches, items=items)):
            # A TBL-RAW dataset's payloads become images and metadata for its decoder.
            yield from self._raw.attached(produced, self._located_in) if self._raw else produced

    def _epochs(
        self, epoch: int, position: int, per_chunk: Callable[..., Iterator[_P]]
    ) -> Iterator[Iterator[_P]]:
        """Each epoch's ``per_chunk(chunk, is_last, shards)`` pieces, chunk after chunk, from
        ``position`` of ``epoch``; the files opened are closed after each epoch."""
        if self.rank >= self.plan.num_examples:
            # More ranks than positions: this one has nothing in any epoch.
            return
        while self.epochs is None or epoch < self.epochs:
            yield self._epoch_pieces(epoch, position, per_chunk)
            epoch, position = epoch + 1, self._first_share(0)

    def _epoch_pieces(
        self, epoch: int, start: int, per_chunk: Callable[..., Iterator[_P]]
    ) -> Iterator[_P]:
        is_last = last_read_marks(self.plan, epoch, self._last_records)
        shards: dict[int, Shard] = {}
        try:
            for chunk in self._chunks(epoch, start):
                yield from per_chunk(chunk, is_last, shards)
        finally:
            for shard in shards.values():
                shard.close()

    def _chunks(self, epoch: int, start: int) -> Iterator[Chunk]:
        # A small first chunk: the first record after a start or a restore does not wait
        # for the plan of a whole large chunk.
        head = min(start + _FIRST_CHUNK, self.plan.num_examples)
        for first in islice(self.plan.iter_epoch(epoch, chunk_size=_FIRST_CHUNK, start=start), 1):
            yield Chunk(epoch, (first,))
        # A rank's share of a chunk is what its reads handle at once: larger chunks for a
        # few ranks, of pieces of _CHUNK positions (``Chunk``).
        pieces = self.plan.iter_epoch(epoch, chunk_size=_CHUNK, start=head)
        group = min(self.world_size, _CHUNK_RANKS)
        while grouped := tuple(islice(pieces, group)):
            yield Chunk(epoch, grouped)

    def _chunk_batches(
        self,
        chunk: Chunk,
        is_last: Callable[[EpochOrder], npt.NDArray[np.bool_]],
        shards: dict[int, Shard],
        items: bool,
    ) -> Iterator[Batch]:
        batch = self._item_batch() if items else _BATCH
        runs = Runs.of(chunk, is_last, self.rank, self.world_size, batch)
        if self._warmer.enabled:  # the runs' lists are made only where they are read
            self._warmer.start_chunk(runs.file, runs.first, shards)
        closes = Closes(runs, shards)
        # One rank streaming its files reads batch by batch; otherwise about _WINDOW_BYTES
        # of records are read together, in spans (``specs/reader.md`` §2).
        size = 0 if self._sequential else max(1, _WINDOW_BYTES // self._record_bytes)
        windows = list(runs.windows(batch, size))
        self._spans_ahead.start_chunk(
            len(windows),
            lambda k: file_reads(runs, windows[k][0][0], windows[k][-1][1]),
            lambda file_index, indices: self._shard(shards, file_index).fetch_ahead(indices),
        )
        for k, window in enumerate(windows):
            self._spans_ahead.start_window(k)
            records = None if self._sequential else self._read_spans(runs, window, closes)
            if records is None:
                for first_run, stop_run in window:
                    yield from self._read_runs(chunk, runs, first_run, stop_run, closes)
                continue
            offset = runs.start[window[0][0]]
            for first_run, stop_run in window:
                begin, end = runs.deliveries(first_run, stop_run)
                yield from self._batch(
                    chunk, runs, begin, records[begin - offset : end - offset], 0
                )
        closes.through(len(runs.start))

    def _item_batch(self) -> int:
        # The record size is unknown until records have been read: _BATCH then.
        return min(_ITEM_BATCH, max(_BATCH, _ITEM_BATCH_BYTES // self._record_bytes))

    def _chunk_items(
        self,
        chunk: Chunk,
        is_last: Callable[[EpochOrder], npt.NDArray[np.bool_]],
        shards: dict[int, Shard],
    ) -> Iterator[ItemPiece]:
        """A streaming raw reader's items of ``chunk`` (``item_runs.chunk_items``)."""
        runs = Runs.of(chunk, is_last, self.rank, self.world_size, self._item_batch())
        files = set(runs.file)
        table = self.plan.tfds_id_prefix_table(np.fromiter(files, np.int64, len(files)))
        names = {file_index: table[file_index] for file_index in files}
        fallback = partial(self._fallback_items, chunk, runs)
        yield from chunk_items(
            runs, chunk.epoch, Closes(runs, shards), names, self._shard, fallback
        )

    def _fallback_items(
        self, chunk: Chunk, runs: Runs, begin: int, *read: Any
    ) -> Iterator[ItemPiece]:
        # How large records are, from the runs read here: the runs the streams serve are
        # taken item by item, unseen.
        if read[0] and not read[1]:
            self._measure(read[0])
        for batch in self._batch(chunk, runs, begin, *read):
            yield batch.epoch, batch.positions, batch.iter_items()

    def _read_spans(
        self, runs: Runs, window: list[tuple[int, int]], closes: Closes
    ) -> list[Any] | None:
        first_run, stop_run = window[0][0], window[-1][1]
        closes.start_window(first_run, stop_run)
        shard = partial(self._shard, closes.shards)
        records = read_spans(runs, first_run, stop_run, shard, partial(self._finished, closes))
        if records:
            # About _WINDOW_BYTES per window, from the sizes of some records just read.
            self._measure(records)
        return records

    def _measure(self, records: list[Any]) -> None:
        """Records' bytes (with their framing) from a sample of ``records``, not empty."""
        sample = records[:: max(1, len(records) // 64)]
        self._record_bytes = 16 + sum(map(len, sample)) // len(sample)

    def _finished(self, closes: Closes, file_index: int) -> None:
        closes.finished(file_index)
        self._spans_ahead.advance()

    def _shard(self, shards: dict[int, Shard], file_index: int) -> Shard:
        shard = shards.get(file_index)
        if shard is None:
            self._warmer.opening()
            shard = shards[file_index] = self._open(file_index)
        return shard

    def _read_runs(
        self,
        chunk: Chunk,
        runs: Runs,
        first_run: int,
        stop_run: int,
        closes: Closes,
    ) -> Iterator[Batch]:
        """One batch read run by run: streams, seeks, and one record at a time after damage."""
        read = read_runs(runs, first_run, stop_run, closes, self._shard, self._sequential)
        records, lost = read[0], read[1]
        if first_run == 0 and records and not lost:  # once per chunk: how large records are
            self._measure(records)
        yield from self._batch(chunk, runs, runs.start[first_run], *read)

    def _batch(
        self,
        chunk: Chunk,
        runs: Runs,
        begin: int,
        records: list[Any],
        lost: int,
        failure: Exception | None = None,
    ) -> Iterator[Batch]:
        """The batch of ``records`` of deliveries ``begin ..`` of ``runs``; then ``failure``,
        located."""
        end = begin + len(records)  # where a read failure happened
        if lost:
            records, taken = without_lost(
                records, np.arange(begin, end), chunk.epoch, runs, self.report, self._path
            )
            columns = runs.positions[taken], runs.file_index[taken], runs.record_index[taken]
        else:
            # Copies: a batch's arrays are its own, never views of the plan's.
            columns = (
                runs.positions[begin:end].copy(),
                runs.file_index[begin:end].copy(),
                runs.record_index[begin:end].copy(),
            )
        if records:
            yield Batch(
                plan=self.plan,
                epoch=chunk.epoch,
                records=records,
                positions=columns[0],
                file_index=columns[1],
                record_index=columns[2],
            )
        if failure is not None:
            # A read failure stops after the records taken.
            raise located_at(failure, chunk.epoch, runs, end, self._path) from failure

    def _located_in(self, failure: Exception, batch: Batch, k: int) -> Exception:
        """The failure of record ``k`` of ``batch``, with its plan position."""
        return located_at(failure, batch.epoch, batch, k, self._path)

    def _open(self, file_index: int) -> Shard:
        check_files_reachable(self.plan, self.data_dir)
        return Shard(
            self._path(file_index),
            end=int(self._ends[file_index]),
            planned=int(self.plan.instructions.examples_in_shard[file_index]),
            sequential=self._sequential,
            report=self.report if self.on_corruption == "skip" else None,
            skip=self.on_corruption == "skip",
            container=self._container,
            index_dir=self.index_dir,
            storage_options=self.storage_options,
            check=self._binding.due(file_index),
        )

    def _path(self, file_index: int) -> str:
        """Where the reader opens file ``file_index`` (named on demand, never all at once)."""
        filename = self.plan.instructions.filename(file_index)
        return filename if self.data_dir is None else join(self.data_dir, basename(filename))
