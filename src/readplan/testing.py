"""Helpers for property-testing order guarantees, readplan's own and its users'.

Strategies (``dataset_infos``, ``split_specs``, ``read_configs``, ``plans``) need
hypothesis, an optional dependency (``pip install 'readplan[hypothesis]'``); the assertion
helpers work without it and accept any reader, not only readplan's:

* :func:`assert_is_permutation`: every expected item delivered exactly once;
* :func:`assert_resumes_exactly`: restoring the saved state after any position gives
  exactly the rest of the uninterrupted run;
* :func:`assert_epoch_is_permutation`: a plan's epoch reads each selected record once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from readplan.errors import ReadplanError
from readplan.metadata.dataset_info import DatasetInfo
from readplan.plan import ReadPlan
from readplan.planning.config import ExampleShuffle, InputContext, ReadConfig

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = [
    "assert_epoch_is_permutation",
    "assert_is_permutation",
    "assert_resumes_exactly",
    "dataset_infos",
    "plans",
    "read_configs",
    "split_specs",
    "state_structure",
]

T = TypeVar("T")
S = TypeVar("S")


# -- assertion helpers ------------------------------------------------------------------


def assert_is_permutation(items: Iterable[Hashable], expected: Iterable[Hashable]) -> None:
    """Every expected item appears exactly once in ``items``, and nothing else does."""
    got, want = Counter(items), Counter(expected)
    missing = want - got
    extra = got - want
    repeated = {item: n for item, n in got.items() if n > 1}
    if missing or extra or repeated:
        raise AssertionError(
            "not a permutation of the expected items: "
            f"{sum(missing.values())} missing (e.g. {_sample(missing)}), "
            f"{sum(extra.values())} unexpected (e.g. {_sample(extra)}), "
            f"{len(repeated)} repeated (e.g. {_sample(repeated)})"
        )


def assert_epoch_is_permutation(plan: ReadPlan, epoch: int) -> None:
    """Epoch ``epoch`` of ``plan`` reads every record its instructions select, once."""
    order = plan.epoch(epoch)
    expected = [
        (file_index, record)
        for file_index in plan.selected.tolist()
        for record in range(
            plan.instructions[file_index].skip,
            plan.instructions[file_index].skip + plan.instructions[file_index].num_records,
        )
    ]
    assert_is_permutation(zip(order.file_index.tolist(), order.record_index.tolist()), expected)


def assert_resumes_exactly(
    factory: Callable[[S | None], Iterable[T]],
    state_of: Callable[[Any], S],
    *,
    positions: Iterable[int] | None = None,
    key: Callable[[T], Hashable] = lambda item: item,
    limit: int | None = None,
) -> None:
    """Restoring after any position continues exactly where the uninterrupted run was.

    ``factory(None)`` starts a fresh run and ``factory(state)`` restores one; both return
    the reader (an iterable).  ``state_of(reader)`` saves the reader's state between two
    items.  The uninterrupted run (``limit`` items at most) is recorded with the state
    after each item; every state must have the structure of the first (the same keys and
    value types, see :func:`state_structure`).  Then, for every position in ``positions``
    (default: all of them), a restored reader must report the state it was restored
    from and yield exactly the rest of that run.
    """
    reader = factory(None)
    iterator = iter(reader)
    states = [state_of(reader)]
    run: list[Hashable] = []
    for item in iterator:
        run.append(key(item))
        states.append(state_of(reader))
        _check_same_structure(states[0], states[-1], len(run))
        if limit is not None and len(run) >= limit:
            break
    wanted = range(len(run) + 1) if positions is None else positions
    for position in wanted:
        restored = factory(states[position])
        again = state_of(restored)
        if again != states[position]:
            raise AssertionError(
                f"a reader restored from the state saved after position {position} reports "
                f"another state: {again!r:.300} instead of {states[position]!r:.300}"
            )
        rest = [key(item) for item in _take(restored, len(run) - position)]
        if rest != run[position:]:
            first = next(
                (k for k, (a, b) in enumerate(zip(rest, run[position:])) if a != b),
                min(len(rest), len(run) - position),
            )
            raise AssertionError(
                f"restoring the state saved after position {position} does not continue the "
                f"run: item {position + first} is "
                f"{rest[first] if first < len(rest) else '<end>'!r} after the restore, but "
                f"{run[position + first] if position + first < len(run) else '<end>'!r} in "
                "the uninterrupted run"
            )


def state_structure(state: Any) -> Any:
    """The shape of a JSON-like state: mappings by key, other values by type.

    Sequences count as one type whatever their contents, so a state whose lists fill up
    (interleave slots, a shuffle buffer) keeps its structure; a key that appears or
    disappears, or a value that changes type, changes it.
    """
    if isinstance(state, Mapping):
        return {key: state_structure(value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return "sequence"
    return type(state).__name__


def _check_same_structure(first: Any, later: Any, position: int) -> None:
    if state_structure(later) != state_structure(first):
        raise AssertionError(
            f"the state saved after position {position} has another structure than the "
            f"initial state: {state_structure(later)!r:.300} instead of "
            f"{state_structure(first)!r:.300}"
        )


def _take(iterable: Iterable[T], count: int) -> list[T]:
    out: list[T] = []
    if count <= 0:
        return out
    for item in iterable:
        out.append(item)
        if len(out) == count:
            break
    return out


def _sample(counter: Counter[Any] | dict[Any, int]) -> str:
    return repr(list(counter)[:3])


# -- hypothesis strategies --------------------------------------------------------------


def _st() -> Any:
    try:
        from hypothesis import strategies
    except ImportError as err:  # pragma: no cover - exercised without hypothesis only
        raise ImportError(
            "readplan.testing's strategies need hypothesis: pip install 'readplan[hypothesis]'"
        ) from err
    return strategies


def dataset_infos(
    *,
    max_shards: int = 7,
    max_shard_length: int = 12,
    split_names: Sequence[str] = ("train", "test"),
) -> SearchStrategy[DatasetInfo]:
    """Dataset layouts with uneven (possibly empty) shards and at least one record."""
    st = _st()
    lengths = st.lists(st.integers(0, max_shard_length), min_size=1, max_size=max_shards)

    def build(splits: dict[str, list[int]]) -> DatasetInfo:
        if not any(sum(v) for v in splits.values()):
            splits[next(iter(splits))][0] = 1
        return DatasetInfo(name="layout", splits=splits)

    names = st.lists(st.sampled_from(list(split_names)), min_size=1, unique=True)
    layouts = names.flatmap(lambda chosen: st.fixed_dictionaries(dict.fromkeys(chosen, lengths)))
    strategy: SearchStrategy[DatasetInfo] = layouts.map(build)
    return strategy


def split_specs(info: DatasetInfo) -> SearchStrategy[str]:
    """Split strings over ``info`` that select records: names, slices, shards, unions."""
    st = _st()
    names = [name for name, split in info.splits.items() if split.num_examples]

    def part(name: str) -> SearchStrategy[str]:
        split = info.splits[name]
        n, shards = split.num_examples, split.num_shards
        choices: SearchStrategy[str] = st.one_of(
            st.just(name),
            st.integers(0, n - 1).map(lambda a: f"{name}[{a}:]"),
            st.integers(1, n).map(lambda b: f"{name}[:{b}]"),
            st.integers(0, 99).map(lambda p: f"{name}[{p}%:]"),
            st.integers(0, shards - 1).map(lambda k: f"{name}[{k}shard:]"),
        )
        return choices

    parts = st.lists(st.sampled_from(names).flatmap(part), min_size=1, max_size=3)
    specs: SearchStrategy[str] = parts.map("+".join)
    return specs


def read_configs(
    *, max_cycle: int = 6, max_block: int = 5, example_shuffle: bool = True
) -> SearchStrategy[ReadConfig]:
    """Read configurations: cycle and block lengths from 1, seeded file shuffles,
    reshuffling on or off, input contexts and (unless ``example_shuffle=False``)
    example-level shuffles."""
    st = _st()
    seeds = st.integers(-(2**40), 2**40)
    contexts = st.one_of(
        st.none(),
        st.integers(1, 3).flatmap(
            lambda n: st.integers(0, n - 1).map(lambda i: InputContext(i, n))
        ),
    )
    example_shuffles = st.none()
    if example_shuffle:
        example_shuffles = st.one_of(
            st.none(),
            st.builds(
                ExampleShuffle, st.integers(1, 9), seeds, reshuffle_each_iteration=st.booleans()
            ),
        )

    def build(
        cycle: int,
        block: int,
        shuffle: bool,
        seed: int,
        reshuffle: bool | None,
        context: InputContext | None,
        example: ExampleShuffle | None,
    ) -> ReadConfig:
        return ReadConfig(
            interleave_cycle_length=cycle,
            interleave_block_length=block,
            shuffle_files=shuffle,
            shuffle_seed=seed if shuffle else None,
            shuffle_reshuffle_each_iteration=reshuffle,
            input_context=context,
            example_shuffle=example,
        )

    configs: SearchStrategy[ReadConfig] = st.builds(
        build,
        st.integers(1, max_cycle),
        st.integers(1, max_block),
        st.booleans(),
        seeds,
        st.sampled_from([None, True, False]),
        contexts,
        example_shuffles,
    )
    return configs


def plans(
    *,
    configs: SearchStrategy[ReadConfig] | None = None,
    infos: SearchStrategy[DatasetInfo] | None = None,
) -> SearchStrategy[ReadPlan]:
    """Read plans over random layouts, split strings and configurations.

    Combinations TFDS itself refuses (fewer files than input pipelines) are filtered out.
    """
    st = _st()
    chosen_infos = dataset_infos() if infos is None else infos
    chosen_configs = read_configs() if configs is None else configs

    @st.composite  # type: ignore[untyped-decorator]
    def build(draw: Callable[[SearchStrategy[Any]], Any]) -> ReadPlan:
        info = draw(chosen_infos)
        spec = draw(split_specs(info))
        config = draw(chosen_configs)
        try:
            return ReadPlan(info, spec, config)
        except ReadplanError:
            draw(st.nothing())
            raise AssertionError("unreachable") from None

    strategy: SearchStrategy[ReadPlan] = build()
    return strategy
