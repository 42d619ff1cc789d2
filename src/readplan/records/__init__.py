"""The records layer: bytes on disk.

TFRecord framing, compression, damage handling and index sidecars (``specs/tfrecord.md``),
``tf.train.Example`` decoding (``specs/example.md``) and TBL v2 containers
(``specs/tbl.md``).  Imports only :mod:`readplan._internal` and :mod:`readplan.errors`.
"""
