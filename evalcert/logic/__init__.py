"""Logic of unsupervised evaluation (paper 003): Q-complex, M=1/M=2 axioms as integer
LPs, exact no-knowledge alarms, multiple-choice grade sets.

Judge logs are read by :mod:`evalcert.io.decisions` (``read_decisions``, ``read_label_counts``,
``load_audit_input``); this package works on the decisions in memory."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from evalcert.logic.alarms import (alarm, alarm_threshold, attaining_keys, best_correct,
                                   key_value, minmax_curve)
from evalcert.logic.audit import AuditReport, AuditSpec, run_audit
from evalcert.logic.bounds import LabelBounds, label_bounds
from evalcert.logic.evaluations import (EvaluationCounts, count_evaluations,
                                        evaluation_counts, iter_evaluations, m1_axiom_terms)
from evalcert.logic.exams import GradeSets, grade_sets, grades_at_key
from evalcert.logic.exact import RatioProgram, exact_alarm
from evalcert.logic.ilp import IlpResult, M1Model, best_min_accuracy_ilp, consistent_ilp
from evalcert.logic.joint import alarm_full
from evalcert.logic.judges import JudgeTable, judge_table
from evalcert.logic.pairs import (M2Model, alarm_m2, m2_alarm_threshold,
                                  m2_best_min_accuracy, m2_consistent)
from evalcert.logic.qcomplex import iter_qcomplex, qcomplex_array, qcomplex_size
from evalcert.logic.result import AlarmResult, MinMaxCurve
from evalcert.logic.sequences import alarm_sequence
from evalcert.logic.summaries import (Decisions, LabelCounts, ReadReport, as_label_counts,
                                      decisions_from_frame, label_counts)

__all__ = [
    "AlarmResult", "MinMaxCurve", "alarm", "alarm_threshold", "attaining_keys",
    "best_correct", "key_value", "minmax_curve", "LabelBounds", "label_bounds",
    "EvaluationCounts", "count_evaluations", "evaluation_counts", "iter_evaluations",
    "m1_axiom_terms", "GradeSets", "grade_sets", "grades_at_key",
    "IlpResult", "M1Model", "best_min_accuracy_ilp", "consistent_ilp",
    "M2Model", "alarm_m2", "m2_alarm_threshold", "m2_best_min_accuracy", "m2_consistent",
    "iter_qcomplex", "qcomplex_array", "qcomplex_size",
    "Decisions", "LabelCounts", "ReadReport", "as_label_counts",
    "decisions_from_frame", "label_counts", "mtbench_demo",
    "AuditReport", "AuditSpec", "run_audit", "RatioProgram", "exact_alarm", "alarm_full",
    "alarm_sequence", "JudgeTable", "judge_table",
]


def mtbench_demo(threshold: Any = Fraction(1, 2)) -> AlarmResult:
    """The MT-Bench audit of Sec. III: authors (5, 10, 10) and gpt4 (4, 18, 3), Q = 25.

    ``T = 2/3`` attained only at (6, 15, 4) (the paper's 46% does not follow from the M=1
    axioms; see :mod:`evalcert.logic.alarms`), so the alarm is silent at 1/2.

    Examples
    --------
    >>> result = mtbench_demo()
    >>> result.fires, result.T, result.attaining_keys
    (False, Fraction(2, 3), ((6, 15, 4),))
    """
    from evalcert.datasets.mtbench import paper_summaries

    return alarm(paper_summaries(), threshold)
