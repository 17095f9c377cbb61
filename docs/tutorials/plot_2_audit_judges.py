"""
Audit LLM judges from a judge log
=================================

The job: several graders (LLM judges, human annotators) labelled the same items, and
there is no answer key. Could they all be better than, say, 50% correct on every label?
The logic of unsupervised evaluation (paper 003) answers exactly, from how the graders
agree and disagree: it enumerates the answer keys a test of ``Q`` items could have (the
Q-complex) and, for each, the best accuracy every grader could logically reach. The
*no-knowledge alarm* fires at level ``x`` when no answer key lets every grader be
better than ``x`` on every label. Its exact threshold ``T`` is a fraction: the alarm
fires iff ``x >= T``. Nothing here is estimated; a silent alarm does not prove the
graders are good, but a firing one proves that at least one of them is not.

Data: the 25 MT-Bench pairwise comparisons of paper 003's Table I, shipped with
evalcert, written out as a judge log the way MT-Bench and Chatbot Arena store judgments.
"""

# %%
# A judge log
# -----------
# One JSON line per judgment: ``question_id, model_a, model_b, winner, judge``. The
# item is the comparison ``(question_id, model_a, model_b)``, not the question (question
# ids repeat across pairs), and ``winner`` values ``model_a``/``model_b``/``tie`` become
# the labels ``a``/``b``/``tie``; anything else is counted as unparseable, never guessed.
# Long ``item,grader,label`` tables and wide tables (one column per grader) are read
# the same way, from CSV, TSV, Parquet or JSONL.
import tempfile
from fractions import Fraction
from pathlib import Path

from evalcert import alarm, alarm_m2, read_decisions
from evalcert.datasets.mtbench import load_table1
from evalcert.plots.alarms import plot_label_curves, plot_minmax_curve

table = load_table1()
log = table.melt(id_vars=["question_id", "model_a", "model_b"],
                 value_vars=["authors", "gpt4"], var_name="judge", value_name="winner")
log["winner"] = log["winner"].map({"a": "model_a", "b": "model_b", "tie": "tie"})
path = Path(tempfile.mkdtemp()) / "judgments.jsonl"
log.to_json(path, orient="records", lines=True)
for line in path.read_text().splitlines()[:3]:
    print(line.replace(',"judge"', ',\n   "judge"'))  # one record a line, folded for the page

decisions = read_decisions(path)
print(f"{len(decisions.items)} items, graders {decisions.graders}, "
      f"labels {decisions.labels}")

# %%
# The alarm at 50%
# ----------------
# Under the M=1 axioms only each grader's label counts matter. The result lists the
# answer keys that attain ``T`` and which (grader, label) pairs bind there.
result = alarm(decisions, Fraction(1, 2))
print(result.summary())

# %%
# A stricter level fires: no answer key lets both graders be better than 70% on every
# label, so at least one of them is worse than 70% on some label, whatever the truth.
strict = alarm(decisions, "0.7", curves=False)
print(f"x = 0.7: fires = {strict.fires} (T = {strict.T})")

# %%
# The min-max curve (Fig. 7 of paper 003)
# ---------------------------------------
# Each point is one answer key ``q``: the best minimum label accuracy ``v(q)`` the two
# graders could have if ``q`` were the truth. ``T`` is the top of the curve.
fig_curve = plot_minmax_curve(result)

# %%
# And per label (Fig. 8): the best accuracy of the worst grader on each label, keys sorted
# per label (positions are not comparable across labels). Every label reaches 1 at some
# key, so no alarm can be set on one label alone; ``evalcert audit --plot-per-label``
# draws the same figure.
fig_labels = plot_label_curves(result)

# %%
# The possible evaluations in P-space (Fig. 2)
# --------------------------------------------
# For two labels, each grader's M=1-consistent evaluations are points
# ``(P_a, P_{a,a}, P_{b,b})``: the prevalence of ``a`` in the answer key and the grader's
# accuracy on each label. Green points clear ``x`` at a prevalence where every grader can
# (the alarm is silent iff there are any); ``evalcert audit --pspace`` draws this for a
# two-label log. Here: the two graders' verdicts on "is model_b better?" (``b`` against
# ``a`` or ``tie``).
from evalcert.logic.pspace import pspace_evaluations
from evalcert.plots.alarms import plot_pspace

n_items = len(table)
spaces = [pspace_evaluations(n_items, ((table[g] == "b").sum(), (table[g] != "b").sum()),
                             labels=("b", "other")) for g in ("authors", "gpt4")]
fig_pspace = plot_pspace(spaces, threshold=Fraction(1, 2), graders=["authors", "gpt4"])

# %%
# An answer key from raw human votes (App. B)
# -------------------------------------------
# The experts and authors columns of Table I are weighted votes of several annotators:
# a vote for a model counts 1, a tie 1/2 for each, and equal weights give ``tie``.
# ``evalcert convert human.parquet --format mtbench-human --out key.csv`` builds the key
# from the public MT-Bench human judgments; in memory:
from evalcert.logic.keys import weighted_vote_key

votes = [("82", "gpt-4", "claude-v1", "1", "expert_0", "b"),
         ("82", "gpt-4", "claude-v1", "1", "expert_4", "tie"),
         ("82", "claude-v1", "gpt-4", "1", "expert_7", "a"),   # claude-v1 shown first
         ("82", "gpt-4", "claude-v1", "1", "author_1", "a")]
key = weighted_vote_key(votes)
print(key.summary())
print(key.to_frame())        # Table I's first row: experts b, authors a

# %%
# Pairs of graders (M=2)
# ----------------------
# The M=2 axioms also use how the two graders' decisions co-occur item by item, which
# can only lower ``T`` (the set of consistent evaluations shrinks). Each candidate is an
# integer program solved with PuLP (HiGHS or CBC); ``T`` stays an exact fraction.
result_m2 = alarm_m2(decisions, Fraction(1, 2))
print(f"M=1: T = {result.T};  M=2: T = {result_m2.T}; "
      f"M=2 fires at 1/2: {result_m2.fires}")

# %%
# The same from the command line
# ------------------------------
# .. code-block:: bash
#
#    evalcert audit judgments.jsonl --threshold 0.5 --plot curve.png
#    evalcert audit judgments.jsonl --plot-per-label labels.png
#    evalcert audit judgments.jsonl --threshold 0.5 --m 2 --json audit.json
#
# Every other option of ``evalcert audit`` (the per-judge table, ``--population``,
# ``--ties half``, ``--tolerance``, ``--bands``, ``--swapped``, ``--time-limit``,
# ``--plot-per-label``/``--pspace`` on the page and in the JSON) and ``convert --format
# mtbench-human`` is run once, with its output, in :doc:`plot_6_audit_options`.
