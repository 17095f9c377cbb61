"""Inputs: every bad input of issue 3 raises a typed InputError before any solving."""

from fractions import Fraction

import pandas as pd
import pytest

from evalcert.errors import InputError
from evalcert.logic import alarm, label_counts
from evalcert.io.decisions import read_decisions, read_label_counts
from evalcert.logic.summaries import as_threshold, decisions_from_frame

GOOD = {"authors": {"a": 5, "b": 10, "tie": 10}, "gpt4": {"a": 4, "b": 18, "tie": 3}}


def long(rows):
    return pd.DataFrame(rows, columns=["item", "grader", "label"])


def test_counts_roundtrip_and_declared_zero_labels():
    c = label_counts({"x": {"a": 3}, "y": {"a": 1, "b": 2}}, labels="a,b")
    assert c.counts == ((3, 0), (1, 2)) and c.n_items == 3


@pytest.mark.parametrize("data, labels, needle", [
    ({"x": {"a": 3, "b": 1}, "y": {"a": 1, "b": 2}}, None, "different test sizes"),
    ({"x": {"a": -1, "b": 2}}, None, "negative"),
    ({"x": {"a": 1.5, "b": 2}}, None, "not an integer"),
    ({"x": {"a": True, "b": 2}}, None, "not an integer"),
    ({"x": {"a": 1, "c": 2}}, ["a", "b"], "outside the declared set"),
    ({"x": {"a": 0, "b": 0}}, None, "empty test"),
    ({}, None, "no graders"),
    ({"x": {"a": 3}}, None, "R >= 2"),
    ({"x": {"a": 3}}, ["a", "a"], "more than once"),
])
def test_bad_counts_raise_input_error(data, labels, needle):
    with pytest.raises(InputError, match=needle):
        label_counts(data, labels=labels)


def test_skipped_items_raise_unless_dropped():
    rows = [(1, "x", "a"), (1, "y", "b"), (2, "x", "b"), (3, "x", "a"), (3, "y", "a")]
    with pytest.raises(InputError, match=r"skipped items: \{'y': \['2'\]\}"):
        decisions_from_frame(long(rows))
    dec = decisions_from_frame(long(rows), on_missing="drop")
    assert dec.items == ("1", "3") and dec.label_counts().counts == ((2, 0), (1, 1))


@pytest.mark.parametrize("rows, kw, needle", [
    ([(1, "x", "a"), (1, "x", "b"), (2, "x", "b")], {}, "more than once"),
    ([(1, "x", "a"), (2, "x", "zz")], {"labels": ["a", "b"]}, "outside the declared set"),
    ([], {}, "empty test"),
    ([(1, "x", "a"), (2, "x", None)], {}, "empty cells"),
    ([(1, "x", "a")], {"on_missing": "guess"}, "on_missing"),
])
def test_bad_decisions_raise_input_error(rows, kw, needle):
    with pytest.raises(InputError, match=needle):
        decisions_from_frame(long(rows), **kw)


def test_missing_columns_and_unreadable_files(tmp_path):
    with pytest.raises(InputError, match="lacks columns"):
        decisions_from_frame(pd.DataFrame({"item": [1]}))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="bad.json: not valid JSON"):
        read_label_counts(bad)
    with pytest.raises(InputError, match="no such file"):
        read_decisions(tmp_path / "absent.csv")


def test_json_with_labels_key_and_wide_csv(tmp_path):
    p = tmp_path / "s.json"
    p.write_text('{"labels": ["a", "b", "tie"], "counts": {"g": {"a": 1, "b": 1}}}')
    assert read_label_counts(p).counts == ((1, 1, 0),)
    w = tmp_path / "w.csv"
    w.write_text("item,x,y\n1,a,b\n2,b,b\n")
    assert read_decisions(w).label_counts().counts == ((1, 1), (0, 2))


@pytest.mark.parametrize("bad", [-0.1, 1.5, "nan", "abc", True, None])
def test_bad_threshold_raises(bad):
    with pytest.raises(InputError):
        alarm(GOOD, bad)


def test_threshold_floats_read_as_typed():
    assert as_threshold(0.1) == Fraction(1, 10) and as_threshold("2/3") == Fraction(2, 3)
