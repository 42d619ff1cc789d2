"""The planning layer: pure order math, no I/O.

Split strings and FileInstructions (``specs/splits.md``), read configuration, TF's seed
rules and Philox generator, the shuffle buffer (``specs/shuffle.md``), the interleave and
one epoch's schedule (``specs/order.md``).  Imports only the metadata layer and below.
"""
