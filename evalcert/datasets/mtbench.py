"""MT-Bench Table I of paper 003 (App. B): 25 turn-1 pair comparisons graded a / b / tie.

Columns: ``item`` (row number), ``question_id``, ``model_a``, ``model_b`` and three
graders: ``experts`` (weighted vote of human experts, used as a ground truth),
``authors`` (weighted vote of the MT-Bench authors) and ``gpt4`` (LLM-as-a-judge).

Transcribed row by row from the paper's text. The experts column reproduces the
caption's (4, 14, 7) and authors the (5, 10, 10) of Figs. 6-7, but the gpt4 column of the
table sums to (a, b, tie) = (5, 18, 2) while Figs. 6-7 use (4, 18, 3): one gpt4 'tie' of
the source data is printed as 'a' in the table (or the figures used other data), and
the paper does not say which. The table is kept as printed; :data:`PAPER_SUMMARIES`
holds the counts of Figs. 6-7, which the issue's M=1 numbers refer to.
"""

from __future__ import annotations

from importlib import resources
from typing import Sequence

import pandas as pd

from evalcert.logic.summaries import Decisions, LabelCounts, decisions_from_frame, label_counts

__all__ = ["LABELS", "PAPER_SUMMARIES", "load_table1", "table1_decisions", "paper_summaries"]

LABELS = ("a", "b", "tie")

PAPER_SUMMARIES = {"authors": {"a": 5, "b": 10, "tie": 10},
                   "gpt4": {"a": 4, "b": 18, "tie": 3}}


def load_table1() -> pd.DataFrame:
    """Table I as a DataFrame (25 rows).

    Examples
    --------
    >>> table = load_table1()
    >>> table.shape, list(table.columns[-3:])
    ((25, 7), ['experts', 'authors', 'gpt4'])
    """
    with resources.files("evalcert.datasets").joinpath("mtbench_table1.csv").open("r") as fh:
        return pd.read_csv(fh, dtype=str)


def table1_decisions(graders: Sequence[str] = ("authors", "gpt4")) -> Decisions:
    """Question-aligned decisions of the chosen Table I columns, labels a, b, tie.

    Examples
    --------
    >>> d = table1_decisions(("experts", "gpt4"))
    >>> len(d.items), d.graders, d.labels
    (25, ('experts', 'gpt4'), ('a', 'b', 'tie'))
    """
    frame = load_table1().melt(id_vars="item", value_vars=list(graders), var_name="grader",
                               value_name="label")
    return decisions_from_frame(frame, labels=LABELS)


def paper_summaries() -> LabelCounts:
    """The M=1 summaries of Figs. 6-7: authors (5, 10, 10), gpt4 (4, 18, 3), Q = 25.

    Examples
    --------
    >>> counts = paper_summaries()
    >>> counts.graders, counts.n_items, counts.array.tolist()
    (('authors', 'gpt4'), 25, [[5, 10, 10], [4, 18, 3]])
    """
    return label_counts(PAPER_SUMMARIES, labels=LABELS)
