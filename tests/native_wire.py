"""Random ``tf.train.Example`` wire bytes in every spelling the protobuf runtime reads, and damaged.

Built field by field from the wire rules (tests/example_wire.py), independently of readplan:
unknown fields at every level, Example.features given more than once, map entries with their
fields in either order, missing or given twice, Features with several lists, packed and
unpacked numbers mixed, over-long varints, names twice in one record, names that are not UTF-8,
then (sometimes) truncated or with a bit flipped. The property tests compare the compiled
kernel and the pure path with the runtime read one record at a time.
"""

from __future__ import annotations

import struct

from hypothesis import strategies as st

from tests import example_wire as wire
from tests.example_values import FLOAT_BITS_PINS
from tests.strategies import int64s

_varint = wire._varint


def _tag(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


@st.composite
def unknown_fields(draw: st.DrawFn, odd: bool = True) -> bytes:
    """Zero to two fields of numbers no message here declares; with ``odd`` also of declared
    numbers with any wire type (a declared field then, or one the runtime refuses)."""
    out = b""
    for _ in range(draw(st.integers(0, 2))):
        numbers = [4, 15, 16, 2047, 2**29 - 1]
        number = draw(st.sampled_from([1, 2, 3, *numbers] if odd else numbers))
        wire_type = draw(st.sampled_from([0, 1, 2, 5]))
        payload = {
            0: _varint(draw(st.integers(0, 2**64 - 1))),
            1: bytes(8),
            2: _varint(3) + b"abc",
            5: bytes(4),
        }[wire_type]
        out += _tag(number, wire_type) + payload
    return out


def _maybe_unknown(draw: st.DrawFn, odd: bool) -> bytes:
    return draw(unknown_fields(odd)) if draw(st.integers(0, 4)) == 0 else b""


def _overlong(value: int, extra: int) -> bytes:
    """``value`` as a varint padded with ``extra`` continuation bytes (readers must accept)."""
    plain = bytearray(_varint(value))
    if not extra or len(plain) + extra > 10:
        return bytes(plain)
    plain[-1] |= 0x80
    return bytes(plain) + b"\x80" * (extra - 1) + b"\x00"


@st.composite
def int64_list(draw: st.DrawFn, values: list[int], odd: bool = True) -> bytes:
    """An Int64List of ``values``: packed chunks and unpacked values in any mix."""
    out, at = b"", 0
    while at < len(values) or (not out and draw(st.booleans())):
        take = draw(st.integers(0, len(values) - at))
        chunk = values[at : at + take]
        at += take
        extra = draw(st.sampled_from([0, 0, 0, 1]))
        if draw(st.booleans()) or not chunk:
            out += wire.len_field(1, b"".join(_overlong(v & (2**64 - 1), extra) for v in chunk))
        else:
            out += b"".join(b"\x08" + _overlong(v & (2**64 - 1), extra) for v in chunk)
        out += _maybe_unknown(draw, odd)
    return out


@st.composite
def float_list(draw: st.DrawFn, bits: list[int], odd: bool = True) -> bytes:
    """A FloatList of these binary32 patterns: packed chunks and fixed32 values mixed."""
    out, at = b"", 0
    while at < len(bits) or (not out and draw(st.booleans())):
        take = draw(st.integers(0, len(bits) - at))
        words = [struct.pack("<I", b) for b in bits[at : at + take]]
        at += take
        if draw(st.booleans()) or not words:
            out += wire.len_field(1, b"".join(words))
        else:
            out += b"".join(b"\x0d" + w for w in words)
        out += _maybe_unknown(draw, odd)
    return out


@st.composite
def bytes_list(draw: st.DrawFn, values: list[bytes], odd: bool = True) -> bytes:
    return b"".join(wire.len_field(1, v) + _maybe_unknown(draw, odd) for v in values)


_SIZES = st.sampled_from([0, 1, 127, 128, 2**14 - 1, 2**14])
_FLOATS = st.one_of(st.sampled_from([*FLOAT_BITS_PINS, 0x80000000]), st.integers(0, 2**32 - 1))


@st.composite
def a_list(draw: st.DrawFn, odd: bool = True) -> tuple[int, bytes]:
    """A Feature field number (1 bytes, 2 float, 3 int64) and a list message's bytes."""
    kind = draw(st.sampled_from([1, 2, 3]))
    if kind == 3:
        return kind, draw(int64_list(draw(st.lists(int64s, max_size=5)), odd))
    if kind == 2:
        return kind, draw(float_list(draw(st.lists(_FLOATS, max_size=5)), odd))
    values = draw(st.lists(st.binary(max_size=6), max_size=3))
    if draw(st.integers(0, 9)) == 0:
        values.append(bytes(draw(_SIZES)))  # a value whose length takes 2 or 3 bytes
    return kind, draw(bytes_list(values, odd))


@st.composite
def feature(draw: st.DrawFn, odd: bool = True) -> bytes:
    """A Feature: no list, one, or several (the same kind merged, another kind replacing)."""
    out = _maybe_unknown(draw, odd)
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2, 3]))):
        kind, payload = draw(a_list(odd))
        out += wire.len_field(kind, payload) + _maybe_unknown(draw, odd)
    return out


_UTF8_NAMES = st.one_of(
    st.text("abc", max_size=2).map(lambda s: s.encode("utf-8")),
    st.sampled_from([b"\xc3\xa9", "\u00e9t\u00e9".encode(), b"a" * 20]),
)
_NAMES = st.one_of(_UTF8_NAMES, st.just(b"\xff"))


@st.composite
def entry(draw: st.DrawFn, name: bytes, *, odd: bool = True) -> bytes:
    """A map entry: key and value in either order, or without a value; with ``odd`` also
    without a key (named ""), with the key or value twice, or with an unknown field (the
    runtime then keeps the entry out of the map)."""
    key, value = wire.len_field(1, name), wire.len_field(2, draw(feature(odd)))
    shapes = ["kv"] * 6 + ["vk", "k"] + (["v", "", "kkv", "kvv"] if odd else [])
    parts = {"k": key, "v": value}
    return wire.len_field(
        1,
        b"".join(
            parts[c] + (_maybe_unknown(draw, odd) if odd else b"")
            for c in draw(st.sampled_from(shapes))
        ),
    )


@st.composite
def record(draw: st.DrawFn, names: list[bytes], *, odd: bool = True) -> bytes:
    """An Example of entries for some of ``names``, in 0-2 features fields; with ``odd``
    sometimes a name twice, or entries of :func:`entry`'s odd kinds."""
    held = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    if odd and held and draw(st.integers(0, 9)) == 0:
        held.append(draw(st.sampled_from(held)))
    entries = [draw(entry(name, odd=odd)) for name in held]
    cut = draw(st.integers(0, len(entries)))
    pieces = [entries[:cut], entries[cut:]] if draw(st.integers(0, 4)) == 0 else [entries]
    out = b""
    for piece in pieces:
        if piece or draw(st.booleans()):
            out += wire.len_field(1, b"".join(piece) + _maybe_unknown(draw, odd))
        out += _maybe_unknown(draw, odd)
    return out


@st.composite
def damaged(draw: st.DrawFn, raw: bytes) -> bytes:
    """``raw`` cut short or with one bit flipped."""
    if not raw:
        return b"\x0a"
    at = draw(st.integers(0, len(raw) - 1))
    if draw(st.booleans()):
        return raw[:at]
    return raw[:at] + bytes([raw[at] ^ (1 << draw(st.integers(0, 7)))]) + raw[at + 1 :]


@st.composite
def wire_batches(draw: st.DrawFn, *, odd: bool = True) -> list[bytes]:
    """Batches of up to 6 such records; with ``odd`` also names that are not UTF-8 and
    records of odd entries or damaged."""
    names = draw(st.lists(_NAMES if odd else _UTF8_NAMES, unique=True, max_size=4))
    records = [draw(record(names, odd=odd)) for _ in range(draw(st.integers(0, 6)))]
    for _ in range(draw(st.sampled_from([0, 0, 0, 1])) if odd else 0):
        if records:
            k = draw(st.integers(0, len(records) - 1))
            records[k] = draw(damaged(records[k]))
    return records
