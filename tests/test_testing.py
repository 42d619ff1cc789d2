"""readplan.testing's assertion helpers fail on broken readers and pass on sound ones."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from readplan.testing import assert_is_permutation, assert_resumes_exactly


class Counter:
    """A reader of 0..n-1 whose state is the next value; ``skew`` breaks its restore."""

    def __init__(self, n: int, state: int | None, *, skew: int = 0, at: int = -1) -> None:
        self.n = n
        self.next = 0 if state is None else state + (skew if state == at else 0)

    def __iter__(self) -> Iterator[int]:
        while self.next < self.n:
            value = self.next
            self.next += 1
            yield value


def test_resume_helper_accepts_an_exact_reader() -> None:
    assert_resumes_exactly(lambda state: Counter(10, state), lambda reader: reader.next)


@pytest.mark.parametrize(("skew", "at"), [(1, 0), (1, 7), (-1, 4), (1, 9)])
def test_resume_helper_catches_a_restore_off_by_one_at_any_position(skew: int, at: int) -> None:
    with pytest.raises(AssertionError, match=f"after position {at}"):
        assert_resumes_exactly(
            lambda state: Counter(10, state, skew=skew, at=at), lambda reader: reader.next
        )


def test_resume_helper_checks_only_the_positions_asked_for() -> None:
    broken = lambda state: Counter(10, state, skew=1, at=5)  # noqa: E731
    assert_resumes_exactly(broken, lambda reader: reader.next, positions=[0, 3, 9])
    with pytest.raises(AssertionError):
        assert_resumes_exactly(broken, lambda reader: reader.next, positions=[5])


def test_resume_helper_limit_bounds_an_endless_reader() -> None:
    endless = lambda state: Counter(10**9, state)  # noqa: E731
    assert_resumes_exactly(endless, lambda reader: reader.next, limit=20)


def test_permutation_helper() -> None:
    assert_is_permutation([3, 1, 2], [1, 2, 3])
    with pytest.raises(AssertionError, match="1 missing"):
        assert_is_permutation([1, 2], [1, 2, 3])
    with pytest.raises(AssertionError, match="1 repeated"):
        assert_is_permutation([1, 2, 2, 3], [1, 2, 3])
    with pytest.raises(AssertionError, match="1 unexpected"):
        assert_is_permutation([1, 2, 3, 4], [1, 2, 3])
