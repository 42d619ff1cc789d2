"""Plumbing shared by every layer: argument validation, JSON field access, durable writes,
closing, progress bars, the numpy array types.  Imports nothing else from readplan but
:mod:`readplan.errors`."""
