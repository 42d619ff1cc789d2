"""The numpy array types every layer annotates with, named once.

``IntArray`` holds positions, offsets, lengths and record ids (int64 throughout, so that
arithmetic on them never wraps); the unsigned arrays hold raw bytes (``U8Array``), CRC and
Philox words (``U32Array``) and the 8-byte words a key is compared by (``U64Array``).
``BytesLike`` is what the compiled kernels read bytes from: anything with a contiguous buffer.
"""

from __future__ import annotations

import mmap
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

__all__ = ["BytesLike", "IntArray", "U8Array", "U32Array", "U64Array"]

IntArray = npt.NDArray[np.int64]
U8Array = npt.NDArray[np.uint8]
U32Array = npt.NDArray[np.uint32]
U64Array = npt.NDArray[np.uint64]
BytesLike: TypeAlias = "bytes | bytearray | memoryview | mmap.mmap"
