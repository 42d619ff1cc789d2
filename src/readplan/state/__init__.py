"""The state layer: checkpoints (``specs/checkpoint.md``).

The checkpoint value and its invariants, the JSON codec, the plan fingerprint and its
differences, building/verifying/resuming from an epoch schedule, and the bridge back to
TFDS's FileInstructions.  Imports only the planning layer and below.
"""
