"""The records layer: bytes on disk.

TFRecord framing, compression, damage handling and index sidecars (``specs/tfrecord.md``),
and ``tf.train.Example`` decoding (``specs/example.md``).  Imports only
:mod:`readplan._internal` and :mod:`readplan.errors`.
"""
