"""The viewer's JSON API (``specs/viewer.md`` §3): one method per endpoint under ``/api/``.

Every endpoint takes string parameters (the query string) and answers a JSON-able dict;
``root`` and ``path`` name what is read (a root given on the command line and a path under
it, :mod:`readplan.viewer.roots`).  Work per request is bounded (§3.6): at most
:data:`MAX_EXAMPLES` decoded examples, :data:`MAX_SCAN` records scanned for a class filter,
and file scans run as background jobs (at most :data:`MAX_JOBS` at once) whose progress the
page polls.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from http import HTTPStatus
from typing import Any

from readplan import storage
from readplan.cli.framing import inspect_file
from readplan.metadata.dataset_info import DatasetInfo
from readplan.metadata.features import ClassLabel, Feature, FeaturesDict
from readplan.metadata.features import Sequence as SequenceF
from readplan.plan import ReadPlan
from readplan.planning.config import ReadConfig
from readplan.planning.instructions import file_instructions
from readplan.state.limits import read_state_file
from readplan.viewer import orders
from readplan.viewer.examples import example_json, read_examples
from readplan.viewer.params import ApiError, Params
from readplan.viewer.records import BOX_FORMATS, records_json
from readplan.viewer.roots import ForbiddenPathError, Root

__all__ = [
    "MAX_EXAMPLES",
    "MAX_FILES",
    "MAX_JOBS",
    "MAX_RECORD_START",
    "MAX_SCAN",
    "Api",
    "ApiError",
]

MAX_EXAMPLES = 64
MAX_SCAN = 4096
MAX_JOBS = 2
MAX_RECORD_START = 10_000_000
MAX_FILES = 10_000
_FIRST_ROW = 8
_CACHED_PLANS = 32


class Api:
    """The endpoints over the roots given on the command line."""

    def __init__(self, roots: Sequence[Root]) -> None:
        self.roots = tuple(roots)
        self._lock = threading.Lock()
        self._infos: dict[str, DatasetInfo] = {}
        self._plans: OrderedDict[tuple[str, str, str], ReadPlan] = OrderedDict()
        self._jobs: dict[str, dict[str, Any]] = {}
        self._endpoints: dict[str, Callable[[Params, bytes | None], dict[str, Any]]] = {
            "roots": self.roots_json,
            "dataset": self.dataset,
            "examples": self.examples,
            "order": self.order,
            "state": self.state,
            "inspect": self.inspect,
            "records": self.records,
        }

    def call(self, name: str, values: Mapping[str, str], body: bytes | None) -> dict[str, Any]:
        endpoint = self._endpoints.get(name)
        if endpoint is None:
            raise ApiError(f"no endpoint /api/{name}", HTTPStatus.NOT_FOUND)
        if body is not None and name != "state":
            raise ApiError(f"/api/{name} takes GET only", HTTPStatus.METHOD_NOT_ALLOWED)
        try:
            return endpoint(Params(values), body)
        except ForbiddenPathError as err:
            raise ApiError(str(err), HTTPStatus.FORBIDDEN) from err

    # -- roots and datasets -----------------------------------------------------------
    def root(self, params: Params) -> Root:
        number = params.integer("root", 0, 0, max(0, len(self.roots) - 1))
        if not self.roots:
            raise ApiError("no paths are served", HTTPStatus.NOT_FOUND)
        return self.roots[number]

    def target(self, params: Params) -> tuple[Root, str]:
        root = self.root(params)
        return root, root.resolve(params.text("path", ""))

    def info(self, params: Params) -> DatasetInfo:
        root, path = self.target(params)
        if root.kind not in ("dataset", "directory"):
            raise ApiError(f"{root.path} is a {root.kind}, not a dataset directory")
        with self._lock:
            cached = self._infos.get(path)
        if cached is None:
            cached = DatasetInfo.load(path)
            with self._lock:
                self._infos[path] = cached
        return cached

    def plan(self, params: Params, info: DatasetInfo, config: ReadConfig) -> ReadPlan:
        split = params.text("split", next(iter(info.splits), ""))
        key = (str(info.data_dir), split, repr(config))
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
                return plan
        plan = ReadPlan(info, split, config)
        with self._lock:
            self._plans[key] = plan
            while len(self._plans) > _CACHED_PLANS:
                self._plans.popitem(last=False)
        return plan

    def roots_json(self, params: Params, body: bytes | None) -> dict[str, Any]:
        return {
            "roots": [
                {
                    "root": root.number,
                    "path": root.path,
                    "kind": root.kind,
                    "datasets": list(root.datasets),
                    "name": storage.basename(root.path.rstrip("/")),
                }
                for root in self.roots
            ]
        }

    def dataset(self, params: Params, body: bytes | None) -> dict[str, Any]:
        info = self.info(params)
        splits = []
        for name, split in info.splits.items():
            instructions = file_instructions(info, name)
            splits.append(
                {
                    "name": name,
                    "examples": split.num_examples,
                    "shards": len(split.shard_lengths),
                    "bytes": split.num_bytes,
                    "files": [
                        {"name": storage.basename(fi.filename), "examples": fi.examples_in_shard}
                        for fi in instructions[:MAX_FILES]
                    ],
                    "files_left_out": max(0, len(instructions) - MAX_FILES),
                }
            )
        features = _features(info)
        first: list[dict[str, Any]] = []
        if splits and splits[0]["examples"] and features is not None:
            plan = self.plan(Params({"split": str(splits[0]["name"])}), info, _natural())
            first = [example_json(plan, item) for item in read_examples(plan, 0, 0, _FIRST_ROW)]
        return {
            "name": info.name,
            "version": info.version,
            "config": info.config_name,
            "file_format": info.file_format,
            "data_dir": info.data_dir,
            "splits": splits,
            "features": None if features is None else _tree(features),
            "first_split": splits[0]["name"] if splits else None,
            "first": first,
        }

    # -- gallery ----------------------------------------------------------------------
    def examples(self, params: Params, body: bytes | None) -> dict[str, Any]:
        """A page of the split in its stored order (position = key), filtered if asked."""
        info = self.info(params)
        split = params.text("split", next(iter(info.splits), ""))
        shard = params.optional_int("shard", 0, 1 << 40)
        if shard is not None:
            split = f"{split}[{shard}shard:{shard + 1}shard]"
        plan = self.plan(Params({"split": split}), info, _natural())
        start = params.integer("start", 0, 0, plan.num_examples)
        count = params.integer("count", 24, 0, MAX_EXAMPLES)
        wanted = _label_filter(info, params.values.get("label", ""))
        shown: list[dict[str, Any]] = []
        scanned = 0
        limit = count if wanted is None else MAX_SCAN
        for item in read_examples(plan, 0, start, min(limit, plan.num_examples - start)):
            scanned = item.position - start + 1
            if wanted is None or _matches(item.record, wanted):
                shown.append(example_json(plan, item))
                if len(shown) == count:
                    break
        return {
            "split": split,
            "num_examples": plan.num_examples,
            "start": start,
            "next": start + scanned,
            "scanned": scanned,
            "examples": shown,
            "labels": _label_choices(info),
        }

    # -- read order and states --------------------------------------------------------
    def order(self, params: Params, body: bytes | None) -> dict[str, Any]:
        info = self.info(params)
        config = orders.config_from(params)
        plan = self.plan(params, info, config)
        return orders.order_json(plan, params)

    def state(self, params: Params, body: bytes | None) -> dict[str, Any]:
        if body is None:
            root, path = self.target(params)
            if root.kind != "state":
                raise ApiError(f"{root.path} is not a saved state; upload one with POST")
            body = read_state_file(path)
        document = orders.parse_state(body)
        info = self._dataset_for(params, document)
        return orders.state_json(info, document, self.plan, params)

    def _dataset_for(self, params: Params, document: Mapping[str, Any]) -> DatasetInfo:
        """The served dataset a state belongs to: the one named, else the first that matches."""
        if "dataset_root" in params.values:
            chosen = {"root": params.values["dataset_root"], **_path(params)}
            return self.info(Params(chosen))
        plan = document.get("plan", {})
        for root in self.roots:
            for relative in [""] if root.kind == "dataset" else list(root.datasets):
                info = self.info(Params({"root": str(root.number), "path": relative}))
                if (info.name, info.version, info.config_name) == (
                    plan.get("dataset"),
                    plan.get("version"),
                    plan.get("config"),
                ):
                    return info
        raise ApiError(
            f"the state is of dataset {plan.get('dataset')!r} version {plan.get('version')!r}, "
            "which is not among the served paths; pass its directory to readplan view",
            HTTPStatus.NOT_FOUND,
        )

    # -- file scans -------------------------------------------------------------------
    def inspect(self, params: Params, body: bytes | None) -> dict[str, Any]:
        """``readplan inspect``'s summary of one file, scanned in the background."""
        root, path = self.target(params)
        if root.kind == "state" or (root.kind != "file" and not storage.isfile(path)):
            raise ApiError(f"{path} is not a data file", HTTPStatus.NOT_FOUND)
        with self._lock:
            job = self._jobs.get(path)
            if job is None:
                if sum(j["status"] == "running" for j in self._jobs.values()) >= MAX_JOBS:
                    raise ApiError("other scans are running; retry", HTTPStatus.TOO_MANY_REQUESTS)
                job = self._jobs[path] = {"status": "running", "done": 0, "total": 1}
                threading.Thread(target=_scan, args=(job, path), daemon=True).start()
            return dict(job)

    def records(self, params: Params, body: bytes | None) -> dict[str, Any]:
        """A page of one file's records, decoded plainly or through a schema (boxes)."""
        root, path = self.target(params)
        if root.kind == "state" or (root.kind != "file" and not storage.isfile(path)):
            raise ApiError(f"{path} is not a data file", HTTPStatus.NOT_FOUND)
        box_format = params.text("box_format", "YOLO")
        if box_format not in BOX_FORMATS:
            raise ApiError(f"box_format {box_format!r} is not one of {list(BOX_FORMATS)}")
        return records_json(
            path,
            params.integer("start", 0, 0, MAX_RECORD_START),
            params.integer("count", 12, 0, MAX_EXAMPLES),
            image=params.values.get("image") or None,
            boxes=params.values.get("boxes") or None,
            box_format=box_format,
            labels=params.values.get("labels") or None,
        )


def _scan(job: dict[str, Any], path: str) -> None:
    job["total"] = max(1, storage.stat(path).size)

    def advance(amount: int) -> None:
        job["done"] += amount

    job["summary"] = inspect_file(path, examples=100, progress=advance)
    job["done"] = job["total"]
    job["status"] = "done"


def _natural() -> ReadConfig:
    """The split in its stored order: position ``p`` is TFDS's key ``p``."""
    return ReadConfig(interleave_cycle_length=1, shuffle_files=False)


def _path(params: Params) -> dict[str, str]:
    value = params.values.get("dataset_path")
    return {} if value is None else {"path": value}


def _features(info: DatasetInfo) -> FeaturesDict | None:
    """The dataset's features, or None when it has no readable ``features.json``."""
    try:
        return info.features
    except (OSError, ValueError):
        return None


def _tree(feature: Feature, name: str = "") -> dict[str, Any]:
    """The features tree: each node's TFDS class, its description, and its children."""
    node: dict[str, Any] = {"name": name, "type": feature.tfds_class or type(feature).__name__}
    if isinstance(feature, FeaturesDict):
        node["children"] = [_tree(sub, key) for key, sub in feature.items()]
    elif isinstance(feature, SequenceF):
        node["length"] = feature.length
        node["children"] = [_tree(feature.feature, "feature")]
    else:
        node["detail"] = repr(feature)
    if isinstance(feature, ClassLabel):
        node["names"] = list(feature.names[:100])
    return node


def _label_choices(info: DatasetInfo) -> list[dict[str, Any]]:
    features = _features(info)
    if features is None:
        return []
    # The first names only: a ClassLabel may declare 10**15 classes (names made on demand).
    return [
        {"key": key, "names": list(feature.names[:_LABEL_CHOICES])}
        for key, feature in features.items()
        if isinstance(feature, ClassLabel)
    ]


_LABEL_CHOICES = 1000


def _label_filter(info: DatasetInfo, text: str) -> tuple[str, int] | None:
    """``key:index`` of a top-level ClassLabel to keep, or None."""
    if not text:
        return None
    key, _, index = text.partition(":")
    features = _features(info)
    feature = None if features is None else features.get(key)
    if not isinstance(feature, ClassLabel) or not index.isdigit():
        keys = [entry["key"] for entry in _label_choices(info)]
        raise ApiError(f"label filter {text!r} must be KEY:INDEX with KEY one of {keys}")
    return key, int(index)


def _matches(record: Any, wanted: tuple[str, int]) -> bool:
    return int(record[wanted[0]]) == wanted[1]
