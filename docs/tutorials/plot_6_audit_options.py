"""
Audit options, one example each
===============================

A how-to beside :doc:`plot_2_audit_judges`: each option of ``evalcert audit`` added for
the questions a practitioner asks next (which judge is the weak one, what holds for the
population, how to score ordinal or swapped judgments, how long to search) run once on a
small log, through the real command line. Every output below is printed by the command
while this page is built; nothing is pasted.

The logs are written into a temporary folder: Table I of paper 003 (25 MT-Bench
comparisons, two graders, labels ``a``/``b``/``tie``, shipped with evalcert) and small
simulated logs with a fixed seed.
"""

# %%
# Running the command line from a script
# --------------------------------------
# ``run`` calls :func:`evalcert.cli.main` (what the ``evalcert`` program runs) and prints
# what it wrote: the summary (stdout), then the notes and errors (stderr, marked ``!``).
import contextlib
import io
import json
import os
import shlex
import shutil
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

import evalcert.datasets
from evalcert.cli import main

folder = Path(tempfile.mkdtemp())          # the logs; each command runs in this folder
shutil.copy(Path(evalcert.datasets.__file__).parent / "mtbench_table1.csv", folder)


def run(command: str, keep: int = 40) -> int:
    """``evalcert COMMAND`` in ``folder``: print the command, then at most ``keep`` lines
    it wrote."""
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(shlex.split(command))
    finally:
        os.chdir(here)
    print("\n    ".join(textwrap.wrap(f"$ evalcert {command}", 96, break_on_hyphens=False)))
    lines = out.getvalue().splitlines() + [f"! {line}" for line in err.getvalue().splitlines()]
    for line in lines[:keep]:                   # the page shows 100 characters a line
        print(line if len(line) <= 100 else "\n    ".join(textwrap.wrap(line, 96)))
    if len(lines) > keep:
        print(f"[... {len(lines) - keep} more lines]")
    print(f"(exit status {status})")
    return status


_ = run("audit mtbench_table1.csv --graders authors,gpt4 --labels a,b,tie", keep=6)

# %%
# Which judge is the weak one: the per-judge table
# -------------------------------------------------
# ``--judges`` leads with a table per judge: its Dawid-Skene accuracy with a bootstrap
# interval (estimated), its agreement with the others (Cohen's kappa, Krippendorff's alpha
# without it), its exact accuracy range at ``T`` (certain), and a flag: ``weakest``,
# ``degenerate`` (one label on everything) or ``copy`` (a near-copy of another judge).
# Here four simulated judges and a broken one that always answers ``l0``
# (``--judges-csv`` / ``--judges-plot`` write the same table as CSV / a figure).
from evalcert.logic.simulate import simulate_log

panel, truth = simulate_log(200, 3, 4, seed=3, acc_low=0.7, acc_high=0.9)
broken = pd.DataFrame({"item": [f"q{k}" for k in range(200)], "grader": "always_l0",
                       "label": "l0"})
pd.concat([panel, broken]).to_csv(folder / "panel.csv", index=False)
_ = run("audit panel.csv --judges", keep=14)

# %%
# A statement about the population: ``--population``
# ----------------------------------------------------
# ``T`` is exact for these items. ``--population exact`` adds an upper confidence bound on
# the threshold of the population the items were drawn from (finite-sample
# Clopper-Pearson through the M=1 map, conservative), ``--population bootstrap`` an item
# bootstrap refitted under the chosen ``--m``. :doc:`../certificates` says what each
# assumes.
_ = run("audit mtbench_table1.csv --graders authors,gpt4 --labels a,b,tie "
        "--population exact --confidence 0.9", keep=12)
_ = run("audit mtbench_table1.csv --graders authors,gpt4 --labels a,b,tie "
        "--population bootstrap --resamples 100 --seed 1", keep=12)

# %%
# Ties as half-right: ``--ties half``
# -----------------------------------
# On a pairwise ``a``/``b``/``tie`` log a tie against a true ``a`` or ``b`` (or an ``a``
# or ``b`` against a true tie) earns 1/2 instead of 0, exactly, in M=1, M=2 and the full
# joint. ``T`` can only rise.
_ = run("audit mtbench_table1.csv --graders authors,gpt4 --labels a,b,tie --ties half "
        "--no-progress", keep=8)

# %%
# Scores: ``--tolerance`` and ``--bands``
# ----------------------------------------
# Rubric graders give scores (1-5 here, as on a Likert scale; 1-10 works the same way and
# costs more). Declared in order with ``--labels``, ``--tolerance 1`` counts a score within
# one step of the true one as correct; ``--bands`` counts a score in the true score's
# declared band as correct (without ``--labels``, numeric scores are put in numeric order
# and the output says so; word labels must be declared in order). Exact-match ``T`` first.
rng = np.random.default_rng(5)
true_score = rng.integers(1, 6, 80)
rows = [(f"q{k}", f"rubric{j}", int(np.clip(t + rng.integers(-1, 2) * (rng.random() < 0.5),
                                            1, 5)))
        for j in range(3) for k, t in enumerate(true_score)]
pd.DataFrame(rows, columns=["item", "grader", "label"]).to_csv(folder / "scores.csv", index=False)
_ = run("audit scores.csv --labels 1,2,3,4,5", keep=2)
_ = run("audit scores.csv --labels 1,2,3,4,5 --tolerance 1 --no-progress", keep=2)
_ = run("audit scores.csv --labels 1,2,3,4,5 --bands 1-2,3,4-5 --no-progress", keep=2)

# %%
# Both answer orders: ``--swapped``
# ---------------------------------
# MT-Bench and FastChat ask a judge about each pair twice, as A/B and as B/A. Without
# ``--swapped`` the two presentations are two unrelated items where ``a`` means opposite
# answers; with it they are one item judged by ``<judge>/ab`` and ``<judge>/ba``, and the
# judge's consistency under the swap is reported (position bias shows as a low value).
table = pd.read_csv(folder / "mtbench_table1.csv", dtype=str)
flip = {"a": "b", "b": "a", "tie": "tie"}
pairs = []
for k, row in table.iterrows():
    q, x, y, said = row["question_id"], row["model_a"], row["model_b"], row["gpt4"]
    pairs.append((q, x, y, {"a": "model_a", "b": "model_b"}.get(said, "tie"), "gpt4"))
    swapped = "a" if k % 4 == 0 else flip[said]         # every 4th: the first answer wins
    pairs.append((q, y, x, {"a": "model_a", "b": "model_b"}.get(swapped, "tie"), "gpt4"))
pd.DataFrame(pairs, columns=["question_id", "model_a", "model_b", "winner", "judge"]
             ).to_csv(folder / "pairs.csv", index=False)
_ = run("audit pairs.csv --swapped --labels a,b,tie", keep=10)

# %%
# A time limit that still answers: ``--time-limit``
# --------------------------------------------------
# The M=2 and full-joint searches are exact integer programs. With ``--time-limit`` an
# audit that runs out of time prints the proven bounds ``T in [lo, hi]`` found so far
# instead of nothing (here a six-judge log of 2,000 items; it may also finish in time).
big, _ = simulate_log(2000, 3, 6, seed=11)
big.to_csv(folder / "big.csv", index=False)
_ = run("audit big.csv --m full --time-limit 2 --no-progress", keep=4)

# %%
# Fig. 8 and Fig. 2 on the page and in the JSON: ``--plot-per-label``, ``--pspace``
# ---------------------------------------------------------------------------------
# ``--plot-per-label`` gives the per-label min-max curves (Fig. 8), ``--pspace`` each
# grader's M=1 evaluations in P-space (Fig. 2, two labels). With a FILE each is drawn
# there; with ``--html`` it is on the page; with ``--json`` its numbers are in the JSON
# (``label_curves``: per label the sorted exact values, at most 500 points;
# ``pspace``: stage sizes and point classes per grader, at most 200 listed points). The
# summary says what each shows.
binary, _ = simulate_log(60, 2, 3, seed=2, acc_low=0.75, acc_high=0.95)
binary.to_csv(folder / "binary.csv", index=False)
_ = run("audit binary.csv --labels l0,l1 --threshold 0.6 --plot-per-label --pspace "
        "--json audit.json --html audit.html", keep=30)
data = json.loads((folder / "audit.json").read_text())
for curve in data["label_curves"]:
    print(f"label {curve['label']}: {curve['n_keys']} keys, {curve['min']} to "
          f"{curve['max']}, {len(curve['values'])} points")
for grader in data["pspace"]["graders"]:
    print(f"{grader['grader']}: decided {grader['decided']}, stages {grader['stages']}")
    classes = ", ".join(f"{n} {c}" for c, n in grader["classes"].items())
    print(f"    axioms-stage points: {classes}")

# %%
# The JSON's numbers redraw the figure: each grader's evaluations follow from ``n_items``
# and its decided counts (:func:`~evalcert.logic.pspace.pspace_evaluations`).
from fractions import Fraction

from evalcert.logic.pspace import pspace_evaluations
from evalcert.plots.alarms import plot_pspace

ps = data["pspace"]
spaces = [pspace_evaluations(ps["n_items"], g["decided"], "axioms", ps["labels"])
          for g in ps["graders"][:3]]
fig_pspace = plot_pspace(spaces, threshold=Fraction(ps["threshold"]),
                         graders=[g["grader"] for g in ps["graders"][:3]])

# %%
# Refusals are one line with the fix (exit status 2):
_ = run("audit binary.csv --labels l0,l1 --pspace")
_ = run("audit binary.csv --labels l0,l1 --plot-per-label --json -")
_ = run("audit binary.csv --labels l0,l1 --pspace missing/p2.png")

# %%
# An answer key from raw human votes: ``convert --format mtbench-human``
# -----------------------------------------------------------------------
# App. B of paper 003 builds the experts' and authors' answer key of Table I by a weighted
# vote of several annotators. ``convert --format mtbench-human`` reads the public MT-Bench
# human judgments (``lmsys/mt_bench_human_judgments``: Parquet, JSON Lines, JSON or CSV)
# and writes that key, ready for ``evalcert audit``.
votes = [(82, "gpt-4", "claude-v1", "model_b", "expert_0"),
         (82, "gpt-4", "claude-v1", "tie", "expert_4"),
         (82, "claude-v1", "gpt-4", "model_a", "expert_7"),     # claude-v1 shown first
         (82, "gpt-4", "claude-v1", "model_a", "author_1"),
         (85, "gpt-4", "vicuna-13b", "model_a", "expert_2"),
         (85, "gpt-4", "vicuna-13b", "model_a", "expert_3"),
         (85, "gpt-4", "vicuna-13b", "tie", "author_0")]
with open(folder / "human.jsonl", "w") as fh:
    for q, x, y, winner, judge in votes:
        fh.write(json.dumps({"question_id": q, "model_a": x, "model_b": y, "winner": winner,
                             "judge": judge, "turn": 1}) + "\n")
_ = run("convert human.jsonl --format mtbench-human --out key.csv")
print((folder / "key.csv").read_text())


# %%
# The same commands in a shell
# ----------------------------
# .. code-block:: bash
#
#    evalcert audit panel.csv --judges --judges-csv judges.csv
#    evalcert audit judgments.jsonl --population exact --confidence 0.9
#    evalcert audit judgments.jsonl --population bootstrap --resamples 200 --m 2
#    evalcert audit judgments.jsonl --labels a,b,tie --ties half
#    evalcert audit scores.csv --labels 1,2,3,4,5 --tolerance 1
#    evalcert audit scores.csv --labels 1,2,3,4,5 --bands 1-2,3,4-5
#    evalcert audit pairs.csv --swapped --labels a,b,tie
#    evalcert audit big.csv --m full --time-limit 60
#    evalcert audit binary.csv --plot-per-label f8.png --pspace f2.png --html audit.html
#    evalcert convert human_judgments.parquet --format mtbench-human --out key.csv
