"""Plumbing shared by every layer: argument validation, JSON field access, durable writes,
closing, progress bars.  Imports nothing else from readplan but :mod:`readplan.errors`."""
