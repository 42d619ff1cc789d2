"""From a split to the files TFDS reads: FileInstruction, file_instructions(), even splits.

``specs/splits.md`` is normative (§4 "Resolution", §5-7 "File instructions" and quirks,
§8 "Strict mode", §9 "Even splits").  In the default compatibility mode the results are TFDS
4.9.10's, quirks included; ``strict=True`` rejects the quirks instead.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np

from readplan._internal.arrays import IntArray
from readplan._internal.validate import INT64_MAX, is_int
from readplan.errors import ConfigError, EmptySplitError, ReadplanTypeError, SplitError
from readplan.metadata.dataset_info import DatasetInfo, SplitInfo
from readplan.planning.file_instruction import FileInstruction
from readplan.planning.splits import (
    AllSplits,
    ReadInstruction,
    SplitArg,
    SplitSpec,
    mixed_units,
    parse_split,
)

__all__ = [
    "FileInstruction",
    "InstructionTable",
    "LazySplit",
    "even_splits",
    "file_instructions",
    "instruction_table",
    "split_for_process",
]

_EMPTY = np.zeros(0, dtype=np.int64)
# At most this many file names are kept formatted (a plan may have millions of files).
_NAMED = 1 << 12


@dataclass(frozen=True)
class _Range:
    """A resolved part: records ``[start, stop)`` of ``split`` (``start > stop`` possible)."""

    part: ReadInstruction
    split: SplitInfo
    start: int
    stop: int


# ---------------------------------------------------------------------------------------------
# Resolution


def _resolve(info: DatasetInfo, spec: SplitArg) -> list[_Range]:
    text = str(spec)
    ranges: list[_Range] = []
    for part in SplitSpec.of(spec).parts:
        if isinstance(part, AllSplits):
            ranges.extend(_resolve_part(info, ReadInstruction(name), text) for name in info.splits)
        else:
            ranges.append(_resolve_part(info, part, text))
    return ranges


def _resolve_part(info: DatasetInfo, part: ReadInstruction, spec: str) -> _Range:
    split = info.splits.get(part.split_name)
    if split is None:
        message = f"Unknown split {part.split_name!r}. Should be one of {list(info.splits)}."
        raise SplitError(
            f"{message}\nSplit names are case-sensitive; dataset {info.name!r} has "
            f"{', '.join(repr(name) for name in info.splits)}.",
            spec=spec,
            part=str(part),
            tfds_message=message,
        )
    n = split.num_examples
    if part.unit == "%":
        start = 0 if part.from_ is None else _percent(part, part.from_, n, spec)
        stop = n if part.to is None else _percent(part, part.to, n, spec)
    elif part.unit == "shard":
        assert part.from_ is None or isinstance(part.from_, int)  # ReadInstruction checks
        assert part.to is None or isinstance(part.to, int)
        start = 0 if part.from_ is None else split.records_before(part.from_)
        # TFDS shifts every stop bound <= 0 by the shard count, so [:0shard] is everything.
        to = part.to if part.to is None or part.to > 0 else part.to + split.num_shards
        stop = n if to is None else split.records_before(to)
    else:
        assert part.from_ is None or isinstance(part.from_, int)
        assert part.to is None or isinstance(part.to, int)
        start = 0 if part.from_ is None else part.from_
        stop = n if part.to is None else part.to
    if abs(start) > n or abs(stop) > n:
        message = f"Requested slice [{start or ''}:{stop or ''}] incompatible with {n} examples."
        raise SplitError(
            f"{message}\n{str(part)!r} asks for records beyond split {split.name!r}, which has "
            f"{n}; record bounds must lie in [-{n}, {n}] (use '%' for proportions).",
            spec=spec,
            part=str(part),
            tfds_message=message,
        )
    return _Range(part, split, start + n if start < 0 else start, stop + n if stop < 0 else stop)


def _percent(part: ReadInstruction, bound: int | float, n: int, spec: str) -> int:
    if part.rounding == "closest":
        # Binary64, product first, then division, then ties-to-even: TFDS's exact order.
        return round(bound * n / 100.0)
    if n < 100:
        message = (
            'Using "pct1_dropremainder" rounding on a split with less than 100 elements is '
            "forbidden: it always results in an empty dataset."
        )
        raise SplitError(
            f"{message}\nSplit {part.split_name!r} has {n} records, so 1% of it rounds down "
            "to 0; use rounding='closest'.",
            spec=spec,
            part=repr(part),
            tfds_message=message,
        )
    value = bound * math.trunc(n / 100.0)
    if isinstance(value, float) and not value.is_integer():
        raise SplitError(
            f"{part!r}: {bound}% with rounding='pct1_dropremainder' is {value} records of "
            f"split {part.split_name!r}, not a whole number. TFDS would pass the fraction on "
            "to the reader; readplan refuses it. Use whole or suitably rounded percentages.",
            spec=spec,
            part=repr(part),
        )
    return int(value)


# ---------------------------------------------------------------------------------------------
# File instructions


def file_instructions(
    info: DatasetInfo, spec: SplitArg, *, strict: bool = False
) -> list[FileInstruction]:
    """The files TFDS reads for ``spec`` over ``info``, in TFDS's order.

    File names are basenames when ``info.data_dir`` is None, else full paths.  An empty
    result is returned as ``[]`` (TFDS only fails when reading it); with ``strict=True``
    it, and every quirk listed in ``specs/splits.md`` §8, raise SplitError.  A
    :class:`LazySplit` (from :func:`even_splits` without ``info``) is resolved first.
    """
    return list(instruction_table(info, spec, strict=strict))


def instruction_table(
    info: DatasetInfo, spec: SplitArg, *, strict: bool = False
) -> InstructionTable:
    """:func:`file_instructions` as an :class:`InstructionTable`, without a step per file."""
    if isinstance(spec, LazySplit):
        spec = spec.resolve(info)
    ranges = _resolve(info, spec)
    if strict:
        _check_strict(ranges, spec)
    names = tuple(dict.fromkeys(entry.split.name for entry in ranges))
    parts = [_shard_columns(entry, names.index(entry.split.name)) for entry in ranges]
    columns = [np.concatenate(column) for column in zip(*parts)] if parts else [_EMPTY] * 5
    split, shard, skip, take, size = columns
    return InstructionTable(
        skip=skip,
        take=take,
        examples_in_shard=size,
        split=split,
        shard_index=shard,
        split_names=names,
        info=info,
    )


def _shard_columns(entry: _Range, split_id: int) -> tuple[IntArray, ...]:
    """``(split, shard, skip, take, examples_in_shard)`` of the range's instructions."""
    start, stop = entry.start, entry.stop
    offsets = np.asarray(entry.split.shard_offsets, dtype=np.int64)
    # From the first shard whose end lies beyond ``start`` to the last one starting before
    # ``stop``; empty shards never contribute.
    first = int(np.searchsorted(offsets, start, side="right")) - 1
    last = int(np.searchsorted(offsets[:-1], stop, side="left"))
    shard = np.arange(first, max(first, last), dtype=np.int64)
    low, high = offsets[shard], offsets[shard + 1]
    skip = np.maximum(start - low, 0)
    # ``stop - low - skip`` is negative for an inverted range inside one shard.
    take = np.where(stop < high, stop - low - skip, high - low - skip)
    keep = (high > low) & (take != 0)
    size = (high - low)[keep]
    skip, take = skip[keep], take[keep]
    # FileInstruction reads a take of -1 as "to the end of the file".
    take = np.where(take == -1, size - skip, take)
    return np.full(size.size, split_id, dtype=np.int64), shard[keep], skip, take, size


class InstructionTable(Sequence[FileInstruction]):
    """FileInstructions held as columns; each :class:`FileInstruction` is built on access.

    Plans over hundreds of thousands of files work from the columns (``skip``, ``take``,
    ``num_records``, ``examples_in_shard``, ``split`` (an index into ``split_names``, -1 for
    none), ``shard_index`` (-1 for none)); file names are formatted from ``info`` when asked
    for, or given as ``filenames``.
    """

    def __init__(
        self,
        *,
        skip: IntArray,
        take: IntArray,
        examples_in_shard: IntArray,
        split: IntArray,
        shard_index: IntArray,
        split_names: tuple[str, ...],
        info: DatasetInfo | None = None,
        filenames: tuple[str, ...] | None = None,
    ) -> None:
        if (info is None) == (filenames is None):
            raise TypeError("an InstructionTable needs either info or filenames")
        self.skip, self.take, self.examples_in_shard = skip, take, examples_in_shard
        self.split, self.shard_index, self.split_names = split, shard_index, split_names
        self.num_records = np.where(take >= 0, take, examples_in_shard - skip)
        for column in (skip, take, examples_in_shard, split, shard_index, self.num_records):
            column.flags.writeable = False
        self._info, self._filenames = info, filenames
        # Names formatted lately: a reader opens each file once, reader after reader (a
        # plan may have millions of files, so only the latest are kept).
        self._named: dict[int, str] = {}

    @classmethod
    def of(cls, instructions: Sequence[FileInstruction]) -> InstructionTable:
        """The table of given instructions (one step per instruction)."""
        names = tuple(dict.fromkeys(fi.split for fi in instructions if fi.split is not None))
        column = functools.partial(np.fromiter, dtype=np.int64, count=len(instructions))
        return cls(
            skip=column(fi.skip for fi in instructions),
            take=column(fi.take for fi in instructions),
            examples_in_shard=column(fi.examples_in_shard for fi in instructions),
            split=column(-1 if fi.split is None else names.index(fi.split) for fi in instructions),
            shard_index=column(
                -1 if fi.shard_index is None else fi.shard_index for fi in instructions
            ),
            split_names=names,
            filenames=tuple(fi.filename for fi in instructions),
        )

    def __len__(self) -> int:
        return int(self.skip.size)

    @overload
    def __getitem__(self, index: int) -> FileInstruction: ...

    @overload
    def __getitem__(self, index: slice) -> list[FileInstruction]: ...

    def __getitem__(self, index: int | slice) -> FileInstruction | list[FileInstruction]:
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(len(self)))]
        k = range(len(self))[index]
        split = int(self.split[k])
        shard = int(self.shard_index[k])
        return FileInstruction(
            self.filename(k),
            int(self.skip[k]),
            int(self.take[k]),
            int(self.examples_in_shard[k]),
            split=None if split < 0 else self.split_names[split],
            shard_index=None if shard < 0 else shard,
        )

    def filename(self, index: int) -> str:
        """The file name of instruction ``index``."""
        if self._filenames is not None:
            return self._filenames[index]
        named = self._named.get(index)
        if named is None:
            assert self._info is not None  # the constructor holds one of the two
            named = self._info.shard_path(
                self.split_names[int(self.split[index])], int(self.shard_index[index])
            )
            if len(self._named) >= _NAMED:
                self._named.clear()
            self._named[index] = named
        return named

    def __repr__(self) -> str:
        return f"InstructionTable({len(self)} files of {', '.join(self.split_names) or 'no split'})"


# ---------------------------------------------------------------------------------------------
# Strict mode


def _strict_error(
    spec: SplitArg, part: ReadInstruction, why: str, *, cls: type[SplitError] = SplitError
) -> SplitError:
    message = f"strict mode: part {str(part)!r} of {str(spec)!r}: {why}"
    return cls(message, spec=str(spec), part=str(part))


def _check_strict(ranges: Sequence[_Range], spec: SplitArg) -> None:
    if isinstance(spec, str):
        for part, unit in mixed_units(spec):
            shown = "%" if unit == "%" else "shard" if unit == "shard" else "records"
            raise SplitError(
                f"strict mode: part {part!r} of {spec!r} mixes units: TFDS reads both bounds "
                f"in the unit given ({shown}), so a bare number there is not a record index; "
                "write the unit on both bounds, e.g. 'train[10%:60%]'",
                spec=spec,
                part=part,
            )
    for entry in ranges:
        _check_shard_bounds(entry, spec)
        if entry.start > entry.stop:
            raise _strict_error(
                spec,
                entry.part,
                f"it resolves to the inverted range [{entry.start}, {entry.stop}) of split "
                f"{entry.split.name!r}. TFDS reads nothing for it, or the rest of a shard when "
                "both ends fall in one shard; swap the bounds.",
            )
        if entry.start == entry.stop:
            selected = "the split is empty" if entry.split.num_examples == 0 else "it is empty"
            raise _strict_error(
                spec,
                entry.part,
                f"it selects no records ({selected}: [{entry.start}, {entry.stop}) of "
                f"{entry.split.name!r}); TFDS fails with 'Instruction [] corresponds to no "
                "data!' when nothing at all is selected.",
                cls=EmptySplitError,
            )
    _check_overlaps(ranges, spec)


def _check_shard_bounds(entry: _Range, spec: SplitArg) -> None:
    part, count = entry.part, entry.split.num_shards
    if part.unit != "shard":
        return
    for bound in (part.from_, part.to):
        if bound is not None and not -count <= bound <= count:
            raise _strict_error(
                spec,
                part,
                f"shard bound {bound} is outside [-{count}, {count}] for split "
                f"{entry.split.name!r} ({count} shards); TFDS clamps it silently.",
            )
    # [-1shard] (from -1, to 0) is the documented last-shard form; any other stop of 0 is
    # read as "to the end" by TFDS, the opposite of Python slicing.
    if part.to == 0 and part.from_ != -1:
        raise _strict_error(
            spec,
            part,
            "a stop bound of 0shard reads to the end of the split in TFDS (so [:0shard] is "
            "the whole split); write the bound you mean, e.g. no stop bound.",
        )


def _check_overlaps(ranges: Sequence[_Range], spec: SplitArg) -> None:
    by_split: dict[str, list[_Range]] = {}
    for entry in ranges:
        by_split.setdefault(entry.split.name, []).append(entry)
    for entries in by_split.values():
        ordered = sorted(entries, key=lambda entry: entry.start)
        for first, second in itertools.pairwise(ordered):
            if second.start < first.stop:
                raise _strict_error(
                    spec,
                    second.part,
                    f"it overlaps part {str(first.part)!r}: both read records "
                    f"[{second.start}, {min(first.stop, second.stop)}) of split "
                    f"{first.split.name!r}, which would be read twice.",
                )


# ---------------------------------------------------------------------------------------------
# Even splits


def even_splits(
    split: SplitArg,
    n: int,
    *,
    info: DatasetInfo | None = None,
    drop_remainder: bool = False,
    strict: bool = False,
) -> list[str]:
    """``n`` split strings that divide ``split`` evenly, part by part (TFDS's even_splits).

    Each ``+`` part of ``split`` (after ``all`` expansion) is cut into ``n`` runs of records
    whose sizes differ by at most one, the longer ones first; with ``drop_remainder`` the
    remainder is left out instead.  ``strict`` rejects empty pieces and dropped remainders.
    See ``specs/splits.md`` §9.

    With ``info`` the sizes are taken up front and the results are ordinary split strings
    such as ``"train[0:4]"``.  Without it, as in TFDS, the sizes are only known when a
    dataset is given: the results are :class:`LazySplit` strings that
    :func:`file_instructions` and :class:`readplan.ReadPlan` resolve against their dataset
    (and that compose with ``+``).
    """
    _check_count(n, "n")
    if info is None:
        return [
            LazySplit((_EvenPiece(str(split), index, n, drop_remainder, strict),))
            for index in range(n)
        ]
    ranges = _even_ranges(split, n, info=info, drop_remainder=drop_remainder, strict=strict)
    return [_piece_spec(ranges, index, n, drop_remainder) for index in range(n)]


def split_for_process(
    split: SplitArg,
    process_index: int,
    process_count: int,
    *,
    info: DatasetInfo | None = None,
    drop_remainder: bool = False,
    strict: bool = False,
) -> str:
    """Sub-split ``process_index`` of ``even_splits(split, process_count, ...)``."""
    _check_count(process_count, "process_count")
    if not is_int(process_index) or not 0 <= process_index < process_count:
        raise ConfigError(
            f"process_index must be an int in [0, {process_count}) for {process_count} "
            f"processes, got {process_index!r}",
            field="process_index",
            value=process_index,
        )
    # The one piece is computed on its own: the count may be far too large to list them all.
    if info is None:
        return LazySplit(
            (_EvenPiece(str(split), process_index, process_count, drop_remainder, strict),)
        )
    ranges = _even_ranges(
        split, process_count, info=info, drop_remainder=drop_remainder, strict=strict
    )
    return _piece_spec(ranges, process_index, process_count, drop_remainder)


@dataclass(frozen=True)
class _EvenPiece:
    split: str
    index: int
    count: int
    drop_remainder: bool
    strict: bool

    def __str__(self) -> str:
        return (
            f"_EvenSplit(split={self.split!r}, index={self.index}, count={self.count}, "
            f"drop_remainder={self.drop_remainder})"
        )

    def resolve(self, info: DatasetInfo) -> str:
        ranges = _even_ranges(
            self.split,
            self.count,
            info=info,
            drop_remainder=self.drop_remainder,
            strict=self.strict,
        )
        return _piece_spec(ranges, self.index, self.count, self.drop_remainder)


class LazySplit(str):
    """A split that needs the dataset's sizes to resolve (an unresolved even split).

    Its text shows TFDS's representation; ``+`` with a split string or another lazy
    split concatenates, and :meth:`resolve` gives the ordinary split string for a dataset.
    """

    parts: tuple[str | _EvenPiece, ...]
    # Lets split types that cannot resolve it hand `+` over to __radd__.
    needs_dataset = True

    def __new__(cls, parts: tuple[str | _EvenPiece, ...]) -> LazySplit:
        # A split string added to an even split shows as TFDS shows the ReadInstructions
        # it parses it into: ReadInstruction('test[:2]').
        text = "+".join(
            str(part) if isinstance(part, _EvenPiece) else repr(parse_split(part)) for part in parts
        )
        self = super().__new__(cls, text)
        self.parts = parts
        return self

    def __add__(self, other: object) -> LazySplit:
        return LazySplit(self.parts + _lazy_parts(other))

    def __radd__(self, other: object) -> LazySplit:
        return LazySplit(_lazy_parts(other) + self.parts)

    def __reduce__(self) -> tuple[type[LazySplit], tuple[tuple[str | _EvenPiece, ...]]]:
        return LazySplit, (self.parts,)

    def resolve(self, info: DatasetInfo) -> str:
        """The ordinary split string this lazy split means for ``info``."""
        return "+".join(
            part.resolve(info) if isinstance(part, _EvenPiece) else part for part in self.parts
        )


def _lazy_parts(other: object) -> tuple[str | _EvenPiece, ...]:
    if isinstance(other, LazySplit):
        return other.parts
    if isinstance(other, str):
        # TFDS parses a string operand when `+` is called (ReadInstruction.from_spec), so a
        # bad one fails there, with the parse error, whatever the even split names.
        return (str(parse_split(other)),)
    if isinstance(other, (ReadInstruction, SplitSpec)):
        return (str(other),)
    raise ReadplanTypeError(
        f"Adding split {other!r} to an even split: not a split", field="other", value=other
    )


def _check_count(count: object, field: str) -> None:
    if not is_int(count) or not 1 <= count <= INT64_MAX:
        raise ConfigError(
            f"the number of sub-splits must be a positive int64 integer, got {count!r:.80}",
            field=field,
            value=count,
        )


def _even_ranges(
    split: SplitArg, count: int, *, info: DatasetInfo, drop_remainder: bool, strict: bool
) -> list[_Range]:
    ranges = _resolve(info, split)
    for entry in ranges:
        if entry.start > entry.stop:
            message = f"start={entry.start}, end={entry.stop}"
            raise SplitError(
                f"{message}\n{str(entry.part)!r} is an inverted range of split "
                f"{entry.split.name!r}, which cannot be divided (TFDS raises AssertionError).",
                spec=str(split),
                part=str(entry.part),
                tfds_message=message,
            )
    if strict:
        _check_strict(ranges, split)
        _check_even_sizes(ranges, split, count, drop_remainder)
    return ranges


def _check_even_sizes(
    ranges: Sequence[_Range], split: SplitArg, count: int, drop_remainder: bool
) -> None:
    for entry in ranges:
        size = entry.stop - entry.start
        if size < count:
            problem = f"only {size} records for {count} sub-splits, so some would be empty"
            raise _strict_error(split, entry.part, problem, cls=EmptySplitError)
        if drop_remainder and size % count:
            problem = f"{size % count} of its {size} records would be dropped"
            raise _strict_error(split, entry.part, problem)


def _piece_spec(ranges: Sequence[_Range], index: int, count: int, drop_remainder: bool) -> str:
    pieces = []
    for entry in ranges:
        size = entry.stop - entry.start
        per_piece, remainder = divmod(size, count)
        first = entry.start + per_piece * index
        last = entry.start + per_piece * (index + 1)
        if remainder and not drop_remainder:
            # The first ``remainder`` sub-splits take one extra record each.
            first += min(index, remainder)
            last += min(index + 1, remainder)
        pieces.append(f"{entry.split.name}[{first}:{last}]")
    return "+".join(pieces)
