"""The TFDS-written toy dataset (tests/data/tfds) and the orders TFDS read it in.

``readplan_toy_orders.json`` holds, for each case (a split string, a ReadConfig and whether
files were shuffled), every epoch's ``[split, shard, record, id]`` as TFDS delivered them.
"""

from __future__ import annotations

import json
from typing import Any

from readplan import ReadConfig, ReadPlan
from readplan.metadata.dataset_info import DatasetInfo
from tests.conftest import DATA

TOY = json.loads((DATA / "tfds" / "readplan_toy_orders.json").read_text())
TOY_DIR = DATA / "tfds" / "readplan_toy" / "1.0.0"
TOY_INFO = DatasetInfo.load(TOY_DIR)
CASE_IDS = [
    f"{c['spec']}-{'shuffled' if c['shuffle_files'] else 'ordered'}-"
    + "-".join(f"{k}={v}" for k, v in sorted(c["read_config"].items()))
    for c in TOY["cases"]
]


def toy_plan(case: dict[str, Any]) -> ReadPlan:
    """The plan of one case of the orders file."""
    config = ReadConfig(**case["read_config"], shuffle_files=case["shuffle_files"])
    return ReadPlan(TOY_INFO, case["spec"], config)
