"""The metadata layer: what a dataset is (``specs/splits.md``, "Dataset metadata").

``DatasetInfo``/``SplitInfo``, shard file naming, ``dataset_info.json`` loading and the
embedded catalog; ``features.json`` as a model of TFDS's features and decoding records with it
(``specs/features.md``).  Imports only :mod:`readplan._internal`, :mod:`readplan.errors`,
:mod:`readplan.storage` and, for decoding records, :mod:`readplan.records`.
"""
