"""What a reader delivers per record: bytes, ``tf.train.Example`` features, or TFDS examples.

``specs/reader.md`` (the ``record`` field) and ``specs/features.md`` are normative.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from readplan.errors import ConfigError
from readplan.metadata.features import load_features
from readplan.plan import ReadPlan
from readplan.records import example

__all__ = ["example_decoder", "record_decoder"]


def record_decoder(
    decode: bool | Literal["tfds"] | Mapping[str, Any] | None,
    decoders: Mapping[str, Any] | None,
    plan: ReadPlan,
    data_dir: str | None,
) -> Callable[[bytes], Any] | None:
    """The function a reader applies to each record, or None to deliver bytes."""
    if decode == "tfds":
        return _tfds_decoder(plan, data_dir, decoders)
    if decoders is not None:
        raise ConfigError(
            "decoders apply to decode='tfds' (decoding with the dataset's features.json); "
            f"got decode={decode!r:.40}",
            field="decoders",
            value=decoders,
        )
    return example_decoder(decode)


def example_decoder(
    decode: bool | Literal["tfds"] | Mapping[str, Any] | None,
) -> Callable[[bytes], Any] | None:
    """Bytes (None), ``tf.train.Example`` features (True) or a schema's parse (a mapping)."""
    if decode is None or decode is False:
        return None
    if decode is True:
        return example.decode
    if isinstance(decode, Mapping):
        schema = dict(decode)
        return lambda raw: example.parse(raw, schema)
    raise ConfigError(
        f"decode must be 'tfds' (as tfds.as_numpy yields), None/False (bytes), True (decoded "
        "tf.train.Example features) or a schema mapping of readplan.example.FixedLen/VarLen, "
        f"got {decode!r:.80}",
        field="decode",
        value=decode,
    )


def _tfds_decoder(
    plan: ReadPlan, data_dir: str | None, decoders: Mapping[str, Any] | None
) -> Callable[[bytes], Any]:
    features = plan.info.features
    if features is None and data_dir is not None:
        features = load_features(data_dir)
    if features is None:
        where = data_dir or plan.info.data_dir
        raise ConfigError(
            f"decode='tfds' needs the dataset's features.json, and {where or 'the plan'} has "
            "none (a DatasetInfo from the catalog or built by hand has no features unless "
            "given features=...); use decode=True for the raw tf.train.Example features",
            field="decode",
            value="tfds",
        )
    return features.decoder(decoders=decoders)
