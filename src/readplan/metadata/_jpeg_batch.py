"""A batch's JPEGs of one size decoded straight into one array (``specs/features.md`` §3.10).

Decoding each image to its own array and stacking them costs a fresh allocation per image
and a copy of every pixel, which for 224 x 224 images is a third of the decode's time and,
on decode workers, page faults that the threads take one at a time.  Each image here is
decoded exactly as :func:`~readplan.metadata._images.decode_image` decodes it (libjpeg's
fast integer IDCT with fancy upsampling, TensorFlow's choice), into its slot of the array.
"""

from __future__ import annotations

from collections.abc import Sequence

from readplan._internal.arrays import U8Array
from readplan._internal.buffer_pool import BufferPool
from readplan.metadata._feature_types import Shape
from readplan.metadata._images import image_format, import_simplejpeg

__all__ = ["decode_jpegs_into"]

# Colour spaces that decode to 1 or 3 channels without a conversion of readplan's own.
_OWN_CHANNELS = {"Gray": 1, "YCbCr": 3, "RGB": 3}


def decode_jpegs_into(
    datas: Sequence[bytes],
    channels: int | None,
    shape: Shape,
    max_bytes: int,
    pool: BufferPool,
) -> U8Array | None:
    """The JPEGs ``datas`` as one ``(n, height, width, channels)`` uint8 array (its memory
    from ``pool``), when every one is a JPEG of one size and colour space that
    fits ``shape`` and decodes, and the array fits ``max_bytes``; None otherwise (each image
    is then decoded alone, which says what is wrong)."""
    if not datas or not all(image_format(data) == "jpeg" for data in datas):
        return None
    simplejpeg = import_simplejpeg()
    try:
        headers = {tuple(simplejpeg.decode_jpeg_header(data)[:3]) for data in datas}
    except ValueError:
        return None
    if len(headers) != 1:
        return None
    ((height, width, colorspace),) = headers
    own = _OWN_CHANNELS.get(colorspace)
    wanted = channels or own
    if own is None or wanted not in (1, 3):
        return None
    if any(want not in (None, got) for want, got in zip(shape, (height, width, wanted))):
        return None
    if height * width * max(own, wanted) > max_bytes:
        return None
    if len(datas) * height * width * wanted > max_bytes:
        # Headers are the file's word only: the batch's array is held to what one decoded
        # value may take, the most the one-image path allocates before a decode fails.
        return None
    dims = (len(datas), height, width, wanted)
    out = pool.empty(dims)
    space = "GRAY" if wanted == 1 else "RGB"
    try:
        for data, slot in zip(datas, out):
            simplejpeg.decode_jpeg(
                data, colorspace=space, fastdct=True, fastupsample=False, buffer=slot
            )
    except ValueError:
        return None
    return out
