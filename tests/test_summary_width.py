"""Summaries fit on a page: lines of at most 100 characters, listings capped with a count
(issue 21 item 9)."""

from __future__ import annotations

import numpy as np

from evalcert.results import MAX_WIDTH, format_table, list_names, wrap_lines


def test_list_names_caps_with_the_count():
    names = [f"agent{k}" for k in range(600)]
    text = list_names(names)
    assert text.endswith(", ... and 592 more") and text.count("agent") == 8
    assert list_names(names[:3]) == "agent0, agent1, agent2"
    assert list_names(iter(names[:2]), total=5, limit=1) == "agent0, ... and 4 more"
    assert list_names(["0.5", ""], quote=True) == "'0.5', ''"


def test_wrap_lines_keeps_every_word_and_short_lines():
    long = "binding box: agents " + ", ".join(f"a{k}" for k in range(80))
    text = "title\n" + long + "\n  indented " + "x" * 150
    out = wrap_lines(text)
    assert max(map(len, out.splitlines())) <= MAX_WIDTH
    assert out.splitlines()[0] == "title"
    assert "".join(out.split()) == "".join(text.split())


def test_format_table_narrows_a_wide_column():
    solver = ("newton (conditional likelihood, Schur Hessian, ESF truncation error <= 1e-17, "
              "60 x 150 pooled groups)")
    text = format_table([["solver", solver], ["iterations", 5], ["loglik", -2774.2334]],
                        ["field", "value"])
    lines = text.splitlines()
    assert max(map(len, lines)) <= MAX_WIDTH
    assert "".join(solver.split()) in "".join(text.split())  # nothing lost
    assert next(l for l in lines if "iterations" in l).rstrip().endswith(" 5")
    assert "-2774.2334" in lines[-1] and len(lines) > 5  # the solver cell takes two lines


def test_irt_fit_summary_lines_fit_in_100_characters():
    from evalcert import Rasch
    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=60), rng.normal(size=150)
    Y = (rng.random((60, 150)) < 1 / (1 + np.exp(-(theta[:, None] - b)))).astype(float)
    Y[rng.random(Y.shape) < 0.4] = np.nan
    summary = Rasch(method="cml").fit(Y).result_.summary()
    assert "Schur" in summary  # the long solver description is there, wrapped
    assert max(map(len, summary.splitlines())) <= MAX_WIDTH


def test_clipped_linear_summary_caps_the_binding_agents():
    from evalcert.data import ScoreMatrix
    from evalcert.solvers import ClippedLinear
    rng = np.random.default_rng(0)
    K, J = 300, 40
    X = np.clip(rng.normal(0.9, 0.3, (K, J)), -1, 1)
    X[:, :5] = 1.0   # five items every agent aces: the upper box binds for many agents
    S = ScoreMatrix.from_array(X, agents=[f"agent{k}" for k in range(K)],
                               items=[f"q{j}" for j in range(J)])
    summary = ClippedLinear().fit(S).result_.summary(max_agents=3)
    binding = summary[summary.index("binding upper box"):].split("\n\n")[0]
    assert "more" in binding and binding.count("agent") <= 9, binding
    assert max(map(len, summary.splitlines())) <= MAX_WIDTH
