"""The metadata layer: what a dataset is (``specs/splits.md``, "Dataset metadata").

``DatasetInfo``/``SplitInfo``, shard file naming, ``dataset_info.json`` loading and the
embedded catalog.  Imports only :mod:`readplan._internal` and :mod:`readplan.errors`.
"""
