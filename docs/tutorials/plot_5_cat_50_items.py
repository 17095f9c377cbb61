"""
Evaluate a new model with 50 items
==================================

The job: a benchmark has thousands of items and a leaderboard of models already run on
all of them. A new model comes out; running it on every item is slow and costly. With an
item bank calibrated on the leaderboard (a 2PL fit), **computerised adaptive testing**
asks the new model one item at a time, each chosen to be the most informative at its
current ability estimate, and predicts its accuracy on the whole benchmark after ~50
items (the approach of Fluid Benchmarking, Hofmann et al. 2025, and metabench).

The data here are generated with a fixed seed so that the truth is known: 240 models x
1,500 items, slopes spread (some items discriminate far better than others).
"""

# %%
# A leaderboard and a new model
# -----------------------------
import matplotlib.pyplot as plt
import numpy as np

from evalcert.irt import TwoPL, run_cat, simulate_cat

rng = np.random.default_rng(0)
n_models, n_items = 240, 1500
a = rng.lognormal(0.0, 0.5, n_items)          # slopes
b = rng.normal(0.0, 1.0, n_items)             # difficulties
theta = rng.normal(0.0, 1.0, n_models + 1)    # the last model is the new one
P = 1 / (1 + np.exp(-a * (theta[:, None] - b)))
Y = (rng.random(P.shape) < P).astype(float)
leaderboard, new_model = Y[:-1], Y[-1]
print(f"new model's accuracy on all {n_items} items: {new_model.mean():.3f}")

# %%
# Calibrate the item bank
# -----------------------
# Marginal ML 2PL on the leaderboard (``evalcert irt fit --model 2pl --out-dir bank``
# writes the same bank to ``bank/items.csv``).
bank = TwoPL(method="mml", standard_errors=False).fit(leaderboard)
print(f"converged: {bank.result_.converged}; corr of fitted and true slopes "
      f"{np.corrcoef(bank.discriminations_, a)[0, 1]:.3f}")

# %%
# Test the new model adaptively
# -----------------------------
# ``run_cat`` asks a callback for one item's score at a time; here the callback looks
# the answer up, in practice it would run the model on that item and grade it. Items
# are chosen by maximum Fisher information at the current EAP ability; the test stops
# after 50 items (``se_stop=`` or ``delta_stop=`` stop earlier).
asked = []


def run_model_on(item: str) -> float:
    asked.append(item)
    return float(new_model[int(item.removeprefix("item"))])


session = run_cat(bank, run_model_on, max_items=50)
print(f"items asked: {len(asked)}; ability {session.theta:.2f} (se {session.se:.2f}, "
      f"truth {theta[-1]:.2f})")
print(f"predicted accuracy on the whole benchmark: {session.predicted_accuracy:.3f} "
      f"(actual {new_model.mean():.3f}; plain mean of the 50 answers "
      f"{session.answers.mean():.3f})")

# %%
# The plain mean of the 50 answers is biased towards 1/2: adaptive items are chosen near
# the model's level, so it gets about half of them right whatever its accuracy. The IRT prediction
# adds the expected score on every item not asked.
#
# How good is that in general? Replay on held-out models
# --------------------------------------------------------
# ``simulate_cat`` holds out a share of the leaderboard, calibrates on the rest and
# replays adaptive tests on the held-out models from their known answers. It reports the
# mean absolute error of the predicted full-benchmark accuracy against the number of
# items, beside ``n`` random items and ``n`` static anchors (the most informative items
# at spread ability quantiles, as in tinyBenchmarks), all scored the same way.
res = simulate_cat(TwoPL(method="mml", standard_errors=False), leaderboard, holdout=0.25,
                   max_items=50, seed=0)
print(res.summary().split("\n\n")[1])

# %%
curve = res.curve
n = [c["n_items"] for c in curve]
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(n, [c["mae_accuracy"] for c in curve], "o-", label="adaptive (max. information)")
ax.plot(n, [c["mae_anchors"] for c in curve], "s--", label="static anchors")
ax.plot(n, [c["mae_random"] for c in curve], "^:", label="random items")
ax.set_xlabel("items asked")
ax.set_ylabel("MAE of predicted accuracy")
ax.set_title(f"{len(res.models)} held-out models, {res.n_items}-item bank")
ax.legend()
fig.tight_layout()

# %%
# From the command line
# ---------------------
# The same replay on a response file (models as rows), and an adaptive replay of new
# models on a bank written by ``irt fit``::
#
#    evalcert irt cat responses.csv --model 2pl --holdout 0.2 --max-items 50 --json cat.json
#    evalcert irt fit leaderboard.csv --model 2pl --out-dir bank
#    evalcert irt cat new_models.csv --items bank/items.csv --max-items 50 --se-stop 0.25
#
# Options: ``--selection mfi|kl|random|astrat`` (maximum information, posterior-weighted
# Kullback-Leibler, random, a-stratified), ``--update eap|map``, exposure control with
# ``--randomesque K`` and ``--max-exposure R``. The JSON holds
# ``models[{model, items_used, theta, se, predicted_accuracy, actual_accuracy}]`` and
# ``curve[{n_items, mae_accuracy, mae_random, mae_anchors}]``.
