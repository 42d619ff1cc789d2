"""An independent writer of ``tf.train.Example`` wire bytes (``specs/example.md``).

Written straight from the protobuf wire rules (tag varint, length, payload), it shares no code
with readplan, so records written here check readplan's decoders from outside. Every writer
returns the bytes of one wire field; ``example`` wraps map entries into a whole record, and
``split_entries`` takes a canonical record apart again.
"""

from __future__ import annotations

import struct


def _varint(value: int) -> bytes:
    value &= 2**64 - 1
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def len_field(number: int, payload: bytes) -> bytes:
    """A length-delimited field: tag (wire type 2), length, payload."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def entry(key: str | bytes, feature: bytes) -> bytes:
    """A ``Features.feature`` map entry: the key (UTF-8 when a str) and a Feature's bytes."""
    name = key.encode("utf-8") if isinstance(key, str) else key
    return len_field(1, len_field(1, name) + len_field(2, feature))


def example(*entries: bytes) -> bytes:
    """An Example record holding these map entries, in this order."""
    return len_field(1, b"".join(entries))


def int64_feature(*values: int, packed: bool = True) -> bytes:
    if packed:
        return len_field(3, len_field(1, b"".join(_varint(v) for v in values)))
    return len_field(3, b"".join(b"\x08" + _varint(v) for v in values))


def float_feature(*bits: int, packed: bool = True) -> bytes:
    """A float list of these 32-bit patterns (so that NaN payloads survive)."""
    words = [struct.pack("<I", b) for b in bits]
    if packed:
        return len_field(2, len_field(1, b"".join(words)))
    return len_field(2, b"".join(b"\x0d" + w for w in words))


def bytes_feature(*values: bytes) -> bytes:
    return len_field(1, b"".join(len_field(1, v) for v in values))


def split_entries(raw: bytes) -> list[bytes]:
    """The serialized map entries of a canonical Example (one features field, short tags)."""
    if not raw:
        return []
    assert raw[0] == 0x0A
    body_start, body_length = _read_varint(raw, 1)
    body = raw[body_start : body_start + body_length]
    entries, position = [], 0
    while position < len(body):
        assert body[position] == 0x0A
        start, length = _read_varint(body, position + 1)
        entries.append(body[position : start + length])
        position = start + length
    return entries


def entry_key(serialized: bytes) -> bytes:
    """The key of a serialized map entry, as stored."""
    start, _ = _read_varint(serialized, 1)
    assert serialized[start] == 0x0A
    key_start, key_length = _read_varint(serialized, start + 1)
    return serialized[key_start : key_start + key_length]


def _read_varint(data: bytes, position: int) -> tuple[int, int]:
    """(position after the varint, its value)."""
    value, shift = 0, 0
    while True:
        byte = data[position]
        value |= (byte & 0x7F) << shift
        position += 1
        shift += 7
        if not byte & 0x80:
            return position, value
