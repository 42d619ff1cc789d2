"""The reading layer: records of real files in plan order (``specs/reader.md``).

The Reader, its items and batches, runs of records, and rank states.  Imports the plan,
state, planning, metadata and records layers.
"""
