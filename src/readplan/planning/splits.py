"""Split strings (``train[10%:]+test``): the grammar and the relative instructions it yields.

``specs/splits.md`` is normative.  Parsing needs no dataset: names, percentages and shard
indices are resolved against a :class:`~readplan.metadata.dataset_info.DatasetInfo`
later, by :mod:`readplan.planning.instructions`.  Every string TFDS 4.9.10 accepts is
accepted here with the same meaning, and every string it rejects is rejected with its
exact message (``err.tfds_message``) followed by an explanation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from decimal import Decimal
from typing import Literal, TypeAlias, cast, get_args

from readplan._internal.validate import is_int
from readplan.errors import ReadplanTypeError, SplitError, UnsupportedSplitError

__all__ = [
    "ROUNDINGS",
    "UNITS",
    "AllSplits",
    "ReadInstruction",
    "Rounding",
    "SplitArg",
    "SplitSpec",
    "Unit",
    "mixed_units",
    "parse_split",
]

Unit = Literal["%", "abs", "shard"]
"""Units of a split bound: percent of the split, record index, shard index."""
Rounding = Literal["closest", "pct1_dropremainder"]
"""TFDS's two rules for turning percent bounds into record indices."""
UNITS: tuple[Unit, ...] = get_args(Unit)
ROUNDINGS: tuple[Rounding, ...] = get_args(Rounding)

_DOCS_URL = "https://www.tensorflow.org/datasets/splits"
_ACCEPTED_FORMS = (
    "Accepted forms: NAME, NAME[FROM:TO], NAME[FROM:], NAME[:TO] and NAME[Kshard], joined "
    "with '+' (spaces allowed only around '+'). A bound is an integer record index "
    "(negative counts from the end), a number followed by '%' (between -100 and 100), or an "
    "integer followed by 'shard'. Examples: 'train', 'train[:10%]', 'test[-500:]', "
    "'train[2shard:4shard]', 'train[:50%]+test'."
)
_PLUS = re.compile(r"\s*\+\s*")
_PART = re.compile(r"(?P<name>[\w-]+)(?:\[(?P<selector>[\w%:.-]+)\])?")
_BOUND = re.compile(r"(?:(?P<number>-?[\d_.]+)(?P<unit>%|shard)?)?")
_NAME = re.compile(r"[\w-]+")


def _format_g(value: int | float) -> str:
    return format(value, "g")


def _format_exact(value: int | float) -> str:
    """``value`` as grammar text that converts back to the same number (no exponent)."""
    if isinstance(value, int):
        return str(value)
    if value.is_integer():
        return str(int(value))
    return format(Decimal(repr(value)), "f")


@dataclass(frozen=True)
class ReadInstruction:
    """One relative read instruction: ``split_name[from_:to]`` in ``unit``.

    ``from_``/``to`` ``None`` mean an open end.  ``unit`` is ``'abs'`` (record indices),
    ``'%'`` (percent of the split, rounded per ``rounding``) or ``'shard'`` (shard indices).
    Instructions combine with ``+`` (another instruction, a :class:`SplitSpec` or a split
    string) into a :class:`SplitSpec`.  ``repr`` is TFDS's; ``str`` is a split string
    (falling back to ``repr`` for ``pct1_dropremainder``, which no string can express).
    See ``specs/splits.md`` §3.
    """

    split_name: str
    _: KW_ONLY
    from_: int | float | None = None
    to: int | float | None = None
    unit: Unit = "abs"
    rounding: Rounding = "closest"

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise SplitError(
                f"Unit should be one of {list(UNITS)}. Got {self.unit!r}\n"
                "Use 'abs' for record indices, '%' for percent of the split or 'shard' for "
                "shard indices.",
                tfds_message=f"Unit should be one of {list(UNITS)}. Got {self.unit!r}",
            )
        if self.rounding not in ROUNDINGS:
            message = f"Rounding should be one of {list(ROUNDINGS)}. Got: {self.rounding!r}"
            raise SplitError(
                f"{message}\n'closest' rounds each percent bound to the nearest record; "
                "'pct1_dropremainder' uses multiples of 1% of the split (floor(n/100) records).",
                tfds_message=message,
            )
        if not isinstance(self.split_name, str):
            raise ReadplanTypeError(
                f"split_name must be a str, got {self.split_name!r}",
                field="split_name",
                value=self.split_name,
            )
        for label, bound in (("from_", self.from_), ("to", self.to)):
            self._check_bound_type(label, bound)
        if self.unit == "%" and (abs(self.from_ or 0) > 100 or abs(self.to or 0) > 100):
            message = (
                f"When unit=%, percent slice boundaries should be in [-100, 100]. Got: {self!r}"
            )
            raise SplitError(
                f"{message}\nA percent bound is a share of the split between -100% and 100% "
                "(negative counts from the end).",
                tfds_message=message,
            )
        for label, bound in (("from_", self.from_), ("to", self.to)):
            if isinstance(bound, float) and math.isnan(bound):
                raise SplitError(
                    f"{label} is NaN in {self!r}; a percent bound must be a number in [-100, 100]"
                )

    def _check_bound_type(self, label: str, bound: object) -> None:
        if bound is None or is_int(bound):
            return
        if self.unit == "%" and isinstance(bound, float):
            return
        allowed = "an int or a float" if self.unit == "%" else "an int"
        raise SplitError(
            f"{label}={bound!r} is not valid for unit={self.unit!r}: it must be {allowed} or "
            "None (record and shard indices are whole numbers)"
        )

    def __repr__(self) -> str:
        return f"ReadInstruction('{self._spec_text(_format_g)}'{self._rounding_suffix()})"

    def __str__(self) -> str:
        if self.rounding != "closest" or not _is_plain_name(self.split_name):
            return repr(self)
        return self._spec_text(_format_exact)

    def _rounding_suffix(self) -> str:
        return f", rounding={self.rounding!r}" if self.unit == "%" else ""

    def _spec_text(self, number: Callable[[int | float], str]) -> str:
        if self.from_ is None and self.to is None:
            return self.split_name
        suffix = "" if self.unit == "abs" else self.unit
        start = "" if self.from_ is None else number(self.from_) + suffix
        stop = "" if self.to is None else number(self.to) + suffix
        return f"{self.split_name}[{start}:{stop}]"

    def __add__(self, other: SplitArg) -> SplitSpec:
        return SplitSpec((self,)).__add__(other)

    @classmethod
    def from_spec(cls, spec: str) -> SplitSpec:
        """Parse a split string; same as :func:`parse_split`."""
        return parse_split(spec)


@dataclass(frozen=True)
class AllSplits:
    """The ``all`` part of a split string: every split, in ``dataset_info.json`` order."""

    def __str__(self) -> str:
        return "all"


@dataclass(frozen=True)
class SplitSpec:
    """A parsed split: its ``+`` parts in textual order (the order the files are read in).

    ``repr`` follows TFDS (``ReadInstruction('train')+ReadInstruction('test')``); ``str``
    is a split string with the same meaning.
    """

    parts: tuple[Part, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.parts, tuple) or not self.parts:
            raise ReadplanTypeError(
                f"parts must be a non-empty tuple of instructions, got {self.parts!r}",
                field="parts",
                value=self.parts,
            )
        for part in self.parts:
            if not isinstance(part, (ReadInstruction, AllSplits)):
                raise ReadplanTypeError(
                    f"a split part must be a ReadInstruction or AllSplits: {part!r}",
                    field="parts",
                    value=part,
                )

    def __add__(self, other: SplitArg) -> SplitSpec:
        if getattr(other, "needs_dataset", False):
            # An unresolved even split: it composes (LazySplit.__radd__) once it has sizes.
            return NotImplemented
        if isinstance(other, str):
            other = parse_split(other)
        elif isinstance(other, ReadInstruction):
            other = SplitSpec((other,))
        elif not isinstance(other, SplitSpec):
            raise ReadplanTypeError(
                f"Adding split {self!r} with non-split value: {other!r}", field="other", value=other
            )
        return SplitSpec(self.parts + other.parts)

    def __repr__(self) -> str:
        return "+".join(repr(part) for part in self.parts)

    def __str__(self) -> str:
        return "+".join(str(part) for part in self.parts)

    @classmethod
    def of(cls, spec: SplitArg) -> SplitSpec:
        """``spec`` as a SplitSpec: strings are parsed, instructions wrapped."""
        if isinstance(spec, SplitSpec):
            return spec
        if isinstance(spec, ReadInstruction):
            return cls((spec,))
        if isinstance(spec, str):
            return parse_split(spec)
        raise ReadplanTypeError(
            f"a split must be a split string, a ReadInstruction or a SplitSpec, got {spec!r}",
            field="split",
            value=spec,
        )


Part: TypeAlias = ReadInstruction | AllSplits
SplitArg: TypeAlias = str | ReadInstruction | SplitSpec


def _is_plain_name(name: str) -> bool:
    return bool(_NAME.fullmatch(name)) and name != "all"


# ---------------------------------------------------------------------------------------------
# Parsing


def parse_split(spec: str) -> SplitSpec:
    """Parse a TFDS split string into its ``+`` parts.

    ``all`` stays an :class:`AllSplits` part: its expansion needs the dataset's split order.
    Raises :class:`SplitError` (a ValueError) or, for ``all[...]``,
    :class:`UnsupportedSplitError` (a NotImplementedError), exactly where TFDS raises.
    """
    if not isinstance(spec, str):
        raise ReadplanTypeError(
            f"a split string must be a str, got {spec!r}", field="spec", value=spec
        )
    return SplitSpec(tuple(_parse_part(spec, part) for part in _PLUS.split(spec)))


def mixed_units(spec: str) -> list[tuple[str, str]]:
    """The parts of ``spec`` whose two bounds carry different units (``train[10%:60]``),
    each with the unit TFDS reads both bounds in (the first bound's, else the second's).

    TFDS applies one unit to a whole slice, so ``train[10%:60]`` reads records 10% to
    60%, not to record 60; strict mode refuses such parts.
    """
    mixed = []
    for part in _PLUS.split(spec):
        match = _PART.fullmatch(part.strip())
        bounds = (match["selector"] or "").split(":") if match else []
        if len(bounds) != 2:
            continue
        units = [_BOUND.fullmatch(bound) for bound in bounds]
        if not all(units):
            continue
        given = [(u["unit"] or "abs") for u in units if u is not None and u["number"]]
        if len(set(given)) > 1:
            mixed.append((part.strip(), given[0] if given[0] != "abs" else given[1]))
    return mixed


def _prefix(spec: str) -> str:
    return f"Error parsing split {spec!r}. See format at: {_DOCS_URL}\n"


def _fail(
    spec: str, part: str, message: str, why: str, *, cls: type[SplitError] = SplitError
) -> SplitError:
    tfds_message = _prefix(spec) + message
    return cls(f"{tfds_message}\n{why}", spec=spec, part=part, tfds_message=tfds_message)


def _unrecognized(spec: str, part: str) -> SplitError:
    message = f"Unrecognized split format: {part!r}. See format at {_DOCS_URL}"
    return _fail(spec, part, message, f"{_diagnose(spec, part)} {_ACCEPTED_FORMS}")


def _parse_part(spec: str, part: str) -> Part:
    # A single trailing newline is tolerated (TFDS matches with '$').
    body = part[:-1] if part.endswith("\n") else part
    match = _PART.fullmatch(body)
    if match is None:
        raise _unrecognized(spec, part)
    name, selector = match["name"], match["selector"]
    if name == "all":
        if selector is not None:
            raise _fail(
                spec,
                part,
                "'all' does not support slice. Please open a github issue if you need this "
                "feature.",
                f"{part!r} slices 'all', which TFDS does not implement. Slice each split and "
                "join them, e.g. 'train[:10%]+test[:10%]'.",
                cls=UnsupportedSplitError,
            )
        return AllSplits()
    if selector is None:
        return ReadInstruction(name)
    bounds = selector.split(":")
    matches = [_BOUND.fullmatch(bound) for bound in bounds]
    if len(bounds) > 2 or not all(bounds_match for bounds_match in matches) or not any(bounds):
        raise _unrecognized(spec, part)
    if len(bounds) == 1:
        return _single_index(spec, part, name, matches[0])
    return _slice(spec, part, name, matches[0], matches[1])


def _number(
    spec: str, part: str, text: str, convert: Callable[[str], int | float], why: str
) -> int | float:
    try:
        return convert(text)
    except ValueError as err:
        raise _fail(spec, part, str(err), f"Bound {text!r} in {part!r} {why}") from None


_INT_RULE = (
    "is not an integer as Python's int() reads it (digits, with '_' only between digits). "
    "Record and shard bounds are integers; only percent bounds may have a fraction."
)
_FLOAT_RULE = (
    "is not a number as Python's float() reads it (digits with at most one '.', '_' only "
    "between digits)."
)
_SINGLE_RULE = (
    "must be an integer: the single-index form NAME[K] selects one shard, and its index is "
    "read as an integer before the unit is checked."
)


def _single_index(spec: str, part: str, name: str, match: re.Match[str] | None) -> Part:
    assert match is not None
    assert match["number"] is not None
    index = _number(spec, part, match["number"], int, _SINGLE_RULE)
    if match["unit"] != "shard":
        raise _fail(
            spec,
            part,
            "Absolute or percent only support slice syntax.",
            f"{part!r} selects a single index, which only the shard unit supports (e.g. "
            f"'{name}[{index}shard]'). For records or percent write a slice, e.g. "
            f"'{_one_step(name, index, '')}' or '{_one_step(name, index, '%')}'.",
        )
    return ReadInstruction(name, from_=index, to=index + 1, unit="shard")


def _one_step(name: str, index: int | float, unit: str) -> str:
    stop = "" if index == -1 else f"{index + 1}{unit}"
    return f"{name}[{index}{unit}:{stop}]"


def _slice(
    spec: str, part: str, name: str, start: re.Match[str] | None, stop: re.Match[str] | None
) -> Part:
    assert start is not None
    assert stop is not None
    # The grammar's unit group matches only "%" or "shard"; no unit means record indices.
    unit = cast(Unit, start["unit"] or stop["unit"] or "abs")
    convert: Callable[[str], int | float] = float if unit == "%" else int
    rule = _FLOAT_RULE if unit == "%" else _INT_RULE
    from_ = None if start["number"] is None else _number(spec, part, start["number"], convert, rule)
    to = None if stop["number"] is None else _number(spec, part, stop["number"], convert, rule)
    try:
        return ReadInstruction(name, from_=from_, to=to, unit=unit)
    except SplitError as err:
        raise _fail(
            spec,
            part,
            err.tfds_message,
            f"{part!r} has a percent bound outside [-100, 100]; percentages are shares of "
            "the split, negative ones counted from the end.",
        ) from None


def _diagnose(spec: str, part: str) -> str:
    """Say what is wrong with an unrecognized part, in terms of the grammar."""
    body = part[:-1] if part.endswith("\n") else part
    if body == "":
        if spec.strip() == "":
            return "The split string is empty."
        return "A '+' has nothing on one side (at the start or end, or two in a row)."
    if re.search(r"\s", body):
        return (
            f"{part!r} contains whitespace; whitespace is allowed only around '+' (and one "
            "final newline)."
        )
    match = re.fullmatch(r"([^\[\]]*)(?:\[(.*)\])?(.*)", body, flags=re.S)
    assert match is not None  # the pattern matches every string
    name, selector, rest = match.groups()
    if not _NAME.fullmatch(name):
        return f"Split name {name!r} is not valid: it must be letters, digits, '_' or '-'."
    if selector is None and "[" in rest:
        plus = " A '+' always separates parts, even inside brackets." if "+" in spec else ""
        return f"{part!r} has an unclosed '['.{plus}"
    if rest or selector is None:
        return f"{part!r} has text after its ']' or an unmatched bracket."
    bounds = selector.split(":")
    if len(bounds) > 2:
        return f"{part!r} has {len(bounds) - 1} ':'; a slice has exactly one (no step)."
    if not any(bounds):
        return (
            f"{part!r} has no bounds; write {name!r} to read the whole split, or give at "
            "least one bound."
        )
    bad = next((bound for bound in bounds if not _BOUND.fullmatch(bound)), selector)
    return (
        f"Bound {bad!r} is not valid: a bound is an optional '-', digits (with '_' or '.'), "
        "and an optional unit '%' or 'shard'."
    )
