"""Empirical-histogram latent density: today's EM on the masses, the exact mass step, mirt.

Issue 26 (the histogram density was 7.6x slower than mirt's). A pure-ML 2PL
with ``density="histogram"`` on the bimodal 2000 x 20 data of
``bench_irt_models.simulate_bimodal``, each run in a forked child
(``bench_irt.run_in_child``, best of ``--repeat``):

- ``evalcert, exact mass step``: ``TwoPL(slope_prior=0, density="histogram")``
  as the library runs it (``threepl.py``'s loop: ten L-BFGS-B steps on the items,
  then the masses that maximise the marginal likelihood with the items fixed,
  :meth:`~evalcert.irt.density.Histogram.maximise`, until a cycle gains < 1e-6 per
  model).
- ``evalcert, EM on the masses``: the same loop with the mass step replaced (by
  patching) by one EM step of the masses, :meth:`~evalcert.irt.density.Histogram.update`:
  what the library did before (332 cycles, ~1 log-lik short of the optimum).
- ``mirt (PyPI) empirical``: ``EMEstimator(latent_density="empirical")`` on its
  2PL (21 nodes, masses not standardised: a different model, N - 1 parameters).

Columns: CPU seconds, ratio to mirt's CPU, log-likelihood, item/mass cycles.
Then the two halves of a cycle (``irt_kernels.histogram_kernels``; best of 5, wall,
in this process): the items' log-likelihood with its gradient over the cells x 61
nodes, and the mass step over models x nodes, each against one ``exp`` and one
``log`` pass over its cells x nodes measured in the same run.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_histogram.py --peers DIR``.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from bench_irt import child_arguments, load_line, run_in_child  # noqa: E402
from bench_irt_models import density_runners, simulate_bimodal  # noqa: E402
from irt_kernels import KERNEL_HEADERS, histogram_kernels, kernel_row  # noqa: E402

from evalcert.results import format_table  # noqa: E402

HEADERS = ["data", "runner", "CPU s", "CPU vs mirt", "loglik", "cycles", "status"]


def _evalcert(exact: bool):
    def run(Y):
        from evalcert.irt import TwoPL
        from evalcert.irt.density import Histogram

        cycles = [0]
        maximise = Histogram.maximise

        def step(self, z, post):                 # the library's mass step, counted
            cycles[0] += 1
            return maximise(self, z, post) if exact else self.update(z, post.sum(0))
        Histogram.maximise = step
        try:
            est = TwoPL(slope_prior=0, density="histogram", standard_errors=False)
            est._on_grid = True
            est.fit(Y)
        finally:
            Histogram.maximise = maximise
        return np.array([est.loglik_, cycles[0]])
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    child_arguments(parser, repeat=2, timeout=300.0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    load = os.getloadavg()
    Y = simulate_bimodal()
    runs = {"evalcert, EM on the masses": _evalcert(False),
            "evalcert, exact mass step": _evalcert(True),
            "mirt (PyPI) empirical": density_runners()["mirt (PyPI) histogram"][0]}
    rows = []
    for name, run in runs.items():
        status, _, out, _, cpu = run_in_child(run, Y, args.repeat, args.timeout, args.peers)
        ok = status == "ok"
        rows.append(["2000x20 bimodal", name, cpu, np.nan, out[0] if ok else np.nan,
                     out[1] if ok and name.startswith("evalcert") else np.nan, status])
        print(f"histogram {name:30s} {status}", file=sys.stderr, flush=True)
    for row in rows:
        row[3] = row[2] / rows[-1][2]
    print(format_table([tuple(r) for r in rows], HEADERS))
    print("\n" + format_table([kernel_row("2000x20 bimodal", measured)
                               for measured in histogram_kernels(Y)], KERNEL_HEADERS))
    print("\n" + load_line(load))


if __name__ == "__main__":
    main()
