"""tf.data's ``interleave`` order in closed form.

The normative description is ``specs/order.md`` (section "Interleave").  The sequential
state machine (slots, cursor, block counter, lazy refill) is equivalent to a schedule
that readplan computes without stepping it:

* The cursor visits slot ``0, 1, ..., c-1`` in *rounds*; every visit ends by moving on,
  so a visit is identified by its key ``round * c + slot``.
* An input of ``length`` records opened in some slot at round ``R`` produces a block of
  ``min(b, rest)`` records in each of the rounds ``R .. R + ceil(length / b) - 1`` and
  occupies the slot for exactly ``length // b + 1`` rounds: exhaustion is only found by
  a read that returns nothing, which costs a visit when the last block was full (and the
  single visit of an empty input).
* A slot asks for the next input on its first visit after being freed, and inputs are
  handed out in order, so input ``i`` goes to the slot with the smallest pending request
  key: list scheduling with a heap of ``c`` keys, ``O(N log c)`` for ``N`` inputs.

Everything else (the order, position <-> location, the state after any position) follows
from the per-input ``(slot, start round)`` pairs with vectorised arithmetic, so nothing
is replayed element by element.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from readplan._internal.arrays import IntArray
from readplan._internal.sorting import stable_order
from readplan._internal.validate import not_int
from readplan.errors import ConfigError

__all__ = ["InterleaveSchedule", "InterleaveState", "SlotState", "interleave_order"]


# Dense bucketing of visits by key is linear but needs an array as large as
# rounds * slots; past this multiple of the visit count a sort is cheaper.
_DENSE_LIMIT_FACTOR = 4
# Up to this many slots a window minimum takes one pass per slot (numpy accumulates along
# short rows slowly); beyond it, a pass per block of slots.
_WINDOW_LOOP_LIMIT = 64
# Rounds of inputs the first guess of the slot assignment covers (it grows while it holds).
_GUESS_GENERATIONS = 64


def interleave_order(
    lengths: Sequence[int] | npt.ArrayLike, *, cycle_length: int, block_length: int | None = 1
) -> tuple[IntArray, IntArray]:
    """``Dataset.from_tensor_slices(inputs).interleave(f, cycle_length, block_length)``.

    Returns ``(input_index, index_within_input)``: for every output element, which input
    it came from and its position inside that input.  ``block_length=None`` means 1, as
    in tf.data.  See ``specs/order.md``.
    """
    schedule = InterleaveSchedule(
        lengths=np.asarray(lengths, dtype=np.int64),
        cycle_length=cycle_length,
        block_length=1 if block_length is None else block_length,
    )
    return schedule.order()


@dataclass(frozen=True)
class SlotState:
    """One interleave slot: the input it holds (``None``: empty) and records read from it."""

    input_index: int | None
    consumed: int


@dataclass(frozen=True)
class InterleaveState:
    """The interleave's complete state after some number of outputs.

    It is exactly the state of the sequential state machine of ``specs/order.md`` right
    after it returned output ``position - 1``: ``slots`` (length ``cycle_length``), the
    cursor, the block counter, the next input to open, whether a pull already failed,
    and per input how many of its records were delivered.
    """

    position: int
    slots: tuple[SlotState, ...]
    cursor: int
    block_counter: int
    next_input: int
    inputs_done: bool
    consumed: tuple[int, ...]


class InterleaveSchedule:
    """The closed-form schedule of one interleave over inputs of known lengths.

    Building it costs ``O(N log c)``; afterwards ``order()`` is a few linear NumPy
    passes, ``locate``/``position_of``/``state_at`` cost ``O(N)`` vectorised work (no
    dependence on the position), and ``iter_chunks`` streams with memory bounded by the
    number of inputs plus the chunk.
    """

    def __init__(self, *, lengths: IntArray, cycle_length: int, block_length: int) -> None:
        _check_positive("cycle_length", cycle_length)
        _check_positive("block_length", block_length)
        lengths = np.ascontiguousarray(lengths, dtype=np.int64)
        if lengths.ndim != 1:
            raise ConfigError(
                f"interleave lengths must be a 1-D sequence of record counts, got shape "
                f"{lengths.shape}",
                field="lengths",
                value=lengths.shape,
            )
        if lengths.size and int(lengths.min()) < 0:
            bad = int(np.flatnonzero(lengths < 0)[0])
            raise ConfigError(
                f"interleave input {bad} has a negative length {int(lengths[bad])}; every "
                "input must hold zero or more records",
                field="lengths",
                value=int(lengths[bad]),
            )
        self.lengths = lengths
        self.cycle_length = cycle_length
        self.block_length = block_length
        self.num_inputs = int(lengths.size)
        self.num_records = int(lengths.sum())
        # Slots beyond the number of inputs never hold one and are skipped for free, so
        # the order only depends on the first min(c, N) slots.
        self.active_slots = max(1, min(cycle_length, self.num_inputs))
        # Rounds each input holds its slot; producing visits per input. Neither is kept:
        # each is one pass, and a fresh epoch pays for every array it keeps in page faults.
        occupancy = lengths // block_length + 1
        self.slot, self.start_round, self.first_failed_pull = self._assign(occupancy)
        del occupancy
        self.num_rounds = int(self._end_rounds().max()) if self.num_inputs else 0
        self._round_cache: tuple[int, int] | None = None

    @property
    def nbytes(self) -> int:
        """Bytes held by the schedule's per-input arrays."""
        arrays = (self.lengths, self.slot, self.start_round)
        index = self.__dict__.get("_slot_index", ())
        return sum(array.nbytes for array in (*arrays, *index))

    def _end_rounds(self, inputs: IntArray | slice = slice(None)) -> IntArray:
        """The first round without output of each of ``inputs`` (computed, not kept)."""
        return self.start_round[inputs] - (-self.lengths[inputs] // self.block_length)

    # -- construction -------------------------------------------------------------

    def _assign(self, occupancy: IntArray) -> tuple[IntArray, IntArray, int]:
        """Hand inputs to slots in request order (list scheduling over request keys).

        Input ``i`` goes to the slot whose pending request key is smallest; the slot's next
        request comes ``occupancy[i]`` rounds later. Guessing that the slots keep taking
        inputs in turn (in the order of their keys) gives every key with a cumulative sum
        per slot; a guess is right for input ``i`` exactly when its key is below every
        other slot's pending key, which are the next keys of the guess. Each pass keeps
        the prefix the guess got right and guesses again from there.
        """
        c = self.cycle_length
        n = self.num_inputs
        # Including slot N when c > N records where the first pull fails (round 0).
        pending = np.arange(min(c, n + 1), dtype=np.int64)
        keys = np.empty(n, dtype=np.int64)
        done = 0
        block = pending.size * _GUESS_GENERATIONS
        while done < n:
            taken, pending = _take_in_turn(np.sort(pending), occupancy[done : done + block] * c)
            keys[done : done + taken.size] = taken
            done += taken.size
            if taken.size < 2 * pending.size and done < n:
                # The slots keep changing places (occupancies differing by a little): one
                # request at a time is cheaper for a while than guessing.
                steps = occupancy[done : done + block] * c
                taken, pending = _take_one_by_one(pending, steps)
                keys[done : done + taken.size] = taken
                done += taken.size
            else:
                block = block * 2 if taken.size == block else max(block // 2, pending.size)
        start = keys // c  # np.divmod is several times slower than these two passes
        return keys - start * c, start, int(pending.min())

    # -- counting -----------------------------------------------------------------

    def records_before_round(self, round_: int) -> int:
        """Records produced in rounds ``< round_``."""
        return self._records_before(np.full(self.active_slots, round_, dtype=np.int64))

    def records_before_visit(self, round_: int, slot: int) -> int:
        """Records produced by visits whose key precedes ``(round_, slot)``."""
        slots = np.arange(self.active_slots, dtype=np.int64)
        return self._records_before(round_ + (slots < slot))

    def _records_before(self, rounds: IntArray) -> int:
        """Records slot ``s`` produced before round ``rounds[s]``, summed over the slots.

        A slot's inputs follow one another, so every input of the slot before the last one
        started by then is exhausted; only that last one is partly read. Each query is a
        search per slot, not a pass over the inputs.
        """
        if not self.num_inputs:
            return 0
        keys, before, first = self._slot_index
        # Before round 0 nothing is read, after the last everything: clamping keeps the keys
        # of one slot apart from the next slot's.
        rounds = np.clip(rounds, 0, self.num_rounds + 1)
        bases = np.arange(self.active_slots, dtype=np.int64) * self._key_span
        last = np.searchsorted(keys, bases + rounds, side="right") - 1
        started = last >= first
        current = np.where(started, last, 0)
        # The slot's last started input: its length and start round, from its entries.
        length = before[current + 1] - before[current]
        start = keys[current] - bases
        partial = np.minimum(length, np.maximum(rounds - start, 0) * self.block_length)
        return int(np.where(started, before[last] - before[first] + partial, 0).sum())

    @cached_property
    def _slot_index(self) -> tuple[IntArray, IntArray, IntArray]:
        """With inputs grouped by slot (in start order within a slot): their ``slot * span
        + start round`` keys, the records of the inputs before each (and after the last),
        and each slot's first entry."""
        slots = np.arange(self.active_slots, dtype=np.int64) * self._key_span
        by_slot = stable_order(self.slot, self.active_slots)
        keys = self.slot[by_slot]
        keys *= self._key_span
        first = np.searchsorted(keys, slots)
        keys += self.start_round[by_slot]
        before = np.empty(self.num_inputs + 1, dtype=np.int64)
        before[0] = 0
        np.cumsum(self.lengths[by_slot], out=before[1:])
        return keys, before, first

    @property
    def _key_span(self) -> int:
        return self.num_rounds + 2  # beyond every start round and every queried round

    def _round_of_position(self, position: int) -> int:
        """The round that produces output ``position`` (binary search on rounds)."""
        lo, hi = 0, self.num_rounds  # invariant: records_before_round(lo) <= position
        cache = self._round_cache
        if cache is not None and cache[1] <= position:
            lo = cache[0]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.records_before_round(mid) <= position:
                lo = mid
            else:
                hi = mid
        return lo

    def _round_blocks(self, round_: int) -> tuple[IntArray, IntArray]:
        """Inputs producing in ``round_`` in slot order, with their block sizes."""
        since = round_ - self.start_round  # producing: started, and not past its last visit
        active = np.flatnonzero((since >= 0) & (since < -(-self.lengths // self.block_length)))
        active = active[np.argsort(self.slot[active], kind="stable")]
        produced = (round_ - self.start_round[active]) * self.block_length
        sizes = np.minimum(self.block_length, self.lengths[active] - produced)
        return active, sizes

    # -- position <-> location ------------------------------------------------------

    def locate(self, position: int) -> tuple[int, int]:
        """``(input_index, index_within_input)`` of output ``position``."""
        self.check_position(position, allow_end=False)
        round_ = self._round_of_position(position)
        before = self.records_before_round(round_)
        self._round_cache = (round_, before)
        active, sizes = self._round_blocks(round_)
        ends = np.cumsum(sizes)
        k = int(np.searchsorted(ends, position - before, side="right"))
        within_block = position - before - (int(ends[k - 1]) if k else 0)
        i = int(active[k])
        return i, int((round_ - self.start_round[i]) * self.block_length) + within_block

    def position_of(self, input_index: int, index_within_input: int) -> int:
        """The output position of record ``index_within_input`` of input ``input_index``."""
        if not 0 <= input_index < self.num_inputs:
            raise ConfigError(
                f"input index {input_index} is out of range: the interleave has "
                f"{self.num_inputs} inputs (valid: 0..{self.num_inputs - 1})",
                field="input_index",
                value=input_index,
            )
        length = int(self.lengths[input_index])
        if not 0 <= index_within_input < length:
            raise ConfigError(
                f"record {index_within_input} is out of range for input {input_index}, "
                f"which holds {length} records (valid: 0..{length - 1})",
                field="index_within_input",
                value=index_within_input,
            )
        visit, within_block = divmod(index_within_input, self.block_length)
        round_ = int(self.start_round[input_index]) + visit
        return self.records_before_visit(round_, int(self.slot[input_index])) + within_block

    # -- state ----------------------------------------------------------------------

    def state_at(self, position: int) -> InterleaveState:
        """The state machine's state after ``position`` outputs, in ``O(N + c)``."""
        self.check_position(position, allow_end=True)
        c = self.cycle_length
        if position == 0:
            return InterleaveState(
                position=0,
                slots=tuple(SlotState(None, 0) for _ in range(c)),
                cursor=0,
                block_counter=0,
                next_input=0,
                inputs_done=False,
                consumed=(0,) * self.num_inputs,
            )
        last_input, last_index = self.locate(position - 1)
        round_ = int(self.start_round[last_input]) + last_index // self.block_length
        slot = int(self.slot[last_input])
        block_counter = last_index % self.block_length + 1
        if block_counter == self.block_length:
            # The block is complete: the cursor moved on, the slot's next visit is later.
            block_counter = 0
            cursor = (slot + 1) % c
            now = round_ * c + slot + 1  # key of the next visit
        else:
            cursor = slot
            now = round_ * c + slot  # still inside this visit
        # Every slot's next visit: this round if its key is not behind `now`.
        slot_ids = np.arange(self.active_slots)
        next_round = np.where(round_ * c + slot_ids >= now, round_, round_ + 1)
        rho = next_round[self.slot]
        mid_visit = block_counter != 0
        occupancy = self.lengths // self.block_length + 1
        held = (self.start_round < rho) & (rho < self.start_round + occupancy)
        consumed = np.minimum(self.lengths, (rho - self.start_round) * self.block_length)
        opened = self.start_round * c + self.slot < now + (1 if mid_visit else 0)
        consumed = np.where(opened, consumed, 0)
        if mid_visit:
            held[last_input] = True
            consumed[last_input] = last_index + 1
        slots = [SlotState(None, 0)] * c
        for i in np.flatnonzero(held).tolist():
            slots[int(self.slot[i])] = SlotState(i, int(consumed[i]))
        return InterleaveState(
            position=position,
            slots=tuple(slots),
            cursor=cursor,
            block_counter=block_counter,
            next_input=int(np.count_nonzero(opened)),
            inputs_done=self.first_failed_pull < now,
            consumed=tuple(consumed.tolist()),
        )

    # -- order ----------------------------------------------------------------------

    def order(self) -> tuple[IntArray, IntArray]:
        """The whole order as ``(input_index, index_within_input)``."""
        inputs = np.arange(self.num_inputs, dtype=np.int64)
        inp, rec, _ = self._expand_rounds(inputs, 0, self.num_rounds)
        return inp, rec

    def iter_chunks(
        self, *, start: int = 0, chunk_size: int = 1 << 20
    ) -> Iterator[tuple[IntArray, IntArray]]:
        """Stream the order from output ``start`` in chunks of ``chunk_size`` (the last
        one holds the rest).

        Memory is bounded by the number of inputs plus the chunk: only the inputs that
        produce inside the rounds being expanded are touched.  Each chunk is a slice of
        the rounds expanded for it, never a copy: the round it ends in is expanded again
        for the next one (a few blocks, where joining the rest costs a fresh chunk).
        """
        _check_positive("chunk_size", chunk_size)
        self.check_position(start, allow_end=True)
        if start == self.num_records:
            return
        position = start
        round_ = self._round_of_position(start)
        skip = start - self.records_before_round(round_)  # records of round_ before start
        # Inputs are handed out in round order, so the inputs still to start form a
        # suffix; `active` holds the ones that started and may still produce.
        started = int(np.searchsorted(self.start_round, round_, side="right"))
        active = np.flatnonzero(self._end_rounds(slice(0, started)) > round_)
        per_round = self.active_slots * self.block_length  # most records a round holds
        while position < self.num_records:
            need = min(chunk_size, self.num_records - position)
            pieces: list[tuple[IntArray, IntArray, IntArray]] = []
            got, stop = -skip, round_
            while got < need:
                if stop == self.num_rounds:
                    raise AssertionError("the rounds hold fewer records than the schedule")
                # The rounds still needed at the records per round seen so far, and a few
                # more: falling short costs a second expansion and a copy of the chunk.
                rounds = (need - got) * 65 // (64 * per_round) + 2
                first, stop = stop, min(stop + rounds, self.num_rounds)
                newly = int(np.searchsorted(self.start_round, stop - 1, side="right"))
                active = np.concatenate([active, np.arange(started, newly, dtype=np.int64)])
                started = newly
                pieces.append(self._expand_rounds(active, first, stop))
                got += pieces[-1][0].size
                if pieces[-1][0].size:  # short rounds (inputs ending): guess from these
                    per_round = max(1, pieces[-1][0].size // (stop - first))
            inp, rec, counts = (
                pieces[0]
                if len(pieces) == 1
                else tuple(np.concatenate(parts) for parts in zip(*pieces))
            )
            # Every whole chunk the rounds hold (small chunks: several).
            while need and skip + need <= inp.size:
                yield inp[skip : skip + need], rec[skip : skip + need]
                skip, position = skip + need, position + need
                need = min(chunk_size, self.num_records - position)
            # The next chunk starts in the round holding the first record not yielded.
            ends = np.cumsum(counts)
            within = int(np.searchsorted(ends, skip, side="right"))
            skip -= int(ends[within - 1]) if within else 0
            round_ += within
            active = active[self._end_rounds(active) > round_]

    def _expand_rounds(
        self, inputs: IntArray, first_round: int, stop_round: int
    ) -> tuple[IntArray, IntArray, IntArray]:
        """Outputs of rounds ``[first_round, stop_round)`` produced by ``inputs``, and the
        records of each of those rounds."""
        b = self.block_length
        rounds = stop_round - first_round
        start = self.start_round[inputs]
        visits = self._end_rounds(inputs) - start
        v_lo = np.clip(first_round - start, 0, visits)
        v_hi = np.clip(stop_round - start, 0, visits)
        nv = v_hi - v_lo
        keep = nv > 0
        inputs, start, v_lo, nv = inputs[keep], start[keep], v_lo[keep], nv[keep]
        total_visits = int(nv.sum())
        if total_visits == 0:
            return _empty(), _empty(), np.zeros(max(rounds, 0), dtype=np.int64)
        # One row per visit: which input, and which of its visits.
        visit_input = np.repeat(inputs, nv)
        group_start = np.cumsum(nv) - nv
        visit_no = np.arange(total_visits, dtype=np.int64) - np.repeat(group_start - v_lo, nv)
        width = self.active_slots
        key = (start.repeat(nv) + visit_no - first_round) * width + self.slot[visit_input]
        order = _sort_unique_keys(key, rounds * width)
        visit_input, visit_no = visit_input[order], visit_no[order]
        first_record = visit_no * b
        sizes = np.minimum(b, self.lengths[visit_input] - first_record)
        counts = np.bincount(key[order] // width, weights=sizes, minlength=rounds)
        # Expand visits into records: record = first_record + (output - visit's first output).
        out_start = np.cumsum(sizes) - sizes
        total = int(out_start[-1] + sizes[-1])
        record = np.arange(total, dtype=np.int64)
        record -= np.repeat(out_start - first_record, sizes)
        return np.repeat(visit_input, sizes), record, counts.astype(np.int64)

    def check_position(self, position: int, *, allow_end: bool) -> None:
        """Refuse a position outside the order (``allow_end``: the end itself is valid)."""
        limit = self.num_records if allow_end else self.num_records - 1
        if not_int(position) or not 0 <= position <= limit:
            raise ConfigError(
                f"position {position!r} is out of range: an epoch of this order has "
                f"{self.num_records} records (valid: 0..{limit})",
                field="position",
                value=position,
            )


def _take_in_turn(pending: IntArray, steps: IntArray) -> tuple[IntArray, IntArray]:
    """Request keys of the longest prefix of inputs that slots taking turns get right.

    ``pending`` holds the slots' request keys, ascending; input ``k`` holds its slot for
    ``steps[k]`` key units. Returns the keys the prefix's inputs are taken at and the
    slots' pending keys after it.
    """
    width = pending.size
    count = steps.size
    rows = -(-(count + width) // width)
    flat = np.zeros(rows * width, dtype=np.int64)
    flat[:count] = steps
    grid = flat.reshape(rows, width)
    # Row g, column l: the key at which slot l (in key order) takes its g-th input; the
    # rows past the inputs hold each slot's pending key after all of them.
    guess = (np.cumsum(grid, axis=0) - grid + pending).reshape(-1)[: count + width]
    right = _right_prefix(guess, width, count)
    return guess[:right], guess[right : right + width]


def _right_prefix(guess: IntArray, width: int, count: int) -> int:
    """How many of the first ``count`` keys the guess gets right.

    Before input ``k`` is taken, the other slots wait at the guess's next ``width - 1``
    keys, so key ``k`` is right when it is the minimum of ``guess[k : k + width]``. Keys
    whose window lies inside the ascending run the guess starts with are right, and the
    key before the run's first descent is not: only the windows reaching past the descent
    need their minima.
    """
    if width == 1 or count == 0:
        return count
    values = guess[: count + width - 1]
    descends = values[1:] <= values[:-1]
    drop = int(descends.argmax())
    if not descends[drop]:
        return count
    low, high = max(0, drop - width + 1), min(drop, count - 1)
    lowest = _window_minima(guess[low : high + width], width, high - low + 1)
    wrong = np.flatnonzero(lowest != guess[low : high + 1])
    return low + int(wrong[0]) if wrong.size else count


def _window_minima(values: IntArray, width: int, count: int) -> IntArray:
    """``min(values[k : k + width])`` for ``k < count`` (``values`` holds that many).

    A few slots: one pass per offset. Many (the cycle can be as long as the inputs): each
    window is the minimum of a suffix of one block of ``width`` and a prefix of the next
    (van Herk / Gil-Werman), so the cost stays linear whatever the width.
    """
    if width <= _WINDOW_LOOP_LIMIT:
        lowest: IntArray = values[:count].copy()
        for ahead in range(1, width):
            np.minimum(lowest, values[ahead : ahead + count], out=lowest)
        return lowest
    rows = -(-(count + width - 1) // width)
    flat = np.full(rows * width, np.iinfo(np.int64).max, dtype=np.int64)
    used = min(values.size, flat.size)
    flat[:used] = values[:used]
    grid = flat.reshape(rows, width)
    prefix: IntArray = np.minimum.accumulate(grid, axis=1).reshape(-1)
    suffix: IntArray = np.minimum.accumulate(grid[:, ::-1], axis=1)[:, ::-1].reshape(-1)
    return np.minimum(suffix[:count], prefix[width - 1 : width - 1 + count])


def _take_one_by_one(pending: IntArray, steps: IntArray) -> tuple[IntArray, IntArray]:
    """The same as :func:`_take_in_turn` for every input, with a heap of request keys."""
    heap = pending.tolist()
    heapq.heapify(heap)
    taken = []
    for step in steps.tolist():
        taken.append(heap[0])
        heapq.heapreplace(heap, heap[0] + step)
    return np.array(taken, dtype=np.int64), np.array(heap, dtype=np.int64)


def _sort_unique_keys(key: IntArray, key_space: int) -> IntArray:
    """Indices that sort distinct non-negative ``key`` values (bucket or merge sort)."""
    if key_space <= _DENSE_LIMIT_FACTOR * key.size:
        buckets = np.full(key_space, -1, dtype=np.int64)
        buckets[key] = np.arange(key.size, dtype=np.int64)
        return buckets[buckets >= 0]
    return np.argsort(key, kind="stable")


def _empty() -> IntArray:
    return np.empty(0, dtype=np.int64)


def _check_positive(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ConfigError(
            f"{name} must be a positive integer, got {value!r}: tf.data rejects zero and "
            f"negative values, and readplan needs the resolved number (not AUTOTUNE)",
            field=name,
            value=value,
        )
