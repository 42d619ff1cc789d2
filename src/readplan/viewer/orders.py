"""The read-order and saved-state endpoints (``specs/viewer.md`` §3.4-§3.5).

An epoch's picture is the shard each position reads (the notebook's scatter of shard
against position), sampled to at most :data:`MAX_POINTS` positions; the examples of step
``S`` at batch size ``B`` are positions ``S*B .. S*B+B-1`` of the epoch.  A saved state
(a checkpoint or a reader's state, uploaded by the page) is checked against the plan its
own ``plan`` section describes (read configuration with TFDS's names), then shown: epoch,
position, the interleave's slots and per-file progress, and what comes next.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from readplan.errors import CheckpointError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.plan import ReadPlan
from readplan.planning.config import ExampleShuffle, InputContext, ReadConfig
from readplan.reading.ranks import STATE_KEY
from readplan.state.checkpoint import Checkpoint
from readplan.state.codec import parse_json
from readplan.state.limits import check_bounds
from readplan.storage import basename
from readplan.viewer.examples import example_json, read_examples
from readplan.viewer.params import ApiError, Params

__all__ = ["MAX_BATCH", "MAX_POINTS", "config_from", "order_json", "parse_state", "state_json"]

MAX_POINTS = 6000
MAX_BATCH = 1024
_SHOWN = 32
_MAX_FILES = 10_000
_INT64 = 2**63 - 1
_EXACT_WALK = 2_000_000  # positions walked with numpy; beyond, positions are located one by one
PlanFor = Callable[[Params, DatasetInfo, ReadConfig], ReadPlan]


def config_from(params: Params) -> ReadConfig:
    """A ReadConfig from TFDS's names given as parameters; absent ones take TFDS's defaults."""
    cycle = params.optional_int("interleave_cycle_length", 1, 1 << 20)
    block = params.optional_int("interleave_block_length", 1, 1 << 30)
    shuffle = params.flag("shuffle_files")
    seed = params.optional_int("shuffle_seed", -_INT64, _INT64)
    reshuffle = params.values.get("shuffle_reshuffle_each_iteration")
    context = params.values.get("input_context", "")
    kwargs: dict[str, Any] = {} if cycle is None else {"interleave_cycle_length": cycle}
    if block is not None:
        kwargs["interleave_block_length"] = block
    if reshuffle not in (None, ""):
        kwargs["shuffle_reshuffle_each_iteration"] = params.flag("shuffle_reshuffle_each_iteration")
    if context:
        pipeline, _, count = context.partition("/")
        if not (pipeline.isdigit() and count.isdigit() and len(context) <= 21):
            raise ApiError(f"input_context must look like ID/N (e.g. 0/4), got {context!r}")
        kwargs["input_context"] = InputContext(int(pipeline), int(count))
    buffer = params.optional_int("example_shuffle_buffer", 1, 1 << 30)
    if buffer is not None:
        example_seed = params.integer("example_shuffle_seed", 0, -_INT64, _INT64)
        kwargs["example_shuffle"] = ExampleShuffle(buffer, example_seed)
    global_seed = params.optional_int("global_seed", -_INT64, _INT64)
    return ReadConfig(shuffle_files=shuffle, shuffle_seed=seed, global_seed=global_seed, **kwargs)


def _picture(plan: ReadPlan, epoch: int) -> dict[str, Any]:
    """Positions (sampled to MAX_POINTS) and the shard each reads."""
    n = plan.num_examples
    stride = max(1, -(-n // MAX_POINTS))
    positions = np.arange(0, n, stride, dtype=np.int64)
    if n <= _EXACT_WALK:
        order = plan.epoch(epoch)
        files = order.file_index[positions]
    else:
        files = np.array([plan.locate(epoch, int(p))[0] for p in positions], dtype=np.int64)
    return {"stride": stride, "positions": positions.tolist(), "files": files.tolist()}


def order_json(plan: ReadPlan, params: Params) -> dict[str, Any]:
    epoch = params.integer("epoch", 0, 0, _INT64)
    batch = params.integer("batch_size", 8, 1, MAX_BATCH)
    last_step = max(0, -(-plan.num_examples // batch) - 1)
    step = params.integer("step", 0, 0, last_step)
    start = step * batch
    take = min(batch, plan.num_examples - start)
    chunk = next(plan.iter_epoch(epoch, chunk_size=max(1, take), start=start), None)
    ids = chunk.tfds_ids()[:take] if chunk is not None and take else []
    global_ids = chunk.global_ids()[:take].tolist() if chunk is not None and take else []
    shown = []
    if params.flag("examples", True) and take:
        items = read_examples(plan, epoch, start, min(take, _SHOWN))
        shown = [example_json(plan, item) for item in items]
    return {
        "split": plan.spec,
        "num_examples": plan.num_examples,
        "num_files": len(plan.instructions),
        "files": _file_names(plan)[:_MAX_FILES],
        "epoch": epoch,
        "file_order": plan.file_order(epoch).tolist()[:_MAX_FILES],
        "picture": _picture(plan, epoch),
        "batch_size": batch,
        "step": step,
        "steps": last_step + 1,
        "step_positions": [start, start + take],
        "step_ids": ids,
        "step_global_ids": global_ids,
        "examples": shown,
    }


def parse_state(body: bytes) -> dict[str, Any]:
    try:
        document = parse_json(body)
        check_bounds(document, "the saved state")
    except CheckpointError as err:
        raise CheckpointError(f"not a saved state (JSON expected): {err}", field="$") from err
    if not isinstance(document, dict):
        raise CheckpointError("not a saved state: the JSON is not an object", field="$")
    return document


def _config_of(fingerprint: Mapping[str, Any]) -> ReadConfig:
    """The read configuration a checkpoint's ``plan`` section records."""
    context = fingerprint.get("input_context")
    example = fingerprint.get("example_shuffle")
    return ReadConfig(
        interleave_cycle_length=fingerprint["cycle_length"],
        interleave_block_length=fingerprint["block_length"],
        shuffle_files=fingerprint["shuffle_files"],
        shuffle_seed=fingerprint["shuffle_seed"],
        shuffle_reshuffle_each_iteration=fingerprint["reshuffle_each_iteration"],
        global_seed=fingerprint["global_seed"],
        input_context=None if context is None else InputContext(*context),
        example_shuffle=None if example is None else ExampleShuffle(**example),
    )


def state_json(
    info: DatasetInfo, document: dict[str, Any], plan_for: PlanFor, params: Params
) -> dict[str, Any]:
    """Where a saved state stands, checked against its own plan, and what comes next."""
    checkpoint = Checkpoint.from_dict(document)
    fingerprint = checkpoint.plan
    try:
        config = _config_of(fingerprint)
    except (KeyError, TypeError) as err:
        raise CheckpointError(f"the state's plan section lacks {err}", field="plan") from err
    plan = plan_for(Params({"split": str(fingerprint.get("split"))}), info, config)
    checkpoint = plan.verify(checkpoint)
    expanded = plan.expand(checkpoint)
    owner = document.get(STATE_KEY) or {"rank": 0, "world_size": 1}
    names = _file_names(plan)
    following = []
    if checkpoint.position < checkpoint.num_examples:
        take = min(_SHOWN, checkpoint.num_examples - checkpoint.position)
        chunk = next(plan.iter_epoch(checkpoint.epoch, chunk_size=take, start=checkpoint.position))
        following = chunk.tfds_ids()[:take]
    shown = []
    if params.flag("examples", True) and following:
        items = read_examples(plan, checkpoint.epoch, checkpoint.position, min(8, len(following)))
        shown = [example_json(plan, item) for item in items]
    return {
        "dataset": info.name,
        "split": fingerprint.get("split"),
        "config": {k: fingerprint.get(k) for k in _CONFIG_KEYS},
        "epoch": checkpoint.epoch,
        "position": checkpoint.position,
        "num_examples": checkpoint.num_examples,
        "rank": owner.get("rank"),
        "world_size": owner.get("world_size"),
        "interleave_position": expanded.interleave_position,
        "slots": [None if s is None else {"file": s[0], "next": s[1]} for s in expanded.slots],
        "files": [
            {"file": f, "name": names[f], "consumed": c, "remaining": r}
            for f, c, r in expanded.files
        ],
        "next_ids": following,
        "examples": shown,
    }


_CONFIG_KEYS = (
    "cycle_length",
    "block_length",
    "shuffle_files",
    "shuffle_seed",
    "reshuffle_each_iteration",
    "global_seed",
    "input_context",
    "example_shuffle",
)


def _file_names(plan: ReadPlan) -> list[str]:
    table = plan.instructions
    return [basename(table.filename(k)) for k in range(min(len(table), _MAX_FILES))]
