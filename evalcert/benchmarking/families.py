"""Problem families of the solver benchmark, each generated from explicit seeds.

Two kinds of problem:

* :class:`QPProblem` -- the clipped-linear fit (Eq. 7 of the identity-link IRT
  paper, :mod:`evalcert.solvers.clipped_linear_qp`) on a score matrix, with the
  box on all cells or on observed cells. ``weights`` turns it into a *batch*:
  many refits of one design with bootstrap multiplicities, solved one after
  the other as :class:`~evalcert.solvers.ClippedLinear` does (warm starts,
  one CVXPY compilation).
* :class:`StandardQP` -- any QP already in standard form; here the hard Gini
  projection (Prop. 4.1 of the identity-link paper) as
  :func:`~evalcert.solvers.gini_projection.rectangle_qp`: ``min 1/2 ||s||^2``
  over all cells with ``s = t`` on observed cells, the basis rectangles of
  Lemma F.1 and ``|s| <= 1``. Its equality rows are redundant on a connected
  design (they fix ``s``), a degenerate QP that tests the solvers' numerics.
* :class:`IlpProblem` -- the per-key logic ILP of paper 003 (best achievable
  minimum label accuracy at a fixed answer key) under the M=1 axioms
  (:func:`evalcert.logic.ilp.best_min_accuracy_ilp`) or the M=2 pair axioms
  (:func:`evalcert.logic.pairs.m2_best_min_accuracy`). Its exact answer under M=1
  is the closed form :func:`evalcert.logic.alarms.key_value`, which also bounds the
  M=2 answer from above.

Families (names used by :func:`make_problems` and ``evalcert bench --family``):

``clipped-linear``  synthetic matrices: box all/observed x dense (every cell
                    observed)/sparse (30 %) x saturated (scores pile up at
                    +-1, the box binds)/interior (box inactive), several sizes
                    and seeds;
``real``            the PubMed, OPUS and ICLR peer-prediction matrices from a data
                    folder (``evalcert bench --data-dir``; by default the source
                    checkout's ``../shared/data``), both boxes. With no matrices
                    found it runs nothing and says so (:func:`real_family_note`);
``bootstrap``       batches of multinomial-bootstrap refits of one matrix;
``gini-hard``       rectangle QPs of additive scores on a sparse design;
``sparse``          large sparse designs (1-5 % of the cells observed, growing sizes):
                    how each backend's time grows with the observed cells;
``ilp-m1``, ``ilp-m2``  random graders' decisions at the true answer key.

The *penalised* Gini projection (end of App. F.4) is Eq. 7 with the box on all
cells, halved, with ridge ``2 lam`` (``gini_projection(S, penalised=True)``
calls :class:`~evalcert.solvers.ClippedLinear`): the same QP as the
``clipped-linear``/``real`` problems with ``box="all"``, so it has no family of
its own; read those rows.

Example
-------
>>> [p.name for p in clipped_linear_family([(4, 6)], seeds=[0])][:2]
['cl-all-dense-saturated-4x6-s0', 'cl-all-dense-interior-4x6-s0']
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from pathlib import Path
from typing import ClassVar, Sequence

import numpy as np

from evalcert.data import ScoreMatrix
from evalcert.io.scores import read_scores
from evalcert.errors import InputError
from evalcert.logic.alarms import key_value
from evalcert.logic.summaries import Decisions
from evalcert.solvers.certificates import QP
from evalcert.solvers.clipped_linear_qp import Design, build_qp

__all__ = ["QPProblem", "StandardQP", "IlpProblem", "FAMILIES", "REAL_MATRICES", "synthetic_scores",
           "clipped_linear_family", "real_family", "bootstrap_family", "gini_hard_family",
           "ilp_family", "sparse_family", "real_family_note", "box_radius",
           "make_problems", "default_data_dir"]

FAMILIES = ("clipped-linear", "real", "bootstrap", "gini-hard", "sparse", "ilp-m1", "ilp-m2")
REAL_MATRICES = {"pubmed": "pubmed_200_S_directional.csv",
                 "opus": "opus_gpt4omini_186_S_directional.csv",
                 "iclr": "iclr_peer_review_100_S_directional.csv"}
LAM = 1e-6  # the paper's ridge weight, ClippedLinear's default
COVERAGE = {"dense": 1.0, "sparse": 0.3}
SPREAD = {"saturated": 0.8, "interior": 0.15}  # std of theta and b


@dataclasses.dataclass(frozen=True, eq=False)
class QPProblem:
    """A clipped-linear fit, or a batch of refits of one design.

    Attributes
    ----------
    family, name : str
    values : ndarray, shape (K, J)
        Scores in [-1, 1], NaN = unobserved.
    box : {"all", "observed"}
    lam : float
    weights : tuple of ndarray, optional
        Per-refit multiplicities of the observed cells (row-major); ``None``
        means one plain fit (all weights 1).

    Examples
    --------
    >>> values = np.array([[0.5, np.nan], [0.1, -0.2]])
    >>> problem = QPProblem("demo", "demo-2x2", values, box="all")
    >>> problem.size, problem.weighted, problem.design().n_cells
    ('2x2, 3 cells', False, 3)
    >>> qp = problem.qp(problem.batch()[0])
    >>> qp.n, qp.x_bound  # theta (2), b (2), two box auxiliaries; R = 2 for box="all"
    (6, 2.0)
    """

    kind: ClassVar[str] = "qp"
    family: str
    name: str
    values: np.ndarray = dataclasses.field(repr=False)
    box: str = "all"
    lam: float = LAM
    weights: tuple[np.ndarray, ...] | None = dataclasses.field(default=None, repr=False)

    @property
    def weighted(self) -> bool:
        return self.weights is not None

    def design(self) -> Design:
        return Design.from_mask(~np.isnan(self.values))

    def scores(self) -> np.ndarray:
        return self.values[~np.isnan(self.values)]

    def batch(self) -> list[np.ndarray]:
        """The cell weights of every solve, in order."""
        if self.weights is None:
            return [np.ones(int((~np.isnan(self.values)).sum()))]
        return list(self.weights)

    def qp(self, weights: np.ndarray, design: Design | None = None) -> QP:
        """The standard-form QP of one solve of the batch, with the radius
        (:func:`box_radius`) that makes its certificates' suboptimality bound rigorous."""
        qp = build_qp(design or self.design(), self.scores(), weights, self.lam, self.box)
        return dataclasses.replace(qp, x_bound=box_radius(*self.values.shape, self.box))

    @property
    def size(self) -> str:
        K, J = self.values.shape
        n = len(self.batch())
        return f"{K}x{J}, {int((~np.isnan(self.values)).sum())} cells" + \
            (f", {n} refits" if self.weighted else "")


@dataclasses.dataclass(frozen=True, eq=False)
class StandardQP:
    """A QP given directly in standard form (one solve; no problem structure to exploit).

    Attributes
    ----------
    family, name : str
    data : QP
    shape : tuple of int
        The score-matrix shape it came from (for the report).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> qp = QP(P=sp.eye(1, format="csc"), q=np.array([-2.0]), A=sp.eye(1, format="csc"),
    ...         l=np.array([-1.0]), u=np.array([1.0]))
    >>> problem = StandardQP("demo", "demo-qp", qp, (1, 1))
    >>> problem.size, problem.qp() is qp, problem.batch()
    ('1x1, n=1, m=1', True, [None])
    """

    kind: ClassVar[str] = "qp"
    family: str
    name: str
    data: QP = dataclasses.field(repr=False)
    shape: tuple[int, int] = (0, 0)

    def design(self) -> None:
        return None

    def batch(self) -> list[None]:
        return [None]

    def qp(self, weights: None = None, design: None = None) -> QP:
        return self.data

    @property
    def size(self) -> str:
        return f"{self.shape[0]}x{self.shape[1]}, n={self.data.n}, m={self.data.m}"


@dataclasses.dataclass(frozen=True, eq=False)
class IlpProblem:
    """Best achievable minimum label accuracy at ``key`` under the M=1 or M=2 axioms.

    Attributes
    ----------
    family, name : str
    decisions : Decisions
    key : tuple of int
        Answer-key label counts.
    m : {1, 2}
    floor : Fraction, optional
        The minimum label accuracy of the evaluation that generated the data.
        That evaluation satisfies every axiom at ``key``, so the best
        achievable value is at least this (a lower bound for M=1 and M=2).

    Examples
    --------
    >>> problem = ilp_family(1, [8], [0])[0]
    >>> problem.name, problem.size
    ('ilp-m1-Q8-s0', '8 items, 3 graders, 3 labels')
    >>> problem.floor <= problem.bound()  # the generating evaluation is a witness
    True
    """

    kind: ClassVar[str] = "ilp"
    family: str
    name: str
    decisions: Decisions = dataclasses.field(repr=False)
    key: tuple[int, ...] = ()
    m: int = 1
    floor: Fraction | None = None

    def bound(self) -> Fraction:
        """Closed-form M=1 value at ``key``: exact for M=1, an upper bound for M=2."""
        return key_value(self.decisions.label_counts(), self.key)

    @property
    def size(self) -> str:
        return (f"{len(self.decisions.items)} items, {len(self.decisions.graders)} graders, "
                f"{len(self.decisions.labels)} labels")


def box_radius(K: int, J: int, box: str) -> float | None:
    """A radius ``R`` with ``||x*||_inf <= R`` for some optimum of Eq. 7 on a connected
    K x J design with the box ``|theta_i - b_j| <= 1`` (``QP.x_bound``).

    ``box="all"``: averaging ``theta_i - b_j`` over ``j`` with ``sum b = 0`` gives
    ``|theta_i| <= 1``, hence ``|b_j| <= 2``, and the auxiliaries may sit at
    ``max theta`` and ``min theta``: ``R = 2``. ``box="observed"``: two items are
    joined by a path of at most ``2 min(K, J)`` observed cells, each moving
    ``theta - b`` by at most 1, so ``|b_j| <= 2 min(K, J)`` and ``R = 2 min(K, J) + 1``.
    ``box="none"``: no radius from the constraints (``None``).

    Examples
    --------
    >>> box_radius(3, 5, "all"), box_radius(3, 5, "observed"), box_radius(3, 5, "none")
    (2.0, 7.0, None)
    """
    return {"all": 2.0, "observed": 2.0 * min(K, J) + 1.0}.get(box)


def synthetic_scores(K: int, J: int, coverage: float, spread: float,
                     rng: np.random.Generator) -> np.ndarray:
    """Scores ``clip(theta_i - b_j + N(0, 0.1^2), -1, 1)`` on a random mask.

    ``theta`` and ``b`` are ``N(0, spread^2)``; a large spread saturates many
    cells at +-1 so that the box binds. The mask keeps each cell with
    probability ``coverage`` plus one cell per row and per column (a connected
    cycle ``(i, i mod J)``, ``(j mod K, j)``), so no agent or item is empty.

    Examples
    --------
    >>> values = synthetic_scores(3, 4, 0.5, 0.8, np.random.default_rng(0))
    >>> observed = ~np.isnan(values)
    >>> values.shape, bool(observed.any(1).all() and observed.any(0).all())
    ((3, 4), True)
    >>> bool(np.nanmax(np.abs(values)) <= 1.0)
    True
    """
    theta = rng.normal(0.0, spread, K)
    b = rng.normal(0.0, spread, J)
    S = np.clip(theta[:, None] - b[None, :] + rng.normal(0.0, 0.1, (K, J)), -1.0, 1.0)
    mask = rng.random((K, J)) < coverage
    mask[np.arange(K), np.arange(K) % J] = True
    mask[np.arange(J) % K, np.arange(J)] = True
    return np.where(mask, S, np.nan)


def clipped_linear_family(sizes: Sequence[tuple[int, int]], seeds: Sequence[int],
                          boxes: Sequence[str] = ("all", "observed"),
                          regimes: Sequence[str] = tuple(SPREAD)) -> list[QPProblem]:
    """Every box x density x regime x size x seed combination.

    Examples
    --------
    >>> problems = clipped_linear_family([(4, 6)], seeds=[0])
    >>> len(problems), problems[-1].name  # 2 boxes x 2 densities x 2 regimes
    (8, 'cl-observed-sparse-interior-4x6-s0')
    """
    out = []
    for (K, J) in sizes:
        for seed in seeds:
            for box in boxes:
                for dens, cov in COVERAGE.items():
                    for regime, spread in ((r, SPREAD[r]) for r in regimes):
                        rng = np.random.default_rng([seed, K, J, int(cov * 100),
                                                     int(spread * 100)])
                        out.append(QPProblem(
                            "clipped-linear", f"cl-{box}-{dens}-{regime}-{K}x{J}-s{seed}",
                            synthetic_scores(K, J, cov, spread, rng), box=box))
    return out


def default_data_dir() -> Path:
    """``<repo root>/../shared/data/tvd/llm-peer-prediction/derived``.

    Examples
    --------
    >>> default_data_dir().parts[-3:]  # the folder may be absent
    ('tvd', 'llm-peer-prediction', 'derived')
    """
    return (Path(__file__).resolve().parents[2].parent / "shared" / "data" / "tvd"
            / "llm-peer-prediction" / "derived")


def real_family(data_dir: Path | None = None, boxes: Sequence[str] = ("all", "observed"),
                names: Sequence[str] = tuple(REAL_MATRICES)) -> list[QPProblem]:
    """The real peer-prediction matrices ``names`` present in ``data_dir`` (none if absent).

    Examples
    --------
    A stand-in for the ICLR matrix, written to a temporary folder:

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / REAL_MATRICES["iclr"]
    ...     _ = path.write_text("agent,q1,q2\\na,0.5,-0.2\\nb,,0.1\\n")
    ...     problems = real_family(Path(tmp), names=["iclr"])
    ...     empty = real_family(Path(tmp), names=["pubmed"])
    >>> [p.name for p in problems], problems[0].size, empty
    (['real-iclr-all', 'real-iclr-observed'], '2x2, 3 cells', [])
    """
    folder = default_data_dir() if data_dir is None else Path(data_dir)
    out = []
    for short, file in ((n, REAL_MATRICES[n]) for n in names):
        if (folder / file).is_file():
            values = read_scores(folder / file).values
            out += [QPProblem("real", f"real-{short}-{box}", values, box=box) for box in boxes]
    return out


def real_family_note(data_dir: Path | None = None) -> str:
    """Empty when the real matrices are found, else one line saying where
    evalcert looked and how to point it at the data. An explicit ``data_dir``
    that is missing or holds none of them is an error, not a note.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / REAL_MATRICES["iclr"]).write_text("agent,q1\\na,0.5\\n")
    ...     real_family_note(Path(tmp))  # found: no note
    ''
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     real_family_note(Path(tmp))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: --data-dir ...: the real family found none of ...
    """
    folder = default_data_dir() if data_dir is None else Path(data_dir)
    found = [f for f in REAL_MATRICES.values() if (folder / f).is_file()]
    if found:
        return ""
    message = (f"the real family found none of {', '.join(REAL_MATRICES.values())} in "
               f"{folder}")
    if data_dir is not None:
        raise InputError(f"--data-dir {data_dir}: {message}; point it at the folder that holds "
                         "them")
    return f"{message}: it ran 0 problems; pass --data-dir FOLDER to include it"


def sparse_family(specs: Sequence[tuple[int, int, float]], seeds: Sequence[int],
                  boxes: Sequence[str] = ("all", "observed")) -> list[QPProblem]:
    """Large sparse designs ``(K, J, coverage)``: saturated scores on a random
    mask (plus the connecting cycle of :func:`synthetic_scores`), so each
    backend's time can be read against the number of observed cells.

    Examples
    --------
    >>> problems = sparse_family([(10, 40, 0.05)], seeds=[0])
    >>> [p.box for p in problems], problems[0].family, problems[0].design().n_cells > 40
    (['all', 'observed'], 'sparse', True)
    """
    out = []
    for (K, J, cov) in specs:
        for seed in seeds:
            values = synthetic_scores(K, J, cov, SPREAD["saturated"],
                                      np.random.default_rng([seed, K, J, int(cov * 1e4)]))
            cells = int((~np.isnan(values)).sum())
            out += [QPProblem("sparse", f"sparse-{box}-{K}x{J}-{cells}c-s{seed}", values, box=box)
                    for box in boxes]
    return out


def bootstrap_family(sizes: Sequence[tuple[int, int]], n_refits: int, seeds: Sequence[int],
                     boxes: Sequence[str] = ("all", "observed")) -> list[QPProblem]:
    """Batches of ``n_refits`` multinomial-bootstrap refits of one sparse matrix each.

    Examples
    --------
    >>> problems = bootstrap_family([(4, 6)], n_refits=2, seeds=[0])
    >>> [p.name for p in problems]
    ['boot-all-4x6-B2-s0', 'boot-observed-4x6-B2-s0']
    >>> batch = problems[0].batch()
    >>> len(batch), all(w.sum() == len(w) for w in batch)  # multinomial: n draws of n cells
    (2, True)
    """
    out = []
    for (K, J) in sizes:
        for seed in seeds:
            rng = np.random.default_rng([seed, K, J, n_refits])
            values = synthetic_scores(K, J, COVERAGE["sparse"], SPREAD["saturated"], rng)
            n = int((~np.isnan(values)).sum())
            weights = tuple(rng.multinomial(n, np.full(n, 1.0 / n)).astype(float)
                            for _ in range(n_refits))
            out += [QPProblem("bootstrap", f"boot-{box}-{K}x{J}-B{n_refits}-s{seed}", values,
                              box=box, weights=weights) for box in boxes]
    return out


def gini_hard_family(sizes: Sequence[tuple[int, int]], seeds: Sequence[int]) -> list[StandardQP]:
    """Rectangle QPs (hard Gini projection) of exactly additive scores in the box.

    ``t_ij = theta_i - b_j`` with ``theta, b ~ U(-1/2, 1/2)`` (so every
    completion lies in ``[-1, 1]``), observed on the sparse masks of
    :func:`synthetic_scores`.

    Examples
    --------
    >>> problem = gini_hard_family([(4, 6)], seeds=[0])[0]
    >>> problem.name, problem.size  # 24 cells; rows: observed + 15 rectangles + 24 box
    ('gini-hard-4x6-s0', '4x6, n=24, m=46')
    """
    from evalcert.solvers.gini_projection import rectangle_qp

    out = []
    for (K, J) in sizes:
        for seed in seeds:
            rng = np.random.default_rng([seed, K, J, 4])
            mask = ~np.isnan(synthetic_scores(K, J, COVERAGE["sparse"], 0.0, rng))
            t = np.subtract.outer(rng.uniform(-0.5, 0.5, K), rng.uniform(-0.5, 0.5, J))
            S = ScoreMatrix.from_array(np.where(mask, t, np.nan))
            out.append(StandardQP("gini-hard", f"gini-hard-{K}x{J}-s{seed}", rectangle_qp(S),
                                  (K, J)))
    return out


def _random_decisions(n_items: int, n_labels: int, n_graders: int, rng: np.random.Generator
                      ) -> tuple[Decisions, tuple[int, ...], Fraction]:
    """Graders right with probability U(0.55, 0.9), else a uniform other label.

    Returns the decisions, the true answer-key label counts and the true
    evaluation's minimum label accuracy over graders (a witness of the axioms).
    """
    truth = rng.integers(0, n_labels, n_items)
    codes = np.empty((n_items, n_graders), dtype=np.int64)
    for i in range(n_graders):
        right = rng.random(n_items) < rng.uniform(0.55, 0.9)
        other = (truth + rng.integers(1, n_labels, n_items)) % n_labels
        codes[:, i] = np.where(right, truth, other)
    dec = Decisions(tuple(f"q{k}" for k in range(n_items)),
                    tuple(f"g{i}" for i in range(n_graders)),
                    tuple(f"l{r}" for r in range(n_labels)),
                    tuple(tuple(int(v) for v in row) for row in codes))
    key = np.bincount(truth, minlength=n_labels)
    floor = min(Fraction(int(np.sum((truth == l) & (codes[:, i] == l))), int(key[l]))
                for i in range(n_graders) for l in range(n_labels) if key[l] > 0)
    return dec, tuple(int(v) for v in key), floor


def ilp_family(m: int, n_items: Sequence[int], seeds: Sequence[int], n_labels: int = 3,
               n_graders: int = 3) -> list[IlpProblem]:
    """Per-key ILPs at the true answer key of random decisions.

    Examples
    --------
    >>> [p.name for p in ilp_family(2, [8, 20], seeds=[0])]
    ['ilp-m2-Q8-s0', 'ilp-m2-Q20-s0']
    """
    out = []
    for q in n_items:
        for seed in seeds:
            dec, key, floor = _random_decisions(q, n_labels, n_graders,
                                                np.random.default_rng([seed, m, q]))
            out.append(IlpProblem(f"ilp-m{m}", f"ilp-m{m}-Q{q}-s{seed}", dec, key, m, floor))
    return out


#: Sizes and seeds of each family. ``quick`` (one seed, small sizes, the
#: saturated regime only, the smallest real matrix; 13 QPs with the real data
#: and 4 ILPs) finishes in about a minute of CPU time with the 12 backends
#: installed here; ``full`` takes the time stated in the module docstring of
#: :mod:`evalcert.benchmarking.runner`.
SCALES = {
    "quick": {"sizes": [(20, 120)], "seeds": [0], "regimes": ["saturated"],
              "real": ["iclr"], "boot_sizes": [(10, 50)], "refits": 3,
              "gini_sizes": [(10, 50)], "sparse": [(30, 300, 0.05), (60, 600, 0.03)],
              "ilp_items": [20, 60], "ilp_seeds": [0]},
    "full": {"sizes": [(10, 50), (30, 200), (100, 1000)], "seeds": [0, 1, 2],
             "regimes": list(SPREAD), "real": list(REAL_MATRICES),
             "boot_sizes": [(30, 200)], "refits": 50,
             "gini_sizes": [(10, 50), (20, 120), (40, 300)],
             "sparse": [(30, 300, 0.05), (60, 600, 0.03), (150, 1500, 0.02),
                        (400, 4000, 0.01), (1000, 10000, 0.005)],
             "ilp_items": [20, 60, 200], "ilp_seeds": [0, 1, 2]},
}


def make_problems(families: Sequence[str] = FAMILIES, scale: str = "quick",
                  data_dir: Path | None = None) -> list[QPProblem | StandardQP | IlpProblem]:
    """All problems of ``families`` at ``scale`` (``"quick"`` or ``"full"``).

    Examples
    --------
    >>> [p.name for p in make_problems(["gini-hard", "ilp-m1"])]
    ['gini-hard-10x50-s0', 'ilp-m1-Q20-s0', 'ilp-m1-Q60-s0']
    """
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        raise InputError(f"unknown problem families {unknown}; choose from {list(FAMILIES)}")
    if scale not in SCALES:
        raise InputError(f"scale must be one of {list(SCALES)}, got {scale!r}")
    c = SCALES[scale]
    makers = {
        "clipped-linear": lambda: clipped_linear_family(c["sizes"], c["seeds"],
                                                        regimes=c["regimes"]),
        "real": lambda: real_family(data_dir, names=c["real"]),
        "bootstrap": lambda: bootstrap_family(c["boot_sizes"], c["refits"], c["seeds"]),
        "gini-hard": lambda: gini_hard_family(c["gini_sizes"], c["seeds"]),
        "sparse": lambda: sparse_family(c["sparse"], [0]),
        "ilp-m1": lambda: ilp_family(1, c["ilp_items"], c["ilp_seeds"]),
        "ilp-m2": lambda: ilp_family(2, c["ilp_items"], c["ilp_seeds"]),
    }
    return [p for fam in families for p in makers[fam]()]
