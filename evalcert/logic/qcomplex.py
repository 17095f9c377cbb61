"""The Q-complex: label counts ``(Q_{l_1}, ..., Q_{l_R})`` of every possible answer key.

Paper 003, Sec. II, Eq. (2): an answer key for a test of ``Q`` items projects to a point
of the simplex ``Q_{l_1} + ... + Q_{l_R} = Q`` with ``Q_l >= 0`` integer. There are
``C(Q+R-1, R-1)`` such points; users may restrict them with bounds ``lower <= Q_l <= upper``.
"""

from __future__ import annotations

import itertools
from math import comb
from typing import Iterator, Sequence

import numpy as np

from evalcert.errors import InputError

__all__ = ["MAX_BINDING_BOUNDS", "MAX_KEYS", "Bounds", "qcomplex_bounds", "qcomplex_size",
           "iter_qcomplex", "qcomplex_array"]

Bounds = tuple[tuple[int, ...], tuple[int, ...]]

#: most labels with a binding upper bound that :func:`qcomplex_size` counts (2^k subsets)
MAX_BINDING_BOUNDS = 20
#: most answer keys :func:`qcomplex_array` materialises (3 labels: 24 bytes a key)
MAX_KEYS = 5_000_000


def qcomplex_bounds(n_items: int, n_labels: int, lower: Sequence[int] | None = None,
                    upper: Sequence[int] | None = None) -> Bounds:
    """Validate bounds on each ``Q_l``; default ``0 <= Q_l <= Q``. Raise if no key fits.

    Examples
    --------
    >>> qcomplex_bounds(10, 3)
    ((0, 0, 0), (10, 10, 10))
    >>> qcomplex_bounds(10, 3, lower=[2, 0, 0], upper=[5, 20, 3])  # upper capped at Q
    ((2, 0, 0), (5, 10, 3))
    """
    if isinstance(n_items, bool) or not isinstance(n_items, (int, np.integer)) or n_items < 1:
        raise InputError(f"test size Q={n_items!r}; give a positive integer")
    if n_labels < 2:
        raise InputError(f"R={n_labels} labels; the logic needs R >= 2")
    lo = tuple(int(v) for v in (lower if lower is not None else [0] * n_labels))
    hi = tuple(min(int(v), n_items) for v in (upper if upper is not None else
                                               [n_items] * n_labels))
    if len(lo) != n_labels or len(hi) != n_labels:
        raise InputError(f"bounds need one value per label (R={n_labels}); got lower={lo}, "
                         f"upper={hi}")
    bad = [k for k in range(n_labels) if lo[k] < 0 or lo[k] > hi[k]]
    if bad:
        raise InputError(f"empty or negative bounds for label positions {bad}: lower={lo}, "
                         f"upper={hi}; need 0 <= lower <= upper")
    if not sum(lo) <= n_items <= sum(hi):
        raise InputError(f"no answer key fits the bounds: lower sums to {sum(lo)}, upper to "
                         f"{sum(hi)}, but Q={n_items}; loosen the bounds")
    return lo, hi


def qcomplex_size(n_items: int, n_labels: int, lower: Sequence[int] | None = None,
                  upper: Sequence[int] | None = None) -> int:
    """Number of answer-key points, exactly (inclusion-exclusion over the upper bounds).

    Without bounds this is ``C(Q+R-1, R-1)``: 351 for Q=25, R=3.

    Examples
    --------
    >>> qcomplex_size(25, 3)
    351
    """
    lo, hi = qcomplex_bounds(n_items, n_labels, lower, upper)
    rest = n_items - sum(lo)
    # only upper bounds below ``rest`` can bind; the others drop out of inclusion-exclusion
    widths = [h - l + 1 for l, h in zip(lo, hi) if h - l < rest]
    if len(widths) > MAX_BINDING_BOUNDS:
        raise InputError(f"{len(widths)} labels have binding upper bounds (R={n_labels}, "
                         f"Q={n_items}): counting the keys would take 2^{len(widths)} steps; "
                         f"bound at most {MAX_BINDING_BOUNDS} labels")
    total = 0
    for size in range(len(widths) + 1):
        for subset in itertools.combinations(widths, size):
            left = rest - sum(subset)
            if left >= 0:
                total += (-1) ** size * comb(left + n_labels - 1, n_labels - 1)
    return total


def iter_qcomplex(n_items: int, n_labels: int, lower: Sequence[int] | None = None,
                  upper: Sequence[int] | None = None) -> Iterator[tuple[int, ...]]:
    """Yield every answer-key point as a tuple, in lexicographic (ascending) order.

    Examples
    --------
    >>> list(iter_qcomplex(3, 2))  # answer keys of a 3-item binary test
    [(0, 3), (1, 2), (2, 1), (3, 0)]
    """
    lo, hi = qcomplex_bounds(n_items, n_labels, lower, upper)
    # suffix sums bound what the remaining labels can absorb
    lo_tail = [sum(lo[k:]) for k in range(n_labels + 1)]
    hi_tail = [sum(hi[k:]) for k in range(n_labels + 1)]

    def rec(k: int, left: int, prefix: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        if k == n_labels - 1:
            yield prefix + (left,)
            return
        start = max(lo[k], left - hi_tail[k + 1])
        stop = min(hi[k], left - lo_tail[k + 1])
        for v in range(start, stop + 1):
            yield from rec(k + 1, left - v, prefix + (v,))

    yield from rec(0, n_items, ())


def _compositions(total: int, parts: int) -> np.ndarray:
    """All ``parts``-tuples of ints >= 0 summing to ``total``, lexicographic, vectorised."""
    if parts == 1:
        return np.array([[total]], dtype=np.int64)
    if parts == 2:
        first = np.arange(total + 1, dtype=np.int64)
        return np.column_stack([first, total - first])
    blocks = [np.column_stack([np.full(comb(total - v + parts - 2, parts - 2), v, np.int64),
                               _compositions(total - v, parts - 1)])
              for v in range(total + 1)]
    return np.concatenate(blocks)


def qcomplex_array(n_items: int, n_labels: int, lower: Sequence[int] | None = None,
                   upper: Sequence[int] | None = None, *, max_keys: int = MAX_KEYS
                   ) -> np.ndarray:
    """All answer-key points as a ``(K, R)`` int64 array, same order as :func:`iter_qcomplex`.

    Vectorised: the first label's count in blocks, the rest recursively; bounds are
    applied as a mask. Refused with :class:`InputError`
    before any allocation when the unbounded simplex has more than ``max_keys`` points.

    Examples
    --------
    >>> qcomplex_array(3, 2).tolist()
    [[0, 3], [1, 2], [2, 1], [3, 0]]
    """
    lo, hi = qcomplex_bounds(n_items, n_labels, lower, upper)
    rest = n_items - sum(lo)
    slots = rest + n_labels - 1
    count = comb(slots, n_labels - 1)
    if count > max_keys:
        gib = count * (n_labels + 1) * 8 / 2**30
        raise InputError(f"the Q-complex of Q={n_items} items and R={n_labels} labels has "
                         f"{count:,} answer keys (~{gib:,.1f} GiB to list), above the limit of "
                         f"{max_keys:,}; the threshold T needs no list (drop --plot / curves), "
                         "or bound the key with lower/upper")
    keys = _compositions(rest, n_labels) + np.asarray(lo, dtype=np.int64)
    if any(h - l < rest for l, h in zip(lo, hi)):
        keys = keys[(keys <= np.asarray(hi, dtype=np.int64)).all(axis=1)]
    return keys
