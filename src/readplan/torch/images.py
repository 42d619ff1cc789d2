"""``ImageBatchDataset``: a TBL-RAW dataset's image batches for a PyTorch DataLoader.

``specs/reader.md`` §6 ("Image batches") is normative.  It is a
:class:`~readplan.torch.ReadplanIterableDataset` whose consumers serve
:meth:`readplan.Reader.image_batches` (``specs/tbl.md`` §11) instead of records: the same
passes, dealing, length and state protocol, with every batch handed over as torch tensors
that share the gathered arrays' memory (``torch.from_numpy``, no copy).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch.utils.data import default_convert

from readplan.plan import ReadPlan
from readplan.reading.batching import close_iterator
from readplan.reading.raw_batches import ImageBatch, ImageOptions, Layout, OutKind
from readplan.reading.reader import Reader
from readplan.torch.dataset import ReadplanIterableDataset

if TYPE_CHECKING:
    from readplan.torch.dataset import _Pass

__all__ = ["ImageBatchDataset", "TorchImageBatch"]


@dataclass(frozen=True)
class TorchImageBatch:
    """An :class:`~readplan.reading.raw_batches.ImageBatch` as torch tensors: ``images``
    (``(B, 3, S, S)`` or ``(B, S, S, 3)``), ``positions``, ``file_index``, ``record_index``
    (int64) and ``flips`` (uint8) tensors, ``features`` with its numeric arrays as tensors
    (``torch.utils.data.default_convert``: strings and ragged lists stay as they are)."""

    images: torch.Tensor
    features: dict[str, Any]
    epoch: int
    positions: torch.Tensor
    file_index: torch.Tensor
    record_index: torch.Tensor
    flips: torch.Tensor

    def __len__(self) -> int:
        return len(self.positions)

    @classmethod
    def of(cls, batch: ImageBatch) -> TorchImageBatch:
        """``batch``'s arrays as tensors over the same memory."""
        return cls(
            torch.from_numpy(batch.images),
            default_convert(batch.features),  # type: ignore[no-untyped-call]
            batch.epoch,
            torch.from_numpy(batch.positions),
            torch.from_numpy(batch.file_index),
            torch.from_numpy(batch.record_index),
            torch.from_numpy(batch.flips),
        )


class ImageBatchDataset(ReadplanIterableDataset):
    """The image batches of a TBL-RAW ``plan``, split across DataLoader workers and ranks.

    Use it with ``DataLoader(dataset, batch_size=None, num_workers=N)``: each consumer
    (worker of a rank) serves ``Reader.image_batches(batch_size, normalize=, layout=,
    dtype=, hflip=, seed=, drop_remainder=)`` over its share of each epoch and yields a
    :class:`TorchImageBatch` (or ``transform(batch)`` of it).  Flips are drawn from
    ``(seed, epoch, position)``, so every image is flipped as one process reading alone
    flips it, whatever the layout.  Passes, ``set_epoch``, ``len()``, ``state_dict`` /
    ``load_state_dict`` and :func:`~readplan.torch.merge_loader_states` are those of
    :class:`~readplan.torch.ReadplanIterableDataset` with ``batch_size``.
    """

    def __init__(
        self,
        plan: ReadPlan,
        batch_size: int,
        *,
        normalize: tuple[Any, Any] | None = None,
        layout: Layout = "NCHW",
        dtype: OutKind = "float32",
        hflip: float = 0.0,
        seed: int = 0,
        drop_remainder: bool = False,
        transform: Callable[[TorchImageBatch], Any] | None = None,
        **reader_options: Any,
    ) -> None:
        # Checked here, in the process that builds the loader, not first in a worker.
        options = ImageOptions(batch_size, normalize, layout, dtype, hflip, seed, drop_remainder)
        self._images: dict[str, Any] = options.keywords()
        super().__init__(
            plan,
            transform=transform,
            batch_size=batch_size,
            drop_remainder=drop_remainder,
            **reader_options,
        )
        checked = Reader(plan, **reader_options)
        close_iterator(checked.image_batches(batch_size, **self._images))

    def _batches(self, run: _Pass) -> Iterator[Any]:
        transform = self.transform
        size = self._batching["batch_size"]
        for reader in run.readers():
            for batch in reader.image_batches(size, **self._images):
                tensors = TorchImageBatch.of(batch)
                yield tensors if transform is None else transform(tensors)
