"""A documented generator of realistic judge logs, for tests and benchmarks.

True labels are drawn from a label distribution ``pi ~ Dirichlet(alpha, ..., alpha)``
(``alpha = 3`` by default; small ``alpha`` gives unbalanced labels); grader ``i``
has accuracy ``a_i ~ Uniform(acc_low, acc_high)`` and, when wrong, picks one of the other
labels with probabilities from its own ``Dirichlet(1, ..., 1)`` (so errors are
label-dependent, as with LLM judges that over-call ties); a fraction ``skip`` of decisions
is missing at random. Everything is drawn from ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalcert.errors import InputError
from evalcert.logic.summaries import Decisions, decisions_from_frame

__all__ = ["simulate_log", "simulate_decisions"]


def simulate_log(n_items: int, n_labels: int, n_graders: int, *, seed: int = 0,
                 acc_low: float = 0.55, acc_high: float = 0.85, skip: float = 0.0,
                 alpha: float = 3.0) -> tuple[pd.DataFrame, np.ndarray]:
    """A long ``item, grader, label`` log and the true labels (indices) it was drawn from.

    Examples
    --------
    >>> log, truth = simulate_log(4, 2, 2, seed=1)
    >>> list(log.columns), len(log), truth.shape
    (['item', 'grader', 'label'], 8, (4,))
    """
    if n_items < 1 or n_labels < 2 or n_graders < 1 or not 0 <= skip < 1 or \
            not 0 <= acc_low <= acc_high <= 1 or not alpha > 0:
        raise InputError("simulate_log needs n_items >= 1, n_labels >= 2, n_graders >= 1, "
                         "0 <= acc_low <= acc_high <= 1, 0 <= skip < 1 and alpha > 0")
    rng = np.random.default_rng(seed)
    truth = rng.choice(n_labels, size=n_items, p=rng.dirichlet(np.full(n_labels, float(alpha))))
    items, graders, labels = [], [], []
    for i in range(n_graders):
        acc = rng.uniform(acc_low, acc_high)
        confuse = rng.dirichlet(np.ones(n_labels - 1), size=n_labels)
        right = rng.random(n_items) < acc
        shift = np.array([rng.choice(n_labels - 1, p=confuse[t]) + 1 for t in truth])
        said = np.where(right, truth, (truth + shift) % n_labels)
        keep = rng.random(n_items) >= skip
        items.append(np.flatnonzero(keep))
        graders.append(np.full(int(keep.sum()), i))
        labels.append(said[keep])
    log = pd.DataFrame({"item": [f"q{k}" for k in np.concatenate(items)],
                        "grader": [f"judge{g}" for g in np.concatenate(graders)],
                        "label": [f"l{v}" for v in np.concatenate(labels)]})
    return log, truth


def simulate_decisions(n_items: int, n_labels: int, n_graders: int, *, seed: int = 0,
                       skip: float = 0.0, on_missing: str = "keep",
                       **kwargs: float) -> Decisions:
    """:func:`simulate_log` read as :class:`Decisions` (labels ``l0, l1, ...`` declared;
    skipped decisions kept as ``-1`` when ``skip > 0``, or their items dropped with
    ``on_missing="drop"``).

    Examples
    --------
    >>> dec = simulate_decisions(30, 2, 3, seed=0, skip=0.1)
    >>> len(dec.items), dec.graders, dec.labels, dec.complete
    (30, ('judge0', 'judge1', 'judge2'), ('l0', 'l1'), False)
    """
    log, _ = simulate_log(n_items, n_labels, n_graders, seed=seed, skip=skip, **kwargs)
    return decisions_from_frame(log, labels=[f"l{v}" for v in range(n_labels)],
                                on_missing=on_missing if skip > 0 else "error")
