"""Sphinx extension: write one example report page per job (``evalcert VERB --html``) into
the built site's ``reports/`` folder, made by the CLI at build time on shipped or simulated
data, so the docs show the pages this release makes.

The commands run in a temporary folder with relative names, so each page's "Reproduce"
block reads as a user would type it.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

#: page name -> the command line after ``evalcert`` (inputs prepared by ``_inputs``)
EXAMPLES = {
    "fit": ["fit", "demo.csv", "--html", "fit.html"],
    "audit": ["audit", "mtbench_table1.csv", "--graders", "authors,gpt4", "--m", "full",
              "--bounds", "--html", "audit.html"],
    "irt": ["irt", "fit", "responses.csv", "--model", "2pl", "--html", "irt.html"],
    "curl": ["curl", "demo.csv", "--boot", "50", "--html", "curl.html"],
    "bench": ["bench", "--family", "ilp-m1", "clipped-linear", "--backends", "native",
              "osqp-direct", "pulp-highs", "--profile", "default", "--quick", "--jobs", "1",
              "--no-memory", "--out", "bench_out", "--html", "bench.html"],
    "compare": ["compare", "demo.csv", "--boot", "500", "--n-jobs", "1", "--no-progress",
                "--html", "compare.html"],
    "rank": ["rank", "battles.csv", "--bootstrap", "200", "--n-jobs", "1", "--no-progress",
             "--html", "rank.html"],
    "cat": ["irt", "cat", "bank_responses.csv", "--model", "2pl", "--max-items", "30",
            "--html", "cat.html"],
}


def _inputs(folder: Path) -> None:
    import numpy as np
    import pandas as pd

    from evalcert.datasets.demo import demo_scores

    demo_scores().to_frame().to_csv(folder / "demo.csv", index_label="agent")
    import evalcert.datasets

    shutil.copy(Path(evalcert.datasets.__file__).parent / "mtbench_table1.csv", folder)
    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=40), rng.normal(size=60)
    a = np.exp(rng.normal(0, 0.3, size=60))
    Y = (rng.random((40, 60)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(int)
    pd.DataFrame(Y, index=[f"model_{i:02d}" for i in range(40)],
                 columns=[f"q{j:02d}" for j in range(60)]).to_csv(folder / "responses.csv",
                                                                  index_label="model")
    theta, b = rng.normal(size=300), rng.normal(size=200)            # a bank to test on
    a = np.exp(rng.normal(0, 0.3, size=200))
    Y = (rng.random((300, 200)) < 1 / (1 + np.exp(-a * (theta[:, None] - b)))).astype(int)
    pd.DataFrame(Y, index=[f"model_{i:03d}" for i in range(300)],
                 columns=[f"q{j:03d}" for j in range(200)]).to_csv(
        folder / "bank_responses.csv", index_label="model")
    from evalcert.datasets.battles import simulate_battles

    simulate_battles(n_models=20, n_battles=20_000, seed=0)[0].to_csv(folder / "battles.csv",
                                                                     index=False)


def write_examples(out: Path) -> list[Path]:
    """Run every example and copy its page into ``out``; return the pages."""
    from evalcert.cli import main

    out.mkdir(parents=True, exist_ok=True)
    pages = []
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _inputs(folder)
        os.chdir(folder)
        try:
            for name, argv in EXAMPLES.items():
                log = io.StringIO()
                with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                    status = main(argv)
                if status != 0:
                    raise RuntimeError(f"evalcert {' '.join(argv)} failed:\n{log.getvalue()}")
                pages.append(Path(shutil.copy(folder / f"{name}.html", out / f"{name}.html")))
        finally:
            os.chdir(here)
    return pages


def _build(app: Any) -> None:
    if app.builder.format == "html":
        write_examples(Path(app.outdir) / "reports")


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _build)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
