"""Image batches served from the memory maps of a TBL-RAW dataset (``specs/tbl.md`` §11).

:meth:`readplan.Reader.image_batches` follows the plan's order position by position, as the
reader does, and builds each batch by gathering its rows straight from the shards'
``raw_view()`` maps with :func:`~readplan.records.tbl._gather.gather_images` (one pass:
gather, flip, normalize, lay out), the other features decoded from the samples' metadata.
Flips are drawn from ``(seed, epoch, position)`` by :func:`flip_draws`, so a reader
restored from a state continues with the same flips.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from readplan._internal.arrays import IntArray, U8Array
from readplan.errors import ConfigError
from readplan.metadata.features import FeaturesDict
from readplan.metadata.raw_images import RawMarker
from readplan.plan import ReadPlan
from readplan.reading.collate import collate
from readplan.reading.raw_records import RawShard, required_marker
from readplan.records import tbl
from readplan.records.tbl._gather import KINDS, OutKind, gather_images, normalization

__all__ = [
    "ImageBatch",
    "ImageOptions",
    "Layout",
    "OutKind",
    "ReaderParts",
    "asked_options",
    "flip_draws",
    "image_batches",
    "rank_chunks",
    "serve",
]

Layout = Literal["NCHW", "NHWC"]
# Views kept mapped at once; one evicted is mapped again (without a second CRC pass).
_MAPPED = 128
_CHUNK = 1 << 16
_GOLDEN = 0x9E3779B97F4A7C15


@dataclass(frozen=True)
class ImageBatch:
    """One batch: ``images`` (``(B, 3, S, S)`` NCHW or ``(B, S, S, 3)`` NHWC), the other
    features collated from the samples' metadata, and where each row is in the plan."""

    images: npt.NDArray[Any]
    features: dict[str, Any]
    epoch: int
    positions: IntArray
    file_index: IntArray
    record_index: IntArray
    flips: U8Array


@dataclass(frozen=True)
class ImageOptions:
    """What :meth:`readplan.Reader.image_batches` was asked for, checked."""

    batch_size: int
    normalize: tuple[tuple[float, float, float], tuple[float, float, float]] | None
    layout: Layout
    dtype: OutKind
    hflip: float
    seed: int
    drop_remainder: bool

    def __post_init__(self) -> None:
        size = self.batch_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(
                f"batch_size must be a positive int, got {size!r:.40}",
                field="batch_size",
                value=size,
            )
        if self.layout not in ("NCHW", "NHWC"):
            raise ConfigError(
                f"layout must be 'NCHW' or 'NHWC', got {self.layout!r:.40}",
                field="layout",
                value=self.layout,
            )
        if self.dtype not in KINDS:
            raise ConfigError(
                f"dtype must be one of {list(KINDS)}, got {self.dtype!r:.40}",
                field="dtype",
                value=self.dtype,
            )
        if self.dtype == "uint8" and self.normalize is not None:
            raise ConfigError(
                "normalize applies to float32/float16 batches; uint8 batches are the pixels",
                field="normalize",
                value=self.normalize,
            )
        hflip = self.hflip
        if isinstance(hflip, bool) or not isinstance(hflip, (int, float)) or not 0 <= hflip <= 1:
            raise ConfigError(
                f"hflip must be a probability in 0.0..1.0, got {hflip!r:.40}",
                field="hflip",
                value=hflip,
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(
                f"seed must be an int >= 0, got {self.seed!r:.40}", field="seed", value=self.seed
            )

    def keywords(self) -> dict[str, Any]:
        """These options as :meth:`readplan.Reader.image_batches` keywords (all but
        ``batch_size``), ``normalize`` checked: what the loop integrations pass on."""
        self.coefficients()
        return {
            "normalize": self.normalize,
            "layout": self.layout,
            "dtype": self.dtype,
            "hflip": self.hflip,
            "seed": self.seed,
            "drop_remainder": self.drop_remainder,
        }

    def coefficients(self) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        """``(scale, shift)`` of the kernel: ``normalize``'s, or the pixel values."""
        if self.normalize is None:
            return (1.0, 1.0, 1.0), (0.0, 0.0, 0.0)
        refusal = ConfigError(
            "normalize must be (mean, std), three finite floats each, std > 0 (pixels "
            f"scaled to 0..1 first), got {self.normalize!r:.80}",
            field="normalize",
            value=self.normalize,
        )
        try:
            mean, std = (np.asarray(v, dtype=np.float64) for v in self.normalize)
        except (TypeError, ValueError) as err:
            raise refusal from err
        if mean.shape != (3,) or std.shape != (3,) or not np.isfinite([mean, std]).all():
            raise refusal
        if not (std > 0).all():
            raise refusal
        m0, m1, m2 = mean.tolist()
        s0, s1, s2 = std.tolist()
        return normalization((m0, m1, m2), (s0, s1, s2))


def asked_options(
    images: Mapping[str, Any],
    batch_size: int | None,
    drop_remainder: bool,
    *,
    packed: object,
    ragged: object,
    padding: object,
) -> ImageOptions | None:
    """The image batches ``Reader.batches`` is asked for by its image options ``images``
    (None: not given), or None when none is given; the options of :class:`Batch` objects
    (``packed``, ``ragged``, ``padding_values``) beside them are a ConfigError."""
    given = {name: value for name, value in images.items() if value is not None}
    if not given:
        return None
    named = ", ".join(f"{name}=" for name in given)
    for field, value, unset in (
        ("packed", packed, False),
        ("ragged", ragged, "list"),
        ("padding_values", padding, None),
    ):
        if value is not unset and not (isinstance(value, str) and value == unset):
            raise ConfigError(
                f"{field}={value!r:.40} applies to Batch objects, but {named} ask for image "
                "batches (ImageBatch: the images gathered by the kernel, the other features "
                "collated with ragged='list'); pass one or the other",
                field=field,
                value=value,
            )
    if batch_size is None:
        raise ConfigError(
            f"{named} ask for image batches, which need a batch_size (an int > 0)",
            field="batch_size",
            value=None,
        )
    return ImageOptions(
        batch_size,
        given.get("normalize"),
        given.get("layout", "NCHW"),
        given.get("dtype", "float32"),
        given.get("hflip", 0.0),
        given.get("seed", 0),
        drop_remainder,
    )


def flip_draws(seed: int, epoch: int, positions: IntArray, hflip: float) -> U8Array:
    """1 where the image at ``positions`` of ``epoch`` is mirrored: ``u < hflip`` for ``u``
    the top 53 bits of SplitMix64's finalizer of ``seed * G**2 + epoch * G + position``
    (``G = 0x9E3779B97F4A7C15``, uint64 arithmetic) over ``2**53``."""
    base = (seed * _GOLDEN * _GOLDEN + epoch * _GOLDEN) % (1 << 64)
    x = np.asarray(positions, dtype=np.uint64) + np.uint64(base)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x = x ^ (x >> np.uint64(31))
    u = (x >> np.uint64(11)).astype(np.float64) * 2.0**-53
    flips: U8Array = (u < hflip).astype(np.uint8)
    return flips


@dataclass
class _Shards:
    """The mapped shards met so far (their CRC-16s checked on the first mapping only)."""

    path: Callable[[int], str]
    marker: RawMarker
    views: dict[int, RawShard]
    verified: set[int]

    def get(self, file_index: int) -> RawShard:
        found = self.views.get(file_index)
        if found is None:
            if len(self.views) >= _MAPPED:
                self.views.pop(next(iter(self.views))).close()
            samples = tbl.TblFile(self.path(file_index))
            verify = file_index not in self.verified
            found = RawShard(samples, self.marker, view_required=True, verify=verify)
            self.verified.add(file_index)
            self.views[file_index] = found
        return found


Chunk = tuple[int, IntArray, IntArray, IntArray]


class ReaderParts(Protocol):
    """What :func:`serve` reads of a :class:`~readplan.Reader`."""

    plan: ReadPlan
    data_dir: str | None
    storage_options: Mapping[str, Any] | None
    epochs: int | None
    rank: int
    world_size: int


def serve(
    reader: ReaderParts,
    path: Callable[[int], str],
    frontier: tuple[int, int],
    options: ImageOptions,
) -> Iterator[ImageBatch]:
    """The image batches of ``reader`` from ``frontier`` (epoch, next position) on, its
    shards opened at ``path(file_index)``."""
    plan = reader.plan
    marker = required_marker(plan, reader.data_dir, reader.storage_options)
    features = plan.info.resolve_features(reader.storage_options)
    chunks = rank_chunks(plan, reader.epochs, reader.rank, reader.world_size, *frontier)
    return image_batches(marker, features, path, chunks, options)


def rank_chunks(
    plan: ReadPlan, epochs: int | None, rank: int, world_size: int, epoch: int, position: int
) -> Iterator[Chunk]:
    """``(epoch, positions, file_index, record_index)`` of the positions ``p`` with ``p %
    world_size == rank`` from ``position`` of ``epoch`` on, each epoch ending with an empty
    chunk."""
    empty = np.zeros(0, dtype=np.int64)
    while epochs is None or epoch < epochs:
        if position < plan.num_examples:
            for order in plan.iter_epoch(epoch, chunk_size=_CHUNK, start=position):
                positions = np.arange(order.start, order.start + len(order), dtype=np.int64)
                mine = positions % world_size == rank
                yield epoch, positions[mine], order.file_index[mine], order.record_index[mine]
        yield epoch, empty, empty, empty
        epoch, position = epoch + 1, min(rank, plan.num_examples)


def image_batches(
    marker: RawMarker,
    features: FeaturesDict | None,
    path: Callable[[int], str],
    chunks: Iterator[Chunk],
    options: ImageOptions,
) -> Iterator[ImageBatch]:
    """The batches of the positions in ``chunks`` (from :func:`rank_chunks`)."""
    decode = _metadata_decoder(features, marker)
    shards = _Shards(path, marker, {}, set())
    size = marker.image_size
    scale, shift = options.coefficients()
    kind = KINDS.index(options.dtype)
    empty = np.zeros(0, dtype=np.int64)
    # The positions not yet batched, and how far into them the batches are.
    pending, at = (empty, empty, empty), 0
    for epoch, positions, files, records in chunks:
        end_of_epoch = not len(positions)
        if not end_of_epoch:
            pending = tuple(  # type: ignore[assignment]
                np.concatenate((old[at:], new))
                for old, new in zip(pending, (positions, files, records))
            )
            at = 0
        while len(pending[0]) - at >= options.batch_size or (
            end_of_epoch and len(pending[0]) > at and not options.drop_remainder
        ):
            stop = at + options.batch_size
            rows = (pending[0][at:stop], pending[1][at:stop], pending[2][at:stop])
            at = min(stop, len(pending[0]))
            yield _batch(epoch, rows, shards, size, scale, shift, kind, options, decode)
        if end_of_epoch:
            pending, at = (empty, empty, empty), 0


def _batch(
    epoch: int,
    rows: tuple[IntArray, IntArray, IntArray],
    shards: _Shards,
    size: int,
    scale: tuple[float, float, float],
    shift: tuple[float, float, float],
    kind: int,
    options: ImageOptions,
    decode: Callable[[list[bytes]], dict[str, Any]],
) -> ImageBatch:
    positions, files, records = rows
    n = len(positions)
    shape = (n, size, size, 3) if options.layout == "NHWC" else (n, 3, size, size)
    out = np.empty(shape, dtype=options.dtype)
    flips = flip_draws(options.seed, epoch, positions, options.hflip)
    metadata: list[bytes] = []
    # Runs of rows from one file are gathered in one call, into their slice of the batch.
    breaks = np.flatnonzero(np.diff(files)) + 1
    for begin, end in zip([0, *breaks.tolist()], [*breaks.tolist(), n]):
        shard = shards.get(int(files[begin]))
        picked = records[begin:end]
        assert shard.view is not None  # view_required
        gather_images(
            shard.view,
            picked,
            flips[begin:end],
            scale,
            shift,
            out[begin:end],
            kind,
            options.layout == "NHWC",
        )
        metadata.extend(shard.metadata(i) or b"" for i in picked.tolist())
    return ImageBatch(out, decode(metadata), epoch, positions, files, records, flips)


def _metadata_decoder(
    features: FeaturesDict | None, marker: RawMarker
) -> Callable[[list[bytes]], dict[str, Any]]:
    """The samples' metadata (records less the image) decoded and collated, with the
    dataset's features less the image; without features.json, no features."""
    if features is None:
        return lambda blocks: {}
    rest = FeaturesDict({k: v for k, v in features.items() if k != marker.image_feature})
    decode_many = rest.batch_decoder()

    def decode(blocks: list[bytes]) -> dict[str, Any]:
        return collate(decode_many(blocks), ragged="list", padding_values=None)

    return decode
