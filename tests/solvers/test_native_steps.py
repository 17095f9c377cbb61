"""The native solver's per-step savings (issue 13, session 6), each against the
path without it on small random perturbed designs:

* a repeated active set (the loose solve, then the solve to rounding) reuses
  the PCG path's reduction and Schur operator instead of building them again;
* an active set that changes at most ``1/SETTLED`` of its rows is solved to
  rounding at once, sparing the repeat;
* a plain fit's Schur preconditioner takes ``diag(S)`` from the one value of
  ``P``'s cells (no array of squares).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from evalcert.solvers.backends import native, native_pcg, native_schur
from evalcert.solvers.backends.base import SolveSettings
from evalcert.solvers.certificates import qp_certificate
from evalcert.solvers.clipped_linear_qp import build_qp, centre_free_aux, initial_point
from tests.solvers.test_native_pcg import _design


def _qp(seed, weighted=False, lam=0.0, K=40, J=400, per_item=3):
    design, s = _design(K, J, per_item, seed)
    w = np.random.default_rng(50 + seed).integers(1, 4, design.n_cells).astype(float) \
        if weighted else None
    return design, build_qp(design, s, w, lam, "all")


def _solve(design, qp, cache):
    """A cold fit as :class:`ClippedLinear` runs it (PCG path forced)."""
    x0 = initial_point(design, np.zeros(design.K), np.zeros(design.J), "all")
    return native.solve(qp, SolveSettings(options={"path": "pcg"}), x0=x0, cache=cache,
                        complete=partial(centre_free_aux, design, "all"))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("weighted", [False, True])
def test_a_repeated_active_set_reuses_the_operator_and_gives_the_same_solution(
        seed, weighted, monkeypatch):
    design, qp = _qp(seed, weighted, lam=1e-3 * seed)
    built, sets = [], []
    schur_operator = native_pcg._schur_operator
    pcg_kkt_solve = native_pcg._pcg_kkt_solve
    monkeypatch.setattr(native_pcg, "_schur_operator",
                        lambda *a, **k: built.append(1) or schur_operator(*a, **k))
    monkeypatch.setattr(native, "_pcg_kkt_solve",
                        lambda qp, active, bounds, *a, **k: sets.append((active, bounds))
                        or pcg_kkt_solve(qp, active, bounds, *a, **k))
    sol = _solve(design, qp, cache={})
    assert sol.ok and sol.path == "pcg" and len(sets) >= 2
    x0 = initial_point(design, np.zeros(design.K), np.zeros(design.J), "all")
    # the last active set of the fit, solved twice from different points:
    # built once; the second solve equals a solve with a fresh cache to rounding
    active, bounds = sets[-1]
    cache: dict = {}
    built.clear()
    first = pcg_kkt_solve(qp, active, bounds, x0, cache, np.inf, None, rtol=1e-7)
    again = pcg_kkt_solve(qp, active, bounds, first[0], cache, np.inf, None, rtol=1e-12)
    assert len(built) == 1
    fresh = pcg_kkt_solve(qp, active, bounds, first[0], {}, np.inf, None, rtol=1e-12)
    assert len(built) == 2
    np.testing.assert_allclose(again[0], fresh[0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(again[1], fresh[1], rtol=0,
                               atol=1e-8 * max(1.0, float(np.abs(fresh[1]).max())))
    # another active set, or other bounds, builds anew
    other, other_bounds = sets[-3] if len(sets) > 2 else sets[0]
    assert not np.array_equal(other, active)
    pcg_kkt_solve(qp, other, other_bounds, x0, cache, np.inf, None)
    pcg_kkt_solve(qp, other, other_bounds + 1e-3, x0, cache, np.inf, None)
    assert len(built) == 4


def test_the_reused_operator_is_dropped_at_the_end_of_a_solve():
    """The cache outlives the solve (refits): the last operator must not."""
    design, qp = _qp(0)
    cache: dict = {}
    sol = _solve(design, qp, cache=cache)
    assert sol.ok and "pcg_last" not in cache and "split" in cache


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weighted", [False, True])
def test_settled_sets_solved_at_once_give_the_same_certified_fit(seed, weighted, monkeypatch):
    """With ``SETTLED`` small enough to fire on these small designs, the fit
    takes no more active-set steps and equals the one without it (``SETTLED``
    so large it never fires: the old path) to rounding, certified."""
    design, qp = _qp(seed, weighted)
    fits = {}
    for settled in (10**9, 20, 2):
        monkeypatch.setattr(native, "SETTLED", settled)
        sol = _solve(design, qp, cache={})
        assert sol.ok and sol.status == "solved"
        assert qp_certificate(qp, sol.x, sol.y).passed
        fits[settled] = sol
    old = fits[10**9]
    for settled in (20, 2):
        new = fits[settled]
        assert new.iterations <= old.iterations
        obj = [0.5 * s.x @ (qp.P @ s.x) + qp.q @ s.x for s in (old, new)]
        assert obj[1] == pytest.approx(obj[0], rel=1e-10, abs=1e-10)
        np.testing.assert_allclose(new.x, old.x, rtol=0, atol=1e-7)


def test_settled_fires_on_a_design_whose_last_step_changes_few_rows(monkeypatch):
    """The saving exists: some design in this family ends with a step changing
    at most 1/20 of its rows, and solving it at once spares a step."""
    spared = 0
    for seed in range(6):
        design, qp = _qp(seed, K=60, J=1500)
        steps = {}
        for settled in (10**9, 20):
            monkeypatch.setattr(native, "SETTLED", settled)
            steps[settled] = _solve(design, qp, cache={}).iterations
        spared += steps[10**9] - steps[20]
    assert spared > 0


def test_plain_fits_share_one_cell_value_weighted_ones_do_not():
    design, plain = _qp(0)
    _, weighted = _qp(0, weighted=True)
    assert native_schur._split(plain, {})["cell_value"] == -2.0
    assert native_schur._split(weighted, {})["cell_value"] is None


@pytest.mark.parametrize("seed", range(2))
def test_general_rows_too_many_to_hold_densely_take_the_full_pcg(seed, monkeypatch):
    """The Schur path holds the general rows densely (``DENSE_GENERAL``
    entries at most); past that the projected PCG on the full system runs,
    and the fit is the same."""
    design, qp = _qp(seed, lam=1e-3)
    default = _solve(design, qp, cache={})
    built = []
    schur_operator = native_pcg._schur_operator
    monkeypatch.setattr(native_pcg, "_schur_operator",
                        lambda *a, **k: built.append(1) or schur_operator(*a, **k))
    monkeypatch.setattr(native_pcg, "DENSE_GENERAL", qp.n - 1)     # the gauge row alone is over
    full = _solve(design, qp, cache={})
    assert not built and default.ok and full.ok
    assert qp_certificate(qp, full.x, full.y).passed
    obj = [0.5 * s.x @ (qp.P @ s.x) + qp.q @ s.x for s in (default, full)]
    assert obj[1] == pytest.approx(obj[0], rel=1e-10, abs=1e-10)
