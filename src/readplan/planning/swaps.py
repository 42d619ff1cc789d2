"""A forward Fisher-Yates resolved without a Python step per swap (``specs/order.md`` §3.2.1).

Step ``i`` of the swaps swaps positions ``i`` and ``partners[i] >= i``; what each position
holds afterwards follows from chains of earlier steps into the same position, resolved by
pointer doubling.  Every large temporary costs its page faults on top of its arithmetic,
so the arrays are few and reused in place.
"""

from __future__ import annotations

import numpy as np

from readplan._internal.arrays import IntArray
from readplan._internal.sorting import stable_order

__all__ = ["swapped"]

# Rounds of peeling steps off their partners before sorting the rest (see _previous_steps).
_PEEL_ROUNDS = 24


def swapped(partners: IntArray, length: int) -> IntArray:
    """Where each position's item comes from after the swaps ``i <-> partners[i]``, in order.

    ``partners[i] >= i`` (a forward Fisher-Yates). Returns ``source`` with the item at
    position ``p`` afterwards being the one at ``source[p]`` before. Step ``i`` takes the
    item position ``partners[i]`` holds then: the one the previous step into that position
    brought, which is the item position ``k`` held just before its own step ``k``, and so on
    back to an untouched position, a chain that pointer doubling resolves in ``O(log)``
    passes.
    """
    steps = partners.size
    if not steps:
        return np.arange(length, dtype=np.int64)
    index = np.arange(steps, dtype=np.int64)
    last = np.full(length, -1, dtype=np.int64)  # the last step into each position
    np.maximum.at(last, partners, index)
    tail = last[steps:].copy()
    # The last step into position k before step k: the last into k, unless that is k's own
    # swap, whose predecessor into k is then the one (patched in below).
    held = last[:steps].copy()
    own = np.flatnonzero(held == index)
    previous = _previous_steps(partners, last, index)  # the last earlier step into my partner
    held[own] = previous[own]
    # What position k held before step k, as a chain of such steps down to an untouched one.
    np.copyto(held, index, where=held < 0)
    _resolve_chains(held)
    source = np.take(held, previous)  # previous = -1 picks held[-1]: replaced just below
    np.copyto(source, partners, where=previous < 0)
    if steps == length:
        return source
    rest = np.arange(steps, length, dtype=np.int64)
    touched = np.flatnonzero(tail >= 0)
    rest[touched] = held[tail[touched]]
    return np.concatenate([source, rest])


def _resolve_chains(held: IntArray) -> None:
    """Point every entry of ``held`` at the end of its chain (``held[k] == k`` ends one).

    Pointer doubling over the entries not yet at an end only: about half the steps start
    at one and most chains are a few links long, so the working set shrinks fast.
    """
    open_ = np.flatnonzero(held[held] != held)
    while open_.size:
        ahead = held[held[open_]]
        held[open_] = ahead
        open_ = open_.compress(held[ahead] != ahead)


def _previous_steps(partners: IntArray, later: IntArray, index: IntArray) -> IntArray:
    """Per step, the last earlier step with the same partner (-1: none).

    ``later`` holds each partner's last step and is used up. Peeling each partner's latest
    remaining step off with one ``maximum.at`` per round costs far less than a stable sort
    by partner: a Fisher-Yates gives a position a handful of steps (about ``log`` of the
    length at most), so a few rounds suffice, and past ``_PEEL_ROUNDS`` the rest is sorted.
    Masks select with ``compress``: indexing by a boolean mask is many times slower.
    """
    previous = np.full(index.size, -1, dtype=np.int64)
    rest = np.flatnonzero(later[partners] != index)
    if not rest.size:
        return previous
    top = np.full(later.size, -1, dtype=np.int64)
    for _ in range(_PEEL_ROUNDS):
        group = partners[rest]
        np.maximum.at(top, group, rest)
        peeled = top[group] == rest
        steps, groups = rest.compress(peeled), group.compress(peeled)
        previous[later[groups]] = steps
        later[groups] = steps  # now the step peeled off most recently
        top[groups] = -1
        rest = rest.compress(~peeled)
        if not rest.size:
            return previous
    # Steps into one position beyond the rounds: group what is left by a stable sort.
    order = rest[stable_order(partners[rest], later.size)]
    grouped = partners[order]
    same = grouped[1:] == grouped[:-1]
    previous[order[1:][same]] = order[:-1][same]
    ends = np.flatnonzero(np.append(~same, True))
    previous[later[grouped[ends]]] = order[ends]
    return previous
