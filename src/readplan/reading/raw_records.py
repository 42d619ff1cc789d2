"""The records of a TBL-RAW dataset, decoded (``specs/tbl.md`` §12).

A TBL-RAW sample's payload is its image's pixels and its metadata block the source record
less the image (``tbl.md`` §10).  A decoding reader or data source decodes the metadata as
it decodes any record (``decode="tfds"`` with the features less the image, ``True``, a
schema) and adds the image: an ``(S, S, 3)`` view of the shard's copy-on-write
``raw_view()`` map where the file is local and uniform, else a copy of the payload read.
The payloads are read, checked and skipped on damage as any TBL dataset's; the image views
map the same files.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, SupportsIndex

import numpy as np

from readplan._internal.arrays import IntArray, U8Array
from readplan.errors import ConfigError, DatasetInfoError, ReadplanError
from readplan.metadata.features import FeaturesDict
from readplan.metadata.loader import INFO_FILE
from readplan.metadata.raw_images import RAW_KEY, RawMarker, raw_marker
from readplan.plan import ReadPlan
from readplan.reading.batching import Locate, close_iterator
from readplan.reading.decoding import (
    RecordDecoder,
    check_no_decoders,
    dataset_features,
    example_decoder,
    record_decoder,
    tfds_decoder,
)
from readplan.reading.items import Batch
from readplan.records import tbl
from readplan.records._damage import CorruptionReport, LostRecord
from readplan.storage import StorageOptions

__all__ = [
    "RawReads",
    "RawRecord",
    "RawSamples",
    "RawShard",
    "dataset_marker",
    "over_raw",
    "reader_decoder",
]

# Shards kept open at once by a reader's decoding; one dropped is opened again.
_OPEN = 128


class RawRecord(NamedTuple):
    """One TBL-RAW sample as its decoder takes it: the image and the metadata block."""

    image: U8Array
    metadata: bytes


def dataset_marker(
    plan: ReadPlan, data_dir: str | None, storage_options: StorageOptions
) -> RawMarker | None:
    """The TBL-RAW marker of the plan's dataset, or None when it is not one: from
    ``data_dir``'s ``dataset_info.json``, else (a folder of shards only) the plan's."""
    if plan.info.file_format != tbl.FILE_FORMAT:
        return None
    for where in dict.fromkeys(d for d in (data_dir, plan.info.data_dir) if d is not None):
        try:
            return raw_marker(where, storage_options)
        except FileNotFoundError:  # ObjectNotFoundError is one
            continue
    return None


def required_marker(
    plan: ReadPlan, data_dir: str | None, storage_options: StorageOptions
) -> RawMarker:
    """The TBL-RAW marker of the plan's dataset; a dataset without one is a ConfigError."""
    marker = dataset_marker(plan, data_dir, storage_options)
    if marker is None:
        where = data_dir or plan.info.data_dir
        raise ConfigError(
            "image batches (Reader.batches with normalize/layout/dtype/hflip/seed, or "
            "Reader.image_batches) serve TBL-RAW datasets (made by readplan convert --raw, "
            f"{RAW_KEY} in their {INFO_FILE}); {where or 'the plan'} is not one",
            field="data_dir",
            value=where,
        )
    return marker


class RawShard:
    """One open TBL-RAW shard: each sample's image and metadata block.

    ``view_required`` refuses a shard without a ``raw_view()`` (in a store, or not a
    uniform RAW_U8 file) with its ConfigError; ``verify`` checks its CRC-16s on mapping.
    Otherwise (the records of a decoding reader or data source) the images are their
    own: views of a copy-on-write map, or copies, writable as ``tfds.as_numpy``'s arrays
    are and never writing the file.
    """

    def __init__(
        self, file: tbl.TblFile, marker: RawMarker, *, view_required: bool, verify: bool
    ) -> None:
        self.file = file
        self.path = file.path
        self._size = marker.image_size
        self._owned = not view_required
        try:
            # A plain array over the map (tfds gives ndarrays), which its base keeps open.
            mapped = file.raw_view(verify=verify, copy_on_write=self._owned)
            self.view: U8Array | None = np.asarray(mapped)
        except ConfigError:
            if view_required:
                raise
            self.view = None
        if self.view is not None and self.view.shape[1:] != (self._size,) * 2 + (3,):
            raise self._not_square(f"its samples are {self.view.shape[1:]} pixels")
        # The samples whose view was handed out: a user may have written to it, so the map
        # no longer holds what the file does for them.
        self._handed_out = bytearray(len(self.view) if self._owned and self.view is not None else 0)

    def image(self, i: int, payload: bytes) -> U8Array:
        """Sample ``i``'s image: a view of the map, or the array over its ``payload`` (the
        file's bytes, as read and checked), which an owned sample handed out before gets."""
        if self.view is not None and not (self._owned and self._handed_out[i]):
            image: U8Array = self.view[i]
            if self._owned:
                self._handed_out[i] = 1
            return image
        size = self._size
        if len(payload) != size * size * 3:
            raise self._not_square(f"sample {i} holds {len(payload)} bytes")
        image = np.frombuffer(payload, dtype=np.uint8).reshape(size, size, 3)
        return image.copy() if self._owned else image

    def metadata(self, i: int) -> bytes | None:
        """Sample ``i``'s metadata block (``b""`` when it has none); ``None`` when a damaged
        metadata section lost it (the file opened in ``"skip"`` mode; else that raises)."""
        block = self.file.metadata(i)
        if block is not None:
            return block.data
        return None if self.file.metadata_damage is not None else b""

    def _not_square(self, what: str) -> DatasetInfoError:
        size = self._size
        return DatasetInfoError(
            f"{self.path}: {what}, but the dataset's {INFO_FILE} ({RAW_KEY}.imageSize) "
            f"says every image is {size} x {size} x 3 = {size * size * 3} bytes",
            path=self.path,
            field=f"{RAW_KEY}.imageSize",
        )

    def close(self) -> None:
        self.file.close()


class RawSamples:
    """A TBL-RAW shard opened for keyed access, its samples read as :class:`RawRecord`\\ s
    (the data source's records; ``containers.RecordSource``'s methods)."""

    def __init__(self, file: tbl.TblFile, marker: RawMarker) -> None:
        self._shard = RawShard(file, marker, view_required=False, verify=False)
        self._file = file

    def __len__(self) -> int:
        return len(self._file)

    def __getitem__(self, i: SupportsIndex) -> RawRecord:
        return self._record(operator.index(i), self._file[i])

    def read(self, skip: int = 0, take: int | None = None) -> Iterator[RawRecord]:
        for i, payload in enumerate(self._file.read(skip, take), skip):
            yield self._record(i, payload)

    def gather(self, indices: Sequence[SupportsIndex]) -> list[RawRecord]:
        payloads = self._file.gather(indices)
        return [self._record(operator.index(i), p) for i, p in zip(indices, payloads)]

    def binding(self) -> tuple[int, int]:
        return self._file.binding()

    def close(self) -> None:
        self._file.close()

    def _record(self, i: int, payload: bytes) -> RawRecord:
        metadata = self._shard.metadata(i)
        assert metadata is not None  # opened in "raise" mode: a lost block raised
        return RawRecord(self._shard.image(i, payload), metadata)


@dataclass(frozen=True)
class RawReads:
    """How a decoding reader turns the payloads it read into :class:`RawRecord`\\ s."""

    marker: RawMarker
    path: Callable[[int], str]
    storage_options: StorageOptions
    skip: bool
    report: CorruptionReport | None

    def attached(self, produced: Iterator[Batch], locate: Locate) -> Iterator[Batch]:
        """Each batch of payloads as a batch of records; a sample whose metadata a damaged
        section lost is dropped and reported (``"skip"``) or stops the batches after the
        records before it, its error located (``"raise"``)."""
        shards: dict[int, RawShard] = {}
        try:
            for batch in produced:
                yield from self._records(batch, shards, locate)
        finally:
            for shard in shards.values():
                shard.close()
            close_iterator(produced)

    def _records(
        self, batch: Batch, shards: dict[int, RawShard], locate: Locate
    ) -> Iterator[Batch]:
        records: list[Any] = []
        kept: list[int] = []
        payloads: Sequence[bytes] = batch.records  # type: ignore[assignment]
        files, indices = batch.file_index.tolist(), batch.record_index.tolist()
        for k, (f, i, payload) in enumerate(zip(files, indices, payloads)):
            try:
                shard = self._shard(shards, f)
                metadata = shard.metadata(i)
                if metadata is None:
                    self._lost(batch, k, shard)
                    continue
                records.append(RawRecord(shard.image(i, payload), metadata))
            except (ReadplanError, OSError) as err:
                if records:
                    yield _taken(batch, records, np.array(kept, dtype=np.int64))
                raise locate(err, batch, k) from err
            kept.append(k)
        if records:
            yield _taken(batch, records, np.array(kept, dtype=np.int64))

    def _shard(self, shards: dict[int, RawShard], file_index: int) -> RawShard:
        shard = shards.get(file_index)
        if shard is None:
            if len(shards) >= _OPEN:
                shards.pop(next(iter(shards))).close()
            file = tbl.TblFile(
                self.path(file_index),
                on_corruption="skip" if self.skip else "raise",
                report=self.report,
                storage_options=self.storage_options,
                read_ahead=False,
            )
            # The reader checked each payload it read: the map needs no second pass.
            shard = shards[file_index] = RawShard(
                file, self.marker, view_required=False, verify=False
            )
        return shard

    def _lost(self, batch: Batch, k: int, shard: RawShard) -> None:
        damage = shard.file.metadata_damage
        assert damage is not None
        if self.report is not None:
            self.report.add_lost(
                LostRecord(
                    epoch=batch.epoch,
                    position=int(batch.positions[k]),
                    file_index=int(batch.file_index[k]),
                    record_index=int(batch.record_index[k]),
                    path=shard.path,
                    offset=int(damage.offset or 0),
                    kind=str(damage.kind),
                )
            )


def _taken(batch: Batch, records: list[Any], kept: IntArray) -> Batch:
    """``batch``'s deliveries ``kept``, holding ``records``."""
    rows = {
        name: getattr(batch, name)[kept] for name in ("positions", "file_index", "record_index")
    }
    return replace(batch, records=records, **rows)


def reader_decoder(
    decode: Any,
    decoders: Mapping[str, Any] | None,
    plan: ReadPlan,
    data_dir: str | None,
    storage_options: StorageOptions,
) -> tuple[RecordDecoder | None, RawMarker | None]:
    """A reader's decoder, and the marker of a TBL-RAW dataset it decodes (its records are
    then :class:`RawRecord`\\ s); a raw dataset read without decoding gives its bytes."""
    marker = None
    if decode is not None and decode is not False:
        marker = dataset_marker(plan, data_dir, storage_options)
    if marker is None:
        return record_decoder(decode, decoders, plan, data_dir, storage_options), None
    features = lambda: dataset_features(plan, data_dir, storage_options)  # noqa: E731
    return over_raw(decode, decoders, marker, features, tfds_decoder), marker


def over_raw(
    decode: Any,
    decoders: Mapping[str, Any] | None,
    marker: RawMarker,
    features: Callable[[], FeaturesDict],
    tfds: Callable[[FeaturesDict, Mapping[str, Any] | None], RecordDecoder],
) -> RecordDecoder:
    """The decoder of :class:`RawRecord`\\ s: the metadata decoded as ``decode`` says (with
    ``tfds(features less the image, decoders)`` for ``"tfds"``), and the image added."""
    name = marker.image_feature
    if decode == "tfds":
        if decoders is not None and name in decoders:
            raise ConfigError(
                f"decoders name {name!r}, but a TBL-RAW dataset stores that image decoded "
                f"({marker.image_size} x {marker.image_size} x 3 pixels, delivered as a "
                "uint8 array without decoding): there are no encoded bytes to skip or "
                "decode; decoders apply to its other features",
                field="decoders",
                value=decoders,
            )
        every = features()
        rest = FeaturesDict({key: value for key, value in every.items() if key != name})
        return _with_images(tfds(rest, decoders), name, list(every))
    check_no_decoders(decode, decoders)
    if isinstance(decode, Mapping) and name in decode:
        raise ConfigError(
            f"the schema names {name!r}, but a TBL-RAW dataset's records hold that image as "
            "pixels, not as a tf.train.Example feature: the image is added to every "
            "record as a uint8 array; the schema applies to the other features",
            field="decode",
            value=sorted(decode),
        )
    inner = example_decoder(decode)
    assert inner is not None  # decoding: reader_decoder and the data source checked
    return _with_images(inner, name, None)


def _with_images(inner: RecordDecoder, name: str, order: list[str] | None) -> RecordDecoder:
    """``inner`` over the metadata, the image added as feature ``name`` (in the features'
    ``order`` when given, else last)."""

    def place(decoded: dict[str, Any], image: U8Array) -> dict[str, Any]:
        if order is None:
            decoded[name] = image
            return decoded
        return {key: image if key == name else decoded[key] for key in order}

    def one(record: RawRecord) -> dict[str, Any]:
        return place(inner.one(record.metadata), record.image)

    def many(records: Sequence[RawRecord]) -> list[dict[str, Any]]:
        decoded = inner.many([record.metadata for record in records])
        return [place(d, record.image) for d, record in zip(decoded, records)]

    return RecordDecoder(one, many)
