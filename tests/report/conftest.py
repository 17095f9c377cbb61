"""The pages of every verb with ``--html``, made once per session by the CLI on small inputs
(the shipped demo matrix, the MT-Bench judges of paper 003, a simulated Rasch response file,
a quick ILP benchmark, simulated 0/1 results of 8 models and a simulated battle log), each
beside the JSON of the same run."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalcert.datasets.battles import simulate_battles
from evalcert.datasets.demo import demo_scores
from tests._cli import run_cli

MTBENCH = Path(__file__).resolve().parents[2] / "evalcert" / "datasets" / "mtbench_table1.csv"


@dataclass
class Run:
    """One CLI run: its page, its JSON, the command line and what it printed."""

    name: str
    html: Path
    json: Path | None
    argv: list[str]
    stdout: str
    stderr: str

    @property
    def text(self) -> str:
        return self.html.read_text(encoding="utf-8")


def _inputs(folder: Path) -> dict[str, Path]:
    scores = folder / "demo.csv"
    demo_scores().to_frame().to_csv(scores, index_label="agent")
    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=50), rng.normal(size=30)
    Y = (rng.random((50, 30)) < 1 / (1 + np.exp(b - theta[:, None]))).astype(int)
    responses = folder / "responses.csv"
    pd.DataFrame(Y, index=[f"model_{i}" for i in range(50)],
                 columns=[f"item_{j}" for j in range(30)]).to_csv(responses, index_label="model")
    results = folder / "results.csv"
    p = rng.uniform(0.3, 0.9, (8, 1))
    pd.DataFrame((rng.random((8, 300)) < p).astype(int), index=[f"m{i}" for i in range(8)],
                 columns=[f"q{j}" for j in range(300)]).to_csv(results, index_label="model")
    rng_b = np.random.default_rng(1)              # three judges of a two-label test
    truth = rng_b.integers(0, 2, 60)
    binary = folder / "binary.csv"
    pd.DataFrame([(f"q{i}", g, "ab"[t if rng_b.random() < acc else 1 - t])
                  for g, acc in (("strong", 0.92), ("middle", 0.8), ("weak", 0.65))
                  for i, t in enumerate(truth)],
                 columns=["item", "grader", "label"]).to_csv(binary, index=False)
    battles = folder / "battles.csv"
    log, _ = simulate_battles(n_models=14, n_battles=6000, seed=0)
    log.loc[:4, "model_b"] = log.loc[:4, "model_a"]          # 5 self-battles: not counted
    log.to_csv(battles, index=False)
    return {"scores": scores, "responses": responses, "results": results, "battles": battles,
            "binary": binary}


@pytest.fixture(scope="session")
def pages(tmp_path_factory) -> dict[str, Run]:
    folder = tmp_path_factory.mktemp("pages")
    files = _inputs(folder)
    runs = {
        "fit": ["fit", str(files["scores"]), "--json", "{json}", "--html", "{html}"],
        "audit": ["audit", str(MTBENCH), "--graders", "authors,gpt4", "--m", "2",
                  "--bounds", "--json", "{json}", "--html", "{html}"],
        "audit-views": ["audit", str(files["binary"]), "--labels", "a,b", "--threshold",
                        "0.6", "--plot-per-label", "--pspace", "--json", "{json}",
                        "--html", "{html}"],
        "irt": ["irt", "fit", str(files["responses"]), "--model", "rasch", "--method", "mml",
                "--json", "{json}", "--html", "{html}"],
        "curl": ["curl", str(files["scores"]), "--rectangles", "5000", "--boot", "10",
                 "--json", "{json}", "--html", "{html}"],
        "bench": ["bench", "--family", "ilp-m1", "--backends", "pulp-highs", "--quick",
                  "--profile", "default", "--jobs", "1", "--no-memory",
                  "--out", str(folder / "bench"), "--html", "{html}"],
        "compare": ["compare", str(files["results"]), "--boot", "200", "--n-jobs", "1",
                    "--no-progress", "--json", "{json}", "--html", "{html}"],
        "rank": ["rank", str(files["battles"]), "--bootstrap", "50", "--n-jobs", "1",
                 "--no-progress", "--json", "{json}", "--html", "{html}"],
        "cat": ["irt", "cat", str(files["responses"]), "--model", "rasch", "--method", "mml",
                "--max-items", "12", "--holdout", "0.3", "--json", "{json}",
                "--html", "{html}"],
    }
    out = {}
    for name, template in runs.items():
        html, json = folder / f"{name}.html", folder / f"{name}.json"
        argv = [a.format(html=html, json=json) for a in template]
        status, stdout, stderr = run_cli(argv, seconds=300)
        assert status == 0, f"evalcert {shlex.join(argv)} failed:\n{stderr}"
        out[name] = Run(name, html, json if "{json}" in template else None, argv, stdout,
                        stderr)
    return out
