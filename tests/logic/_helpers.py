"""Helpers shared by the logic tests: small decision logs from columns, a brute force over
every item-level answer key, a Hypothesis strategy for small instances, and a guard that
fails a test if any solver runs."""

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from evalcert.logic import decisions_from_frame


def decisions(cols, labels, on_missing="error"):
    """Grader i's column ``cols[i]`` (label index, or -1 for skipped) as Decisions."""
    rows = [(k, f"g{i}", labels[v]) for i, col in enumerate(cols) for k, v in enumerate(col)
            if v >= 0]
    return decisions_from_frame(pd.DataFrame(rows, columns=["item", "grader", "label"]),
                                labels=labels, on_missing=on_missing)


def brute_force_joint(dec):
    """max over every item-level truth of min_{i,t} (correct / decided) over non-empty cells."""
    arr, r = dec.array, len(dec.labels)
    best = Fraction(0)
    for truth in itertools.product(range(r), repeat=len(dec.items)):
        truth = np.array(truth)
        vals = []
        for i in range(arr.shape[1]):
            for t in range(r):
                den = int(((truth == t) & (arr[:, i] >= 0)).sum())
                if den:
                    vals.append(Fraction(int(((truth == t) & (arr[:, i] == t)).sum()), den))
        best = max(best, min(vals))
    return best


def instance(min_graders=2, max_graders=3, max_q=6, skip=False):
    low = -1 if skip else 0
    return st.tuples(st.integers(2, 3), st.integers(2, max_q),
                     st.integers(min_graders, max_graders)).flatmap(
        lambda t: st.tuples(st.just(t[0]), st.lists(
            st.lists(st.integers(low, t[0] - 1), min_size=t[1], max_size=t[1]),
            min_size=t[2], max_size=t[2])))


def forbid_solvers(monkeypatch):
    """Make every PuLP solve and every HighsModel solve fail the test."""
    import pulp

    from evalcert.logic.ilp import HighsModel

    def no_solve(*args, **kwargs):
        raise AssertionError("a solver ran")

    monkeypatch.setattr(pulp.LpProblem, "solve", no_solve)
    monkeypatch.setattr(HighsModel, "solve", no_solve)


def hard_knapsack(**options):
    """A 60-item knapsack with weights in [1e5, 1e6) as a :class:`HighsModel` maximising the
    packed weight: HiGHS needs a moment to prove it, so time limits and deadlines bite."""
    import pulp

    from evalcert.logic.ilp import HighsModel

    rng = np.random.default_rng(0)
    prob = pulp.LpProblem("knap", pulp.LpMaximize)
    x = [prob.add_variable(f"x{k}", 0, 1, cat="Integer") for k in range(60)]
    w = rng.integers(10**5, 10**6, size=60)
    prob += pulp.lpSum(int(v) * xi for v, xi in zip(w, x)) <= int(w.sum()) // 2 + 1, "cap"
    model = HighsModel(prob, **options)
    model.set_objective({k: float(v) for k, v in enumerate(w)}, maximize=True)
    return model
