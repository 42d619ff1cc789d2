"""The viewer's JSON API over raw HTTP: its numbers are readplan's (orders with every read
option, states of any configuration), and bad requests are refused with the reason."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import readplan
from tests.viewer_harness import FEATURES_DIR, FEATURES_PATH, FEATURES_ROOT, request, running

INFO = readplan.DatasetInfo.load(FEATURES_DIR)


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    with running([str(FEATURES_ROOT)]) as viewer:
        yield viewer


def call(server: Any, name: str, body: bytes | None = None, **params: str) -> tuple[int, Any]:
    query = "&".join(f"{k}={v}" for k, v in {**params, "token": server.token}.items())
    method = "GET" if body is None else "POST"
    status, _, data = request(server, f"/api/{name}?{query}", method=method, body=body)
    return status, json.loads(data)


CONFIGS = [
    ({}, readplan.ReadConfig()),
    (
        {"shuffle_files": "1", "shuffle_seed": "3", "interleave_block_length": "2"},
        readplan.ReadConfig(shuffle_files=True, shuffle_seed=3, interleave_block_length=2),
    ),
    (
        {"example_shuffle_buffer": "7", "example_shuffle_seed": "11", "global_seed": "5"},
        readplan.ReadConfig(example_shuffle=readplan.ExampleShuffle(7, 11), global_seed=5),
    ),
    (
        {
            "input_context": "1/2",
            "interleave_cycle_length": "2",
            "shuffle_files": "1",
            "shuffle_seed": "9",
            "shuffle_reshuffle_each_iteration": "0",
        },
        readplan.ReadConfig(
            input_context=readplan.InputContext(1, 2),
            interleave_cycle_length=2,
            shuffle_files=True,
            shuffle_seed=9,
            shuffle_reshuffle_each_iteration=False,
        ),
    ),
]


@pytest.mark.parametrize(("params", "config"), CONFIGS)
@pytest.mark.parametrize("epoch", [0, 3])
def test_order_equals_the_plan(
    server: Any, params: dict[str, str], config: Any, epoch: int
) -> None:
    status, order = call(
        server,
        "order",
        root="0",
        path=FEATURES_PATH,
        split="train",
        epoch=str(epoch),
        batch_size="4",
        step="2",
        examples="0",
        **params,
    )
    assert status == 200, order
    plan = readplan.ReadPlan(INFO, "train", config)
    epoch_order = plan.epoch(epoch)
    assert order["num_examples"] == plan.num_examples
    assert order["step_ids"] == epoch_order.tfds_ids()[8:12]
    assert order["step_global_ids"] == epoch_order.global_ids()[8:12].tolist()
    assert order["file_order"] == plan.file_order(epoch).tolist()
    assert order["picture"]["files"] == epoch_order.file_index.tolist()


@pytest.mark.parametrize(("params", "config"), CONFIGS)
def test_uploaded_checkpoint_of_any_configuration(
    server: Any, params: dict[str, str], config: Any
) -> None:
    plan = readplan.ReadPlan(INFO, "train", config)
    checkpoint = plan.checkpoint(2, 5)
    status, state = call(server, "state", checkpoint.to_json().encode(), examples="0")
    assert status == 200, state
    assert (state["epoch"], state["position"]) == (2, 5)
    expanded = plan.expand(checkpoint)
    assert [[f["file"], f["consumed"], f["remaining"]] for f in state["files"]] == [
        list(entry) for entry in expanded.files
    ]
    assert state["next_ids"] == plan.epoch(2).tfds_ids()[5 : 5 + len(state["next_ids"])]


def test_state_of_another_dataset_is_refused_with_the_reason(server: Any) -> None:
    toy = readplan.DatasetInfo.load(FEATURES_ROOT.parent / "tfds" / "readplan_toy" / "1.0.0")
    body = readplan.ReadPlan(toy, "train").checkpoint(0, 1).to_json().encode()
    status, answer = call(server, "state", body)
    assert status == 404
    assert "readplan_toy" in answer["error"]


def test_edited_state_is_refused(server: Any) -> None:
    document = readplan.ReadPlan(INFO, "train").checkpoint(0, 3).to_dict()
    document["position"] = 4
    status, answer = call(server, "state", json.dumps(document).encode())
    assert status == 422
    assert "position" in answer["error"]
    status, answer = call(server, "state", b"{not json")
    assert status == 422


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"label": "nope:1"}, "KEY:INDEX"),
        ({"start": "-1"}, "0..60"),
        ({"count": "x"}, "integer"),
        ({"split": "train[:200%]"}, "split"),
        ({"shard": "9"}, "shard"),
    ],
)
def test_bad_gallery_requests(server: Any, params: dict[str, str], words: str) -> None:
    status, answer = call(server, "examples", root="0", path=FEATURES_PATH, **params)
    assert status in (400, 422), answer
    assert words.lower() in answer["error"].lower()


def test_bad_order_requests(server: Any) -> None:
    status, answer = call(server, "order", root="0", path=FEATURES_PATH, input_context="1-2")
    assert status == 400
    assert "ID/N" in answer["error"]
    status, answer = call(server, "order", root="0", path=FEATURES_PATH, shuffle_files="1")
    assert status == 422
    assert "seed" in answer["error"]
