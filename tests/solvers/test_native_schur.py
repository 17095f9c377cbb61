"""The PCG path's set-up shortcuts (issue 13, session 6, helper D), each
against the plain computation it replaced, on small random perturbed designs:

* ``_tie_rows``: the rows tying a variable to a hub, found once per QP, equal
  a row-by-row scan;
* ``_rows_in``: ``P_FF`` from one pass over ``P``'s columns of ``F`` equals
  the double fancy index ``P[:, F][F, :]``;
* the Schur operator on an eliminable block that is not a range of columns
  (no slices: the general gathers) gives the fit of the same QP with its
  variables in the usual order.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import scipy.sparse as sp

from evalcert.solvers.backends import native, native_pcg, native_schur
from evalcert.solvers.backends.base import SolveSettings
from evalcert.solvers.certificates import QP, qp_certificate
from evalcert.solvers.clipped_linear_qp import build_qp, centre_free_aux, initial_point
from tests.solvers.test_native_pcg import _design


def _qp(seed, weighted=False, lam=0.0, K=30, J=300, per_item=3):
    design, s = _design(K, J, per_item, seed)
    w = np.random.default_rng(70 + seed).integers(1, 4, design.n_cells).astype(float) \
        if weighted else None
    return design, build_qp(design, s, w, lam, "all")


@pytest.mark.parametrize("seed", range(3))
def test_tie_rows_found_once_equal_a_row_by_row_scan(seed):
    _, qp = _qp(seed)
    A = qp.A.tocsr()
    # a few rows that look like ties but are not: one entry off +-1, both
    # variables hubs, three entries
    A = sp.vstack([A, sp.csr_matrix(([1.0, -2.0], ([0, 0], [0, qp.n - 1])), shape=(1, qp.n)),
                   sp.csr_matrix(([1.0, -1.0], ([0, 0], [qp.n - 2, qp.n - 1])), shape=(1, qp.n)),
                   sp.csr_matrix(([1.0, -1.0, 1.0], ([0, 0, 0], [0, 1, qp.n - 1])),
                                 shape=(1, qp.n))]).tocsr()
    hub = qp.P.diagonal() == 0
    ties = native_pcg._tie_rows(A, hub)
    for r in range(A.shape[0]):
        cols = A.indices[A.indptr[r]:A.indptr[r + 1]]
        vals = A.data[A.indptr[r]:A.indptr[r + 1]]
        tie = len(cols) == 2 and abs(vals[0]) == 1 and vals[0] == -vals[1] \
            and hub[cols[0]] != hub[cols[1]]
        assert ties["is_tie"][r] == tie
        if tie:
            k = 1 if hub[cols[0]] else 0
            assert (ties["k"][r], ties["h"][r], ties["a"][r]) == (cols[k], cols[1 - k], vals[k])
    assert np.array_equal(ties["hubs"], np.flatnonzero(hub))
    assert np.array_equal(ties["hub_pos"][ties["hubs"]], np.arange(hub.sum()))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shuffled", [False, True])
def test_P_FF_from_one_pass_equals_the_double_fancy_index(seed, weighted, shuffled):
    """Items a range of columns (views of P's arrays) or scattered (a gather)."""
    _, qp = _qp(seed, weighted, lam=1e-3 * seed)
    if shuffled:
        qp = _permuted(qp, np.random.default_rng(seed).permutation(qp.n))
    s = native_schur._split(qp, {})
    assert isinstance(s["E"], slice) != shuffled
    F, nF = s["F"], s["nF"]
    P = qp.P.tocsc()
    want = sp.lil_matrix((nF + 1, nF + 1))
    want[:nF, :nF] = P[:, F][F, :]
    assert s["P_FF"].shape == (nF + 1, nF + 1)
    assert abs(s["P_FF"] - want.tocsr()).max() == 0
    assert np.array_equal(s["P_FF_diag"], want.diagonal())


def _permuted(qp: QP, perm: np.ndarray) -> QP:
    """``qp`` with its variables reordered: new variable ``v`` is old ``perm[v]``."""
    inv = np.empty_like(perm)
    inv[perm] = np.arange(len(perm))
    P = qp.P.tocsc()[perm][:, perm].tocsc()
    return QP(P=P, q=qp.q[perm], A=qp.A.tocsc()[:, perm].tocsc(), l=qp.l, u=qp.u, r=qp.r,
              eliminable=np.sort(inv[qp.eliminable]), x_bound=qp.x_bound)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("weighted", [False, True])
def test_an_eliminable_block_that_is_not_a_range_gives_the_same_fit(seed, weighted,
                                                                      monkeypatch):
    """The Schur operator takes slices when the eliminable variables are a
    range (the items); with the variables shuffled it takes the general
    gathers, and the fit is the same point, certified."""
    design, qp = _qp(seed, weighted)
    perm = np.random.default_rng(seed).permutation(qp.n)
    shuffled = _permuted(qp, perm)
    assert np.any(np.diff(shuffled.eliminable) != 1)
    built = []
    schur_operator = native_pcg._schur_operator
    monkeypatch.setattr(native_pcg, "_schur_operator",
                        lambda *a, **k: built.append(schur_operator(*a, **k)) or built[-1])
    x0 = initial_point(design, np.zeros(design.K), np.zeros(design.J), "all")
    settings = SolveSettings(options={"path": "pcg"})
    plain = native.solve(qp, settings, x0=x0, cache={},
                         complete=partial(centre_free_aux, design, "all"))
    n_plain = len(built)
    centre = partial(centre_free_aux, design, "all")

    def complete(x, y):          # centre_free_aux on the original order
        inv = np.empty_like(perm)
        inv[perm] = np.arange(len(perm))
        out = np.empty_like(x)
        out[inv] = centre(x[inv], y)
        return out

    other = native.solve(shuffled, settings, x0=x0[perm], cache={}, complete=complete)
    assert plain.ok and other.ok and n_plain > 0 and len(built) > n_plain
    assert all(op is not None for op in built)          # the Schur path ran both times
    assert qp_certificate(shuffled, other.x, other.y).passed
    np.testing.assert_allclose(other.x, plain.x[perm], rtol=0, atol=1e-9)
    obj = [qp.objective(plain.x), shuffled.objective(other.x)]
    assert obj[1] == pytest.approx(obj[0], rel=1e-12, abs=1e-12)
