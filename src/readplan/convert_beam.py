"""A conversion's units of work run as an Apache Beam pipeline (``specs/tbl.md`` §9).

``convert(..., runner="beam", beam_options=...)`` (:mod:`readplan.convert`) hands its
units, one per shard, to :func:`run_units`: ``Create(units) | Reshuffle() | Map(work)``,
as TFDS converts a dataset's file format on Beam.  Any runner Beam's pipeline options
name runs it (the DirectRunner by default; Dataflow, Flink, Spark by their options).  A
runner may run a unit more than once (retried bundles, speculative copies): the units
publish their files without replacing any (:mod:`readplan.convert_publish`), so every run
of a unit leaves the same file.  The pipeline returns nothing to the caller: the caller
verifies every file before it writes the dataset's ``dataset_info.json``.

``apache_beam`` is imported only here and only when a pipeline is run (the optional
``readplan[beam]`` extra); its options are checked before anything runs, so that a
misspelt option is an error rather than a setting Beam silently drops.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import shlex
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from readplan.errors import ConfigError, ConfigTypeError, ConversionError, MissingExtraError

__all__ = ["EXTRA", "BeamOptions", "Unit", "pipeline_options", "run_units"]

EXTRA = "beam"
"""The ``readplan[...]`` extra that installs Apache Beam."""

BeamOptions = str | Sequence[str] | Any | None
"""Beam's pipeline options: flags in one string (split as a shell splits them), a sequence
of flags, a ``PipelineOptions`` object, or None for Beam's defaults."""

# The first line of a failed unit's message, wherever a runner puts it (an in-process
# runner re-raises the error; others pass on the worker's traceback as text).
_FAILED = re.compile(r"converting shard (\S+) \((.*?)\) failed: [^\n]*")
_RUNNING = re.compile(r" \[while running '[^']*'\]$")


class Unit(Protocol):
    """One unit of work: ``label`` names it in errors (``train[2]``), ``source`` the file it
    converts."""

    @property
    def label(self) -> str: ...

    @property
    def source(self) -> str: ...


U = TypeVar("U", bound=Unit)


def pipeline_options(options: BeamOptions) -> Any:
    """Beam's ``PipelineOptions`` for ``options``; a flag that no option of the installed
    Beam knows, or a value it refuses, is a :class:`ConfigError`."""
    pipeline_module = _beam("apache_beam.options.pipeline_options")
    if isinstance(options, pipeline_module.PipelineOptions):
        return options
    flags = _flags(options)
    parsed = pipeline_module.PipelineOptions(flags)
    parsers: list[Any] = []
    refused = io.StringIO()
    try:
        with contextlib.redirect_stderr(refused):
            parsed.get_all_options(add_extra_args_fn=parsers.append)
            _, unknown = parsers[0].parse_known_args(flags)
    except SystemExit:
        reason = refused.getvalue().strip().splitlines()[-1:] or ["refused"]
        raise ConfigError(
            f"beam_options {shlex.join(flags)!r}: {reason[0]}",
            field="beam_options",
            value=flags,
        ) from None
    if unknown:
        raise ConfigError(
            f"beam_options: {shlex.join(unknown)!r} is not an option of Beam's pipelines or of "
            "any runner the installed Beam knows (e.g. --runner=DirectRunner "
            "--direct_num_workers=2 --direct_running_mode=multi_processing)",
            field="beam_options",
            value=unknown,
        )
    _discard(_pipeline(parsed))  # the runner they name, found before anything is written
    return parsed


def run_units(units: Sequence[U], work: Callable[[U], object], options: Any, target: str) -> None:
    """Run ``work`` on every unit as one Beam pipeline with ``options`` (from
    :func:`pipeline_options`) and wait for it; a unit that fails stops it with a
    :class:`ConversionError` naming the unit."""
    beam = _beam("apache_beam")
    pipeline = _pipeline(options)
    _ = (
        pipeline
        | "Shards" >> beam.Create(list(units), reshuffle=False)
        # Each unit may then run on any worker, not only where Create put it.
        | "Distribute" >> beam.Reshuffle()
        | "Convert" >> beam.Map(_Named(work))
    )
    try:
        state = pipeline.run().wait_until_finish()
    except Exception as err:
        raise _failure(err, target) from err
    if state != "DONE":
        raise ConversionError(
            f"the Beam pipeline converting into {target} ended {state}, not DONE; no "
            "dataset_info.json was written"
        )


@dataclass(frozen=True)
class _Named:
    """``work`` with its failures reworded to name the unit (picklable: a runner ships it
    to its workers)."""

    work: Callable[[Any], object]

    def __call__(self, unit: Unit) -> None:
        try:
            self.work(unit)
        except Exception as err:
            raise ConversionError(
                f"converting shard {unit.label} ({unit.source}) failed: "
                f"{type(err).__name__}: {_first_line(err)}",
                shard=unit.label,
                path=unit.source,
                cause=type(err).__name__,
            ) from err


def _failure(err: Exception, target: str) -> ConversionError:
    """The error a failed pipeline is reported by: the failed unit's, when the runner's
    error carries it, else the runner's own."""
    stopped = f"; the Beam pipeline stopped and no dataset_info.json was written to {target}"
    found = _FAILED.search(str(err))
    if found is None:
        return ConversionError(
            f"the Beam pipeline failed: {type(err).__name__}: {_first_line(err)}{stopped}"
        )
    line = _RUNNING.sub("", found.group(0))
    cause = line.split(" failed: ", 1)[1].split(":", 1)[0]
    return ConversionError(
        f"{line}{stopped}", shard=found.group(1), path=found.group(2), cause=cause
    )


def _discard(pipeline: Any) -> None:
    """Remove the local folder every Beam pipeline makes when built, which only running it
    removes (one left in the temporary directory per conversion otherwise)."""
    folder = getattr(pipeline, "local_tempdir", None)
    if isinstance(folder, str):
        shutil.rmtree(folder, ignore_errors=True)


def _pipeline(options: Any) -> Any:
    """A pipeline with ``options``: an unknown runner, or one whose SDK extra is missing, is
    a :class:`ConfigError`."""
    beam = _beam("apache_beam")
    try:
        return beam.Pipeline(options=options)
    except (ValueError, TypeError, ImportError) as err:
        raise ConfigError(
            f"beam_options: {err}", field="beam_options", value=str(options)
        ) from None


def _first_line(err: BaseException) -> str:
    text = _RUNNING.sub("", str(err).strip())
    return text.splitlines()[0] if text else "(no message)"


def _flags(options: object) -> list[str]:
    if options is None:
        return []
    if isinstance(options, str):
        try:
            return shlex.split(options)
        except ValueError as err:
            raise ConfigError(
                f"beam_options {options!r:.80}: {err} (flags are split as a shell splits them)",
                field="beam_options",
                value=options,
            ) from None
    if isinstance(options, Sequence) and all(isinstance(flag, str) for flag in options):
        return list(options)
    raise ConfigTypeError(
        "beam_options must be a string of flags, a sequence of flag strings or Beam's "
        f"PipelineOptions, got {type(options).__name__}",
        field="beam_options",
        value=options,
    )


def _beam(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtraError(
            "runner='beam' runs the conversion as an Apache Beam pipeline, and apache_beam "
            f"is not installed ({err}); install it with: pip install 'readplan[{EXTRA}]'",
            extra=EXTRA,
            package="apache-beam",
        ) from None
