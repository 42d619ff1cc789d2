"""PyTorch integration: a plan's records as an ``IterableDataset``, exactly resumable.

``specs/reader.md`` ("PyTorch") is normative.  PyTorch is an optional dependency
(``pip install 'readplan[torch]'``); importing this package without it raises an
``ImportError`` that says so.

Each ``for batch in loader`` is a pass that reads the next epochs, as each iteration over
a TFDS dataset does.  The positions of a pass are dealt out one by one: with ``R`` ranks
(from ``torch.distributed`` when it is initialised) of ``W`` DataLoader workers each,
consumer ``c = worker * R + rank`` delivers the indices ``g`` of the pass with
``g mod (R * W) == c``, counted across epoch ends, so each rank's loader yields its
positions in plan order.  The dataset's ``state_dict``/``load_state_dict`` follow torchdata's
``StatefulDataLoader`` protocol (each worker saves and restores its own reader);
:func:`merge_loader_states` turns the loader states of all ranks into one state from which
any number of ranks and workers continues exactly.  :class:`ImageBatchDataset` serves a
TBL-RAW dataset's image batches (``Reader.image_batches``) the same way, as torch tensors.
"""

from __future__ import annotations

try:
    import torch.distributed
    import torch.utils.data  # noqa: F401
except ImportError as err:  # pragma: no cover - exercised without torch only
    raise ImportError(
        "readplan.torch needs PyTorch, an optional dependency of readplan: "
        "pip install 'readplan[torch]'"
    ) from err

from readplan.torch.dataset import ReadplanIterableDataset
from readplan.torch.images import ImageBatchDataset, TorchImageBatch
from readplan.torch.layout import consumer
from readplan.torch.merge import merge_loader_states
from readplan.torch.sampler import OrderSampler

__all__ = [
    "ImageBatchDataset",
    "OrderSampler",
    "ReadplanIterableDataset",
    "TorchImageBatch",
    "consumer",
    "merge_loader_states",
]
