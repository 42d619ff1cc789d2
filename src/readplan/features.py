"""TFDS's feature connectors, for reading ``features.json`` and writing datasets
(``specs/features.md``).

The documented import path ``readplan.features``, spelled like ``tfds.features``:
``features.FeaturesDict({"image": features.Image(shape=(None, None, 3),
encoding_format="png"), "label": features.ClassLabel(names=["cat", "dog"])})``. The code
lives in :mod:`readplan.metadata.features`.
"""

from readplan.metadata.features import *  # noqa: F403
from readplan.metadata.features import __all__ as __all__
