"""Computerised adaptive testing (CAT): a model's accuracy from a few items chosen one by one.

With a calibrated item bank (Rasch, 2PL or 3PL item parameters frozen from a
fit), a new model answers one item at a time; after each answer its ability
posterior ``pi(theta | y) ~ N(theta; mu, sd^2) prod_j P_j^y_j Q_j^(1 - y_j)`` is
updated on a fixed grid (one row of item curves added per answer), and the next
item is the one that

* ``mfi``: has the largest Fisher information ``I_j(theta_hat)`` at the current
  estimate (Lord 1980; Fluid Benchmarking, Hofmann et al. 2025);
* ``kl``: has the largest posterior-weighted Kullback-Leibler index
  ``sum_q w_q KL(P_j(theta_hat) || P_j(theta_q))`` (Chang & Ying 1996;
  van der Linden 1998), robust while the estimate is still poor;
* ``astrat``: is closest in difficulty to ``theta_hat`` within the current slope
  stratum: the bank is cut into 4 strata by ascending slope, used in turn, so
  low-slope items are not wasted and high-slope ones not over-exposed
  (a-stratification, Chang & Ying 1999);
* ``random``: is drawn at random (the baseline).

Exposure control: ``randomesque=k`` draws among the ``k`` best items (Kingsbury
& Zara 1989); ``max_exposure=r`` makes an item ineligible once ``r`` of the
models run have seen it (restricted maximum information, Revuelta & Ponsoda
1998; models in a simulation are served in random order at every step).

The ability after each item is the EAP (posterior mean; the grid is refined by
:func:`~.scoring.score_cells` for a model whose posterior is narrower than 1.2
grid spacings) or the MAP (on Rasch/2PL items by Newton from the previous MAP
over the answered items, which two or three passes over them settle to rounding,
with :func:`~.scoring.score_cells` where Newton does not settle; on 3PL items,
whose log posterior need not be concave, by :func:`~.scoring.score_cells`);
``se`` is the posterior sd (EAP) or ``1 / sqrt(I + 1/sd^2)`` (MAP). Testing
stops at ``max_items``, when ``se <= se_stop``, or when the estimate moves less
than ``delta_stop``. The predicted accuracy is the posterior expectation of the
model's accuracy on the whole bank: its answers on the items it took plus
``E[P_j(theta) | y]`` on the others.

:func:`run_cat` tests one model through a callback that returns one item's
score; :func:`simulate_cat` replays held-out models from their response rows
and compares the adaptive error with random item subsets and static anchors
(:mod:`~.anchors`) of the same sizes.

Example
-------
>>> import numpy as np
>>> from evalcert.irt.information import ItemParameters
>>> rng = np.random.default_rng(0)
>>> bank = ItemParameters(rng.lognormal(0, 0.5, 300), rng.normal(size=300), np.zeros(300),
...                       tuple(f"q{j}" for j in range(300)), "2pl")
>>> truth = 1.0
>>> def answer(item):                 # the model under test, one item at a time
...     j = int(item[1:])
...     return float(rng.random() < 1 / (1 + np.exp(-bank.a[j] * (truth - bank.b[j]))))
>>> session = run_cat(bank, answer, max_items=30)
>>> len(session.items), abs(session.theta - truth) < 3 * session.se
(30, True)
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
from scipy.special import expit

from evalcert.errors import InputError
from evalcert.results import PageMixin, ResultMixin, format_table
from evalcert.irt.information import (ItemParameters, ability_prior, icc,
                                              item_information, item_parameters)
from evalcert.irt.scoring import _Cells, score_cells

__all__ = ["CATSession", "CATResult", "run_cat", "simulate_cat", "CAT_SELECTIONS",
           "CAT_UPDATES"]

CAT_SELECTIONS = ("mfi", "kl", "random", "astrat")
CAT_UPDATES = ("eap", "map")
_NODES = 241            # grid nodes on mu +- 6 sd
_NEWTON_STEPS = 30      # MAP updates by Newton: steps before score_cells takes over
_STRATA = 4


def _bank(bank: Any, prior: tuple[float, float] | None) -> tuple[ItemParameters, tuple]:
    """Usable item parameters and the ability prior of a fitted estimator or parameters."""
    if isinstance(bank, ItemParameters):
        params, default = bank, (0.0, 1.0)
    else:
        params, default = item_parameters(bank), ability_prior(bank)
    prior = default if prior is None else (float(prior[0]), float(prior[1]))
    if not (np.isfinite(prior[0]) and np.isfinite(prior[1]) and prior[1] > 0):
        raise InputError(f"prior must be (mean, sd) with finite mean and sd > 0, got {prior}")
    if not params.usable.any():
        raise InputError("the item bank has no item with finite parameters")
    return params, prior


def _check(max_items: int, se_stop: float | None, delta_stop: float | None, selection: str,
           update: str, randomesque: int, max_exposure: float | None) -> None:
    if selection not in CAT_SELECTIONS:
        raise InputError(f"selection must be one of {CAT_SELECTIONS}, got {selection!r}")
    if update not in CAT_UPDATES:
        raise InputError(f"update must be one of {CAT_UPDATES}, got {update!r}")
    if int(max_items) < 1:
        raise InputError(f"max_items must be at least 1, got {max_items}")
    if se_stop is not None and not se_stop > 0:
        raise InputError(f"se_stop must be > 0, got {se_stop}")
    if delta_stop is not None and not delta_stop > 0:
        raise InputError(f"delta_stop must be > 0, got {delta_stop}")
    if int(randomesque) < 1:
        raise InputError(f"randomesque must be at least 1, got {randomesque}")
    if max_exposure is not None and not 0 < max_exposure <= 1:
        raise InputError(f"max_exposure must be in (0, 1], got {max_exposure}")


class _Engine:
    """Lockstep adaptive tests of ``n`` models on one bank (all arrays per model)."""

    def __init__(self, params: ItemParameters, prior: tuple, available: np.ndarray, *,
                 selection: str, update: str, randomesque: int, max_exposure: float | None,
                 rng: np.random.Generator):
        self.p, (self.mu, self.sd) = params, prior
        self.nodes = self.mu + self.sd * np.linspace(-6, 6, _NODES)
        P = np.clip(icc(self.nodes, params), 1e-300, 1 - 1e-16)       # nodes x items
        self.P, self.logP, self.logQ = P, np.log(P), np.log1p(-P)
        n = available.shape[0]
        self.available = available.copy()
        self.logprior = -0.5 * ((self.nodes - self.mu) / self.sd) ** 2
        self.logpost = np.tile(self.logprior, (n, 1))
        self.items: list[list[int]] = [[] for _ in range(n)]
        self.answers: list[list[float]] = [[] for _ in range(n)]
        self.theta, self.se = np.full(n, self.mu), np.full(n, self.sd)
        self.selection, self.update, self.k = selection, update, int(randomesque)
        self.cap = (None if max_exposure is None else max(1, int(np.floor(max_exposure * n))))
        self.count = np.zeros(params.a.size, np.int64)
        self.rng = rng
        order = np.argsort(params.a, kind="stable")
        self.stratum = np.empty(params.a.size, np.int64)
        self.stratum[order] = np.arange(params.a.size) * _STRATA // params.a.size
        # MAP on Rasch/2PL items: each model's answered items as signed slopes s_j a_j and
        # s_j a_j b_j (s = +1 right, -1 wrong), one row per model, filled as items are
        # answered (empty slots 0: no contribution), and the log posterior's slope g and
        # the information I at theta; see _map_newton
        self.newton = update == "map" and not params.c.any()
        self.sa, self.sab = np.zeros((n, 16)), np.zeros((n, 16))
        self.used = np.zeros(n, np.int64)
        self.grad, self.info = np.zeros(n), np.zeros(n)     # g and I at theta (no prior in I)
        self.amax = float(np.max(np.abs(params.a)))
        self.passes = 0         # passes of _map_newton over the answered items (benchmarks)

    def weights(self, idx: np.ndarray) -> np.ndarray:
        L = self.logpost[idx]
        w = np.exp(L - L.max(axis=1, keepdims=True))
        return w / w.sum(axis=1, keepdims=True)

    def select(self, idx: np.ndarray, step: int, max_items: int) -> np.ndarray:
        """The next item of each model ``idx`` (-1 when none is left)."""
        theta = self.theta[idx]
        if self.selection == "mfi":
            score = item_information(theta, self.p)
        elif self.selection == "kl":
            Ph = np.clip(icc(theta, self.p), 1e-300, 1 - 1e-16)
            w = self.weights(idx)
            score = (Ph * np.log(Ph) + (1 - Ph) * np.log1p(-Ph) - Ph * (w @ self.logP)
                     - (1 - Ph) * (w @ self.logQ))
        elif self.selection == "astrat":
            stage = min(_STRATA - 1, step * _STRATA // max_items)
            score = -np.abs(self.p.b[None, :] - theta[:, None]) - 1e6 * (
                self.stratum[None, :] != stage)
        else:
            score = self.rng.random((idx.size, self.p.a.size))
        score = np.where(self.available[idx], score, -np.inf)
        chosen = np.full(idx.size, -1)
        for r in self.rng.permutation(idx.size):
            s = score[r] if self.cap is None else np.where(self.count < self.cap, score[r],
                                                           -np.inf)
            k = min(self.k, int(np.isfinite(s).sum()))
            if k == 0:
                continue
            top = np.argpartition(-s, k - 1)[:k] if k < s.size else np.arange(s.size)
            top = top[np.isfinite(s[top])]
            j = int(top[self.rng.integers(top.size)] if self.k > 1 else top[np.argmax(s[top])])
            chosen[r] = j
            self.count[j] += 1
        return chosen

    def record(self, idx: np.ndarray, items: np.ndarray, y: np.ndarray) -> None:
        """Add one answer per model and update its ability and SE."""
        self.available[idx, items] = False
        self.logpost[idx] += np.where(y[:, None] > 0.5, self.logP[:, items].T,
                                      self.logQ[:, items].T)
        for i, j, v in zip(idx, items, y):
            self.items[i].append(int(j))
            self.answers[i].append(float(v))
        if self.update == "map":
            self.theta[idx], self.se[idx] = (self._map_newton(idx, items, y) if self.newton
                                             else self._exact(idx, "map"))
            return
        w = self.weights(idx)
        m = w @ self.nodes
        s = np.sqrt(np.maximum(w @ self.nodes ** 2 - m ** 2, 0.0))
        h = self.nodes[1] - self.nodes[0]
        coarse = (s < 1.2 * h) | (m - 8 * s < self.nodes[0]) | (m + 8 * s > self.nodes[-1])
        if coarse.any():
            m[coarse], s[coarse] = self._exact(idx[coarse], "eap")
        self.theta[idx], self.se[idx] = m, s

    def _map_newton(self, idx: np.ndarray, items: np.ndarray, y: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        """MAP and its SE after one more answer per model (Rasch/2PL items), by Newton from
        the previous MAP on the answered items only.

        With ``z_j = s_j a_j (theta - b_j)`` (``s_j = 2 y_j - 1``) and ``q_j = 1 / (1 +
        exp(z_j))`` the log posterior's slope is ``g = sum_j s_j a_j q_j - (theta -
        mu) / sd^2`` and its curvature ``-(I + 1/sd^2)``, ``I = sum_j a_j^2 q_j (1 -
        q_j)``: strictly concave (each ``log P_j`` is concave in ``theta``), so ``g = 0``
        has one root, Newton's only fixed point, and ``|theta - theta*| <= |g| sd^2``
        anywhere. The first step, from the previous MAP, adds the new item's terms to
        the ``g`` and ``I`` kept from the previous update; each later step evaluates
        every answered item once. The iteration ends, as :func:`~.scoring._solve` does,
        when the error bound after every model's step, ``max_j |a_j| step^2 / 2`` (the
        third derivative is at most ``max_j |a_j| I``), is below ``1e-13 (1 + |theta|)``
        (a model settled earlier meanwhile moves by ever smaller steps); ``g`` and ``I``
        at the final iterate give the SE ``1 / sqrt(I + 1/sd^2)`` and start the next
        update. Newton need not converge from afar (near-step items can make it cycle):
        a model not settled in ``_NEWTON_STEPS`` steps is scored by
        :func:`~.scoring.score_cells` instead.
        """
        slot = self.used[idx]
        width = int(slot.max()) + 1
        if width > self.sa.shape[1]:
            grow = np.zeros_like(self.sa)
            self.sa, self.sab = np.hstack([self.sa, grow]), np.hstack([self.sab, grow])
        b = self.p.b[items]
        sa = (2 * y - 1) * self.p.a[items]
        self.sa[idx, slot], self.sab[idx, slot] = sa, sa * b
        self.used[idx] = slot + 1
        SA, SAB = self.sa[idx, :width], self.sab[idx, :width]
        SA2 = SA * SA
        prec = 1 / self.sd ** 2
        theta = self.theta[idx]
        q = expit(sa * (b - theta))                             # the new item at theta
        g = self.grad[idx] + sa * q
        info = self.info[idx] + sa * sa * (q - q * q)
        tol = 2e-13 / self.amax
        for _ in range(_NEWTON_STEPS):
            step = g / (info + prec)
            theta = theta + step
            self.passes += 1
            q = expit(SAB - theta[:, None] * SA)
            g = np.einsum("ij,ij->i", SA, q) + (self.mu - theta) * prec
            info = np.einsum("ij,ij->i", SA2, q - q * q)
            done = step * step <= tol * (1 + np.abs(theta))
            if done.all():
                break
        lost = ~done
        if lost.any():
            theta[lost] = self._exact(idx[lost], "map")[0]
            q = expit(SAB[lost] - theta[lost, None] * SA[lost])
            g[lost] = np.einsum("ij,ij->i", SA[lost], q) + (self.mu - theta[lost]) * prec
            info[lost] = np.einsum("ij,ij->i", SA2[lost], q - q * q)
        self.grad[idx], self.info[idx] = g, info
        return theta, 1 / np.sqrt(info + prec)

    def _exact(self, idx: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray]:
        lengths = np.array([len(self.items[i]) for i in idx])
        cells = _Cells(self.p.a.size, indptr=np.concatenate([[0], np.cumsum(lengths)]),
                       cols=np.concatenate([self.items[i] for i in idx]).astype(np.int64),
                       y=np.concatenate([self.answers[i] for i in idx]))
        return score_cells(self.p, cells, method=method, prior=(self.mu, self.sd))

    def accuracy(self, idx: np.ndarray, answerable: np.ndarray) -> np.ndarray:
        """Posterior expected accuracy over the ``answerable`` items of each model."""
        expected = self.weights(idx) @ self.P                              # models x items
        for r, i in enumerate(idx):
            expected[r, self.items[i]] = self.answers[i]
        return np.sum(np.where(answerable[idx], expected, 0.0), 1) / answerable[idx].sum(1)


def _stopped(engine: _Engine, idx: np.ndarray, before: np.ndarray, n_used: int,
             max_items: int, se_stop: float | None, delta_stop: float | None) -> np.ndarray:
    stop = np.full(idx.size, n_used >= max_items)
    if se_stop is not None:
        stop |= engine.se[idx] <= se_stop
    if delta_stop is not None and n_used >= 2:
        stop |= np.abs(engine.theta[idx] - before) < delta_stop
    return stop


@dataclasses.dataclass(frozen=True)
class CATSession(ResultMixin):
    """One model's adaptive test: items given, answers, and the ability after each.

    Examples
    --------
    >>> from evalcert.irt.information import ItemParameters
    >>> bank = ItemParameters(np.ones(20), np.linspace(-2, 2, 20), np.zeros(20),
    ...                       tuple(f"q{j}" for j in range(20)), "rasch")
    >>> s = run_cat(bank, lambda item: 1.0, max_items=5)
    >>> s.items_used, s.stop_reason, bool(s.theta_path[-1] > s.theta_path[0])
    (5, 'max_items', True)
    """

    items: tuple[str, ...]
    answers: np.ndarray
    theta_path: np.ndarray
    se_path: np.ndarray
    theta: float
    se: float
    predicted_accuracy: float
    items_used: int
    stop_reason: str
    selection: str
    update: str

    def summary(self) -> str:
        rows = [(k + 1, self.items[k], self.answers[k], self.theta_path[k], self.se_path[k])
                for k in range(self.items_used)]
        return (f"adaptive test ({self.selection} selection, {self.update.upper()} updates): "
                f"{self.items_used} items, stopped by {self.stop_reason}; ability "
                f"{self.theta:.3f} (se {self.se:.3f}), predicted accuracy on the bank "
                f"{self.predicted_accuracy:.3f}\n"
                + format_table(rows, ["step", "item", "score", "ability", "se"]))


def run_cat(bank: Any, respond: Callable[[str], float], *, max_items: int = 50,
            se_stop: float | None = None, delta_stop: float | None = None,
            selection: str = "mfi", update: str = "eap", randomesque: int = 1,
            prior: tuple[float, float] | None = None, seed: int = 0) -> CATSession:
    """Test one model adaptively, asking ``respond(item_name)`` for one score at a time.

    Parameters
    ----------
    bank : fitted Rasch/TwoPL/ThreePL or :class:`~.information.ItemParameters`
        (e.g. from :func:`evalcert.io.irt_tables.read_item_table`).
    respond : callable
        Returns the model's 0/1 score on the named item (``NaN``: the item cannot
        be given; another is chosen).
    max_items, se_stop, delta_stop : stopping rules (the first met stops).
    selection : {"mfi", "kl", "random", "astrat"}
    update : {"eap", "map"}
    randomesque : draw among this many best items (exposure control; 1 = the best)
    prior : (mean, sd); default the fit's ability distribution (``N(0, 1)`` for parameters)
    seed : random choices (``random``, ``randomesque``)

    Examples
    --------
    >>> from evalcert.irt.information import ItemParameters
    >>> bank = ItemParameters(np.ones(50), np.linspace(-3, 3, 50), np.zeros(50),
    ...                       tuple(f"q{j}" for j in range(50)), "rasch")
    >>> s = run_cat(bank, lambda item: 0.0, se_stop=0.6)   # a model that fails every item
    >>> s.stop_reason, bool(s.theta < -1), bool(s.se <= 0.6)
    ('se_stop', True, True)
    """
    params, prior = _bank(bank, prior)
    _check(max_items, se_stop, delta_stop, selection, update, randomesque, None)
    usable = np.flatnonzero(params.usable)
    p = params.take(usable)
    engine = _Engine(p, prior, np.ones((1, usable.size), bool), selection=selection,
                     update=update, randomesque=randomesque, max_exposure=None,
                     rng=np.random.default_rng(seed))
    one = np.zeros(1, np.int64)
    theta_path, se_path, reason = [], [], "no items left"
    while True:
        j = engine.select(one, len(engine.items[0]), max_items)[0]
        if j < 0:
            break
        value = float(respond(p.item_names[j]))
        if np.isnan(value):
            engine.available[0, j] = False
            continue
        if value not in (0.0, 1.0):
            raise InputError(f"respond({p.item_names[j]!r}) returned {value}; scores must be "
                             "0 or 1 (or NaN when the item cannot be given)")
        before = engine.theta[one].copy()
        engine.record(one, np.array([j]), np.array([value]))
        theta_path.append(engine.theta[0])
        se_path.append(engine.se[0])
        n_used = len(engine.items[0])
        if _stopped(engine, one, before, n_used, max_items, se_stop, delta_stop)[0]:
            reason = ("max_items" if n_used >= max_items else
                      "se_stop" if se_stop is not None and engine.se[0] <= se_stop
                      else "delta_stop")
            break
    acc = engine.accuracy(one, np.ones((1, usable.size), bool))[0]
    return CATSession(items=tuple(p.item_names[j] for j in engine.items[0]),
                      answers=np.array(engine.answers[0]), theta_path=np.array(theta_path),
                      se_path=np.array(se_path), theta=float(engine.theta[0]),
                      se=float(engine.se[0]), predicted_accuracy=float(acc),
                      items_used=len(engine.items[0]), stop_reason=reason,
                      selection=selection, update=update)


@dataclasses.dataclass(frozen=True)
class CATResult(PageMixin, ResultMixin):
    """Adaptive tests replayed on held-out models, with the error curve against baselines.

    ``models``: per model ``{model, items_used, theta, se, predicted_accuracy,
    actual_accuracy}``; ``administered``: each model's items in order; ``curve``: per test length ``{n_items, mae_accuracy,
    mae_random, mae_anchors}`` (mean absolute error of the predicted full-bank
    accuracy: adaptive, random items, static information anchors).

    Examples
    --------
    >>> from evalcert.irt import TwoPL
    >>> rng = np.random.default_rng(0)
    >>> a, b, theta = rng.lognormal(0, 0.5, 200), rng.normal(size=200), rng.normal(size=100)
    >>> Y = (rng.random((100, 200)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))) * 1.0
    >>> res = simulate_cat(TwoPL(method="mml"), Y, holdout=0.2, max_items=10)
    >>> len(res.models), res.curve[-1]["n_items"], sorted(res.models[0])[:3]
    (20, 10, ['actual_accuracy', 'items_used', 'model'])
    """

    models: tuple[dict, ...]
    curve: tuple[dict, ...]
    administered: tuple[tuple[str, ...], ...]
    selection: str
    update: str
    max_items: int
    se_stop: float | None
    delta_stop: float | None
    randomesque: int
    max_exposure: float | None
    item_model: str
    n_items: int
    n_train: int
    prior: tuple[float, float]
    seed: int
    notes: tuple[str, ...] = ()

    def to_frame(self, what: str = "models") -> Any:
        """One table as a DataFrame: ``"models"`` (one row per tested model) or ``"curve"``
        (one row per test length: the errors of adaptive, random and anchor items)."""
        import pandas as pd

        if what not in ("models", "curve"):
            raise ValueError(f"what must be 'models' or 'curve', not {what!r}")
        return pd.DataFrame(list(self.models if what == "models" else self.curve))

    def summary(self) -> str:
        used = np.array([m["items_used"] for m in self.models])
        head = (f"adaptive testing ({self.selection} selection, {self.update.upper()} updates, "
                f"{self.item_model} bank of {self.n_items} items"
                + (f" calibrated on {self.n_train} models" if self.n_train else "")
                + f"): {len(self.models)} models, {used.mean():.1f} items on average "
                f"(max {self.max_items}"
                + (f", se stop {self.se_stop:g}" if self.se_stop else "")
                + (f", change stop {self.delta_stop:g}" if self.delta_stop else "") + ")")
        curve = format_table([(c["n_items"], c["mae_accuracy"], c["mae_random"],
                               c["mae_anchors"]) for c in self.curve],
                             ["items", "MAE adaptive", "MAE random", "MAE anchors"])
        rows = [(m["model"], m["items_used"], m["theta"], m["se"], m["predicted_accuracy"],
                 m["actual_accuracy"]) for m in self.models[:20]]
        return (head + "\n\nmean absolute error of the predicted full-bank accuracy:\n" + curve
                + "\n\n" + format_table(rows, ["model", "items", "ability", "se", "predicted",
                                               "actual"])
                + (f"\n({len(self.models) - 20} more models)" if len(self.models) > 20 else "")
                + "".join(f"\nnote: {n}" for n in self.notes))


def _set_accuracy(engine: _Engine, sets: list[np.ndarray], values: np.ndarray,
                  answerable: np.ndarray) -> np.ndarray:
    """Posterior expected bank accuracy of each model given its answers on a fixed item set."""
    n, J = answerable.shape
    R1, R0 = np.zeros((n, J)), np.zeros((n, J))
    for i, s in enumerate(sets):
        R1[i, s] = values[i, s]
        R0[i, s] = 1 - values[i, s]
    L = engine.logprior[None, :] + R1 @ engine.logP.T + R0 @ engine.logQ.T
    w = np.exp(L - L.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    expected = w @ engine.P
    seen = (R1 + R0) > 0
    expected = np.where(seen, values, expected)
    return np.sum(np.where(answerable, expected, 0.0), 1) / answerable.sum(1)


def simulate_cat(model: Any, Y: Any, *, holdout: float | None = 0.2, max_items: int = 50,
                 se_stop: float | None = None, delta_stop: float | None = None,
                 selection: str = "mfi", update: str = "eap", randomesque: int = 1,
                 max_exposure: float | None = None, prior: tuple[float, float] | None = None,
                 checkpoints: Any = None, seed: int = 0) -> CATResult:
    """Replay adaptive tests on models whose every answer is known, and score the predictions.

    Parameters
    ----------
    model : unfitted Rasch/TwoPL/ThreePL, or a bank
        An unfitted estimator is fitted (a clone) on the models not held out; a
        fitted estimator or :class:`~.information.ItemParameters` is the bank and
        every row of ``Y`` is tested (``holdout=None``; columns matched to the
        bank's items by name when ``Y`` is a DataFrame).
    Y : 0/1 responses, models x items (NaN = missing: never administered)
    holdout : share of models held out and tested (with an unfitted estimator)
    max_items, se_stop, delta_stop, selection, update, randomesque : see :func:`run_cat`
    max_exposure : an item is given to at most this share of the tested models
    prior : ability prior (default: the fit's)
    checkpoints : test lengths of the error curve (default 1, 2, 5, 10, 20, ... max_items)
    seed : the split, random items and random choices

    Returns
    -------
    CATResult

    Examples
    --------
    >>> from evalcert.irt.information import ItemParameters
    >>> rng = np.random.default_rng(1)
    >>> a, b, theta = rng.lognormal(0, 0.5, 300), rng.normal(size=300), rng.normal(size=60)
    >>> Y = (rng.random((60, 300)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))) * 1.0
    >>> bank = ItemParameters(a, b, np.zeros(300), tuple(f"item{j}" for j in range(300)), "2pl")
    >>> res = simulate_cat(bank, Y, holdout=None, max_items=20)
    >>> final = res.curve[-1]
    >>> final["n_items"], bool(final["mae_accuracy"] < final["mae_random"])
    (20, True)
    """
    from evalcert.irt.anchors import information_anchors
    from evalcert.irt.data import validate_responses

    _check(max_items, se_stop, delta_stop, selection, update, randomesque, max_exposure)
    max_items = int(max_items)
    rng = np.random.default_rng(seed)
    frame = Y
    notes: list[str] = []
    fitted = isinstance(model, ItemParameters) or hasattr(model, "result_")
    if fitted:
        if holdout is not None:
            raise InputError("a fitted bank tests every model of Y: pass holdout=None (or an "
                             "unfitted estimator to hold models out)")
        params, prior = _bank(model, prior)
        if hasattr(Y, "columns"):
            unknown = [str(c) for c in Y.columns if str(c) not in set(params.item_names)]
            if unknown:
                raise InputError(f"{len(unknown)} items of the responses are not in the bank, "
                                 f"e.g. {unknown[:5]}; test only bank items")
            frame = Y.set_axis([str(c) for c in Y.columns], axis=1).reindex(
                columns=list(params.item_names))
        data = validate_responses(frame, kind="binary", allow_empty=True)
        if data.shape[1] != params.a.size:
            raise InputError(f"responses have {data.shape[1]} items, the bank {params.a.size}; "
                             "columns must be the bank's items in order")
        test, n_train = np.ones(data.shape[0], bool), 0
        targets_from = None
    else:
        if getattr(model, "model_name", "") not in ("rasch", "2pl", "3pl"):
            raise InputError("adaptive testing needs a rasch, 2pl or 3pl estimator or bank, "
                             f"got {getattr(model, 'model_name', type(model).__name__)!r}")
        if holdout is None or not 0 < holdout < 1:
            raise InputError(f"holdout must be in (0, 1) with an unfitted estimator, got "
                             f"{holdout}")
        data = validate_responses(Y, kind="binary")
        n = data.shape[0]
        n_test = max(1, int(round(holdout * n)))
        if n - n_test < 2:
            raise InputError(f"{n} models leave fewer than 2 to calibrate on with holdout "
                             f"{holdout}; give more models or a smaller holdout")
        test = np.zeros(n, bool)
        test[rng.choice(n, n_test, replace=False)] = True
        train = data.take(~test)
        if not train.observed.any(axis=0).all():
            raise InputError(f"{int((~train.observed.any(axis=0)).sum())} items have no "
                             "response among the calibration models; drop them or change "
                             "the seed")
        fit = model.clone().fit(train.to_frame())  # warnings name the file's items
        params, prior = _bank(fit, prior)
        n_train = int((~test).sum())
        targets_from = np.asarray(fit.abilities_, float)
    usable = params.usable
    if not usable.all():
        notes.append(f"{int((~usable).sum())} bank items without finite parameters are "
                     "never given nor predicted")
    p = params.take(usable)
    values = data.values[test][:, usable]
    answerable = data.observed[test][:, usable]
    names = np.asarray(data.model_names, object)[test]
    keep = answerable.any(axis=1)
    if not keep.all():
        notes.append(f"{int((~keep).sum())} models answered no bank item and are not tested")
        values, answerable, names = values[keep], answerable[keep], names[keep]
    if values.shape[0] == 0:
        raise InputError("no model to test: none answered any item of the bank")
    n = values.shape[0]
    if checkpoints is None:
        checkpoints = [k for k in (1, 2, 5) if k < max_items] + list(
            range(10, max_items, 10)) + [max_items]
    checkpoints = sorted({int(k) for k in checkpoints if 1 <= int(k) <= max_items})
    engine = _Engine(p, prior, answerable, selection=selection, update=update,
                     randomesque=randomesque, max_exposure=max_exposure, rng=rng)
    actual = np.sum(values * answerable, 1) / answerable.sum(1)
    adaptive: dict[int, np.ndarray] = {}
    everyone = np.arange(n)
    active = everyone.copy()
    for step in range(max_items):
        if active.size:
            chosen = engine.select(active, step, max_items)
            active = active[chosen >= 0]
            chosen = chosen[chosen >= 0]
        if active.size:
            before = engine.theta[active].copy()
            engine.record(active, chosen, values[active, chosen])
            active = active[~_stopped(engine, active, before, step + 1, max_items, se_stop,
                                      delta_stop)]
        if step + 1 in checkpoints:
            adaptive[step + 1] = engine.accuracy(everyone, answerable)
    order = [rng.permutation(np.flatnonzero(answerable[i])) for i in range(n)]
    if targets_from is not None:
        targets_from = targets_from[np.isfinite(targets_from)]
    curve = []
    for k in checkpoints:
        random_acc = _set_accuracy(engine, [o[:k] for o in order], values, answerable)
        q = (np.arange(k) + 0.5) / k
        if targets_from is not None and targets_from.size >= 2:
            targets = np.quantile(targets_from, q)
        else:
            from scipy.stats import norm
            targets = norm.ppf(q, prior[0], prior[1])
        anchors = information_anchors(p, targets)
        anchor_acc = _set_accuracy(engine, [anchors[answerable[i, anchors]] for i in range(n)],
                                   values, answerable)
        curve.append({"n_items": k,
                      "mae_accuracy": float(np.mean(np.abs(adaptive[k] - actual))),
                      "mae_random": float(np.mean(np.abs(random_acc - actual))),
                      "mae_anchors": float(np.mean(np.abs(anchor_acc - actual)))})
    predicted = engine.accuracy(everyone, answerable)
    models = tuple({"model": str(names[i]), "items_used": len(engine.items[i]),
                    "theta": float(engine.theta[i]), "se": float(engine.se[i]),
                    "predicted_accuracy": float(predicted[i]),
                    "actual_accuracy": float(actual[i])} for i in range(n))
    return CATResult(models=models, curve=tuple(curve),
                     administered=tuple(tuple(p.item_names[j] for j in engine.items[i])
                                        for i in range(n)),
                     selection=selection, update=update,
                     max_items=max_items, se_stop=se_stop, delta_stop=delta_stop,
                     randomesque=int(randomesque), max_exposure=max_exposure,
                     item_model=params.model, n_items=int(usable.sum()), n_train=n_train,
                     prior=(float(prior[0]), float(prior[1])), seed=seed, notes=tuple(notes))
