"""A Grain DataLoader with a worker process, in a program that has not parsed absl flags
("plain") or in an absl app that has ("app", with its own flag). Run by test_grain.py.

Usage: grain_absl_worker.py DATASET_DIR INDEX_DIR OUT_JSON (plain|app) [absl flags]

Writes the ids read (one epoch of the toy dataset's ``train`` split, shuffle seed 32) and,
for the app, its flag's value, to OUT_JSON.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import grain
from absl import app, flags

from readplan import ReadConfig, ReadPlan, data_source
from readplan.grain import OrderSampler
from readplan.metadata.dataset_info import DatasetInfo

flags.DEFINE_integer("shards", 1, "a flag of the app, to see it is kept")


def read(directory: str, index_dir: str) -> list[int]:
    info = DatasetInfo.load(directory)
    plan = ReadPlan(info, "train", ReadConfig(shuffle_files=True, shuffle_seed=32))
    loader = grain.DataLoader(
        data_source=data_source(info, "train", decode=True, index_dir=index_dir),
        sampler=OrderSampler(plan, epochs=1),
        worker_count=1,
        shard_options=grain.sharding.NoSharding(),
    )
    return [int(record["id"][0]) for record in loader]


def write(out: str, report: dict[str, Any]) -> None:
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(report, handle)


def main(argv: list[str]) -> None:
    directory, index_dir, out, mode = argv[1:5]
    if mode == "plain":
        write(out, {"ids": read(directory, index_dir)})
        return

    def run(_: list[str]) -> None:
        write(out, {"ids": read(directory, index_dir), "shards": flags.FLAGS.shards})

    app.run(run, argv=[argv[0], *argv[5:]])


if __name__ == "__main__":
    main(sys.argv)
