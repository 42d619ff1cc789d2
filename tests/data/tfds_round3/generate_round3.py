"""Write ``round3_orders.json``: TF 2.21 / TFDS 4.9.10 read orders and split errors for
seeds outside int64, TFDS's autocache, and ``+`` on lazy even splits.

Run with a throwaway environment holding tensorflow-cpu 2.21.0 and tensorflow-datasets
4.9.10 (never a readplan dependency), from the repository root:

    python tests/data/tfds_round3/generate_round3.py

Every order is recorded from real TF/TFDS objects: ``seeds`` from
``tf.data.Dataset.range(n).shuffle(...)`` (each epoch a new iterator over one dataset
object, after ``tf.random.set_seed`` when a global seed is given); ``file_shuffles`` and
``autocache`` from ``tfds.builder_from_directory`` over the toy dataset of
``tests/data/tfds`` (``autocache`` with ``numBytes`` of ``dataset_info.json`` rewritten in a
temporary copy, and a sort function given as ``[shard, skip, take]`` pieces), each epoch a
new iterator over one ``as_dataset`` object, as ``tfds_id`` strings; ``refused`` the
exception TF raises for a seed; ``even_split_add`` what ``even_splits(...)[0] + other``
(or ``other + even_splits(...)[0]``) gives or raises.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

HERE = Path(__file__).resolve().parent
TOY = HERE.parent / "tfds" / "readplan_toy" / "1.0.0"
EPOCHS = 3

BIG_SEEDS = [2**64 + 17, 2**63, -(2**63) - 1, 2**100 + 5, -(2**70), 2**31 - 1, 2**32 + 7]


def _orders(dataset: tf.data.Dataset, epochs: int = EPOCHS) -> list[list[Any]]:
    out = []
    for _ in range(epochs):
        out.append([_plain(x) for x in dataset.as_numpy_iterator()])
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return value["tfds_id"].decode()
    return int(value)


def seed_cases() -> list[dict[str, Any]]:
    cases = []
    for global_seed in (None, 2**64 + 3, -(2**65), 12):
        for seed in (*BIG_SEEDS, None):
            if global_seed is None and seed is None:
                continue
            for reshuffle in (True, False):
                if global_seed is None:
                    tf.random.set_seed(None)
                else:
                    tf.random.set_seed(global_seed)
                ds = tf.data.Dataset.range(23).shuffle(
                    7, seed=seed, reshuffle_each_iteration=reshuffle
                )
                cases.append(
                    {
                        "n": 23,
                        "buffer_size": 7,
                        "seed": None if seed is None else str(seed),
                        "global_seed": None if global_seed is None else str(global_seed),
                        "reshuffle_each_iteration": reshuffle,
                        "epochs": _orders(ds),
                    }
                )
    tf.random.set_seed(None)
    return cases


def refused_cases() -> list[dict[str, Any]]:
    out = []
    for label, seed in (
        ("float 1.5", 1.5),
        ("float 2.0", 2.0),
        ("bool True", True),
        ("str '3'", "3"),
        ("numpy uint64 max", np.uint64(2**64 - 1)),
        ("numpy int64 min", np.int64(-(2**63))),
    ):
        try:
            ds = tf.data.Dataset.range(5).shuffle(5, seed=seed)
            result: dict[str, Any] = {"accepted": True, "epochs": _orders(ds, 1)}
        except Exception as err:  # recorded as TF raises it
            result = {"accepted": False, "error": type(err).__name__, "message": str(err)[:300]}
        out.append({"seed": label, **result})
    return out


def _toy_copy(num_bytes: dict[str, int] | None) -> Path:
    target = Path(tempfile.mkdtemp()) / "readplan_toy" / "1.0.0"
    shutil.copytree(TOY, target)
    if num_bytes is not None:
        info_file = target / "dataset_info.json"
        info = json.loads(info_file.read_text())
        for split in info["splits"]:
            if num_bytes[split["name"]]:
                split["numBytes"] = str(num_bytes[split["name"]])
            else:
                split.pop("numBytes", None)
        info_file.write_text(json.dumps(info, indent=2))
    return target


def _sort_fn(pieces: list[list[int]]) -> Any:
    def sort(instructions: list[Any]) -> list[Any]:
        by_shard = {int(fi.filename.rsplit("-", 3)[-3]): fi for fi in instructions}
        out = []
        for shard, skip, take in pieces:
            base = by_shard[shard]
            out.append(
                type(base)(
                    filename=base.filename,
                    skip=skip,
                    take=take,
                    examples_in_shard=base.examples_in_shard,
                )
            )
        return out

    return sort


def file_cases() -> list[dict[str, Any]]:
    """File shuffles with seeds outside int64 and TFDS's autocache decision."""
    cases = []
    sizes = {
        "toy": None,
        "zero": {"train": 0, "test": 0},
        "huge": {"train": 200 * 2**20, "test": 60 * 2**20},
        "edge": {"train": 250 * 2**20 - 497, "test": 497},
    }
    layouts = [
        # (split, sort pieces or None, shuffle_files, seed, global seed, reshuffle, autocache)
        ("train", None, True, 2**64 + 17, None, None, True),
        ("train", None, True, -(2**66) + 5, 2**64 + 1, None, True),
        ("test", None, True, 2**100, None, True, True),
        ("train[:5]", [[0, 0, 2], [0, 2, 3]], True, 7, None, None, True),
        ("train[:5]", [[0, 0, 2], [0, 2, 3]], True, 7, None, None, False),
        ("train[:5]", [[0, 0, 5], [0, 0, 5], [0, 1, 3]], True, 11, None, None, True),
        ("train[:5]", [[0, 0, 5], [0, 0, 5], [0, 1, 3]], True, 11, None, False, True),
        ("train[:5]", [[0, 0, 5], [0, 0, 5], [0, 1, 3]], True, 11, None, True, True),
        (
            "train[:5]",
            [[0, 0, 1], [0, 1, 1], [0, 2, 1], [0, 3, 2]],
            True,
            2**64 + 9,
            None,
            None,
            True,
        ),
        ("train[:4]+train[5:7]", [[0, 0, 4], [0, 5, 2]], True, 3, None, None, True),
        ("train[2shard:3shard]", [[2, 0, 6], [2, 6, 6]], True, 5, None, None, True),
        ("train[2shard:3shard]", [[2, 0, 6], [2, 6, 6]], False, None, None, None, True),
    ]
    for size_name, num_bytes in sizes.items():
        directory = _toy_copy(num_bytes)
        builder = tfds.builder_from_directory(str(directory))
        for split, pieces, shuffle, seed, global_seed, reshuffle, autocache in layouts:
            if size_name != "toy" and (pieces is None or not shuffle):
                continue
            tf.random.set_seed(global_seed)
            config = tfds.ReadConfig(
                shuffle_seed=seed,
                shuffle_reshuffle_each_iteration=reshuffle,
                try_autocache=autocache,
                add_tfds_id=True,
                interleave_cycle_length=2,
                interleave_block_length=2,
                experimental_interleave_sort_fn=None if pieces is None else _sort_fn(pieces),
            )
            ds = builder.as_dataset(split=split, shuffle_files=shuffle, read_config=config)
            cases.append(
                {
                    "sizes": size_name,
                    "num_bytes": num_bytes,
                    "split": split,
                    "sort_pieces": pieces,
                    "shuffle_files": shuffle,
                    "shuffle_seed": None if seed is None else str(seed),
                    "global_seed": None if global_seed is None else str(global_seed),
                    "shuffle_reshuffle_each_iteration": reshuffle,
                    "try_autocache": autocache,
                    "interleave_cycle_length": 2,
                    "interleave_block_length": 2,
                    "tfds_caches": bool(
                        builder._should_cache_ds(
                            split=split, shuffle_files=shuffle, read_config=config
                        )
                    ),
                    "epochs": _orders(ds),
                }
            )
        shutil.rmtree(directory.parent.parent)
    tf.random.set_seed(None)
    return cases


def even_split_cases() -> list[dict[str, Any]]:
    out = []
    for split, other, reverse in (
        ("train", "train[1.5:2]", False),
        ("train", "train[1.5:2]", True),
        ("nope", "train[a:b]", False),
        ("nope", "train[a:b]", True),
        ("train", "test[:2]", False),
        ("nope", "train[:-5]", True),
        ("train", "train[2shard:1]", False),
        ("train", "train[:10%]+test[1:3]", False),
        ("train", "train[:10%]+test[1:x]", True),
        ("test", "train[101%:]", False),
        ("test", " test ", False),
        ("test", "test+", False),
    ):
        piece = tfds.even_splits(split, 2)[0]
        try:
            joined = other + piece if reverse else piece + other
            result: dict[str, Any] = {"raises": None, "text": str(joined)}
        except Exception as err:  # recorded as TFDS raises it
            result = {"raises": type(err).__name__, "message": str(err)}
        out.append({"even_split": split, "other": other, "other_first": reverse, **result})
    return out


def main() -> None:
    tf.config.set_visible_devices([], "GPU")
    document = {
        "tf_version": tf.__version__,
        "tfds_version": tfds.__version__,
        "seeds": seed_cases(),
        "refused": refused_cases(),
        "file_shuffles_and_autocache": file_cases(),
        "even_split_add": even_split_cases(),
    }
    out = HERE / "round3_orders.json"
    out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
