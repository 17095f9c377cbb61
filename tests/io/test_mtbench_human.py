"""The MT-Bench human-judgment layout (HF lmsys/mt_bench_human_judgments, split human) read
in its four file forms, and ``evalcert convert --format mtbench-human`` writing the App. B key
that ``evalcert audit`` then reads."""

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalcert.datasets.mtbench import load_table1
from evalcert.errors import InputError
from evalcert.io.mtbench_human import build_key, parse_panels, read_mtbench_human
from tests._cli import run_cli
from tests.logic.test_keys import table1_votes

WIN = {"a": "model_a", "b": "model_b", "tie": "tie"}


def _records(seed=0, bothbad=True):
    recs = []
    for k, v in enumerate(table1_votes(seed)):
        winner = WIN[v.label]
        if bothbad and winner == "tie" and k % 3 == 0:
            winner = "tie (bothbad)"
        recs.append({"question_id": int(v.question_id), "model_a": v.model_a,
                     "model_b": v.model_b, "winner": winner, "judge": v.judge,
                     "conversation_a": [{"content": "hi", "role": "user"}],
                     "conversation_b": [{"content": "yo", "role": "assistant"}],
                     "turn": 1})
    return recs


def _write(tmp_path, fmt, recs):
    path = tmp_path / f"human.{fmt}"
    if fmt == "parquet":
        pq.write_table(pa.Table.from_pylist(recs), path)
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    elif fmt == "json":       # FastChat's file: judge of the LLM as [model, prompt]
        path.write_text(json.dumps([dict(r, judge=[r["judge"], "pair-v2"])
                                    if r["judge"] == "gpt4_pair" else r for r in recs]))
    else:
        pd.DataFrame(recs).drop(columns=["conversation_a", "conversation_b"]).to_csv(
            path, index=False)
    return path


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "json", "csv"])
def test_every_file_form_gives_table1(tmp_path, fmt):
    path = _write(tmp_path, fmt, _records())
    votes, source = read_mtbench_human(path)
    assert source["rows"] == source["votes"] == len(votes) and not source["unparseable"]
    assert set(votes["label"]) == {"a", "b", "tie"}
    key, _ = build_key(path, "experts,authors,gpt4=gpt4_pair", "experts=2")
    built = key.to_frame().set_index(["question_id", "model_a", "model_b"])
    table = load_table1().set_index(["question_id", "model_a", "model_b"])
    for panel in ("experts", "authors", "gpt4"):
        assert built.loc[table.index, panel].tolist() == table[panel].tolist()


def test_unparseable_winner_counted_not_guessed(tmp_path):
    recs = _records(bothbad=False)
    recs[0]["winner"] = "model_c"
    votes, source = read_mtbench_human(_write(tmp_path, "jsonl", recs))
    assert source["unparseable"] == {"model_c": 1} and len(votes) == len(recs) - 1


def test_missing_columns_and_panels_refused(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("question_id,model_a,model_b,winner\n1,x,y,tie\n")
    with pytest.raises(InputError, match="missing \\['judge'\\]"):
        read_mtbench_human(path)
    with pytest.raises(InputError, match="NAME=JUDGE_PREFIX"):
        parse_panels("gpt4")


def test_cli_convert_then_audit_equals_table1_audit(tmp_path):
    src = _write(tmp_path, "parquet", _records(seed=3))
    key = tmp_path / "key.csv"
    code, out, err = run_cli(["convert", str(src), "--format", "mtbench-human", "--out",
                              str(key), "--key", "experts,authors,gpt4=gpt4", "--turn", "1"])
    assert code == 0, err
    assert "25 comparisons, 25 graded by every panel" in out
    frame = pd.read_csv(key, dtype=str)
    assert list(frame.columns) == ["item", "question_id", "model_a", "model_b", "turn",
                                   "experts", "authors", "gpt4"]
    assert frame["item"].iloc[0] == "82|gpt-4|claude-v1|1"
    shipped = "evalcert/datasets/mtbench_table1.csv"
    for graders in ("experts,authors", "authors,gpt4"):
        ours = run_cli(["audit", str(key), "--graders", graders, "--m", "full"])
        paper = run_cli(["audit", shipped, "--graders", graders, "--m", "full"])
        assert ours[0] == paper[0] == 0
        assert ours[1].splitlines()[1] == paper[1].splitlines()[1]     # the same exact T


def test_cli_key_options_need_the_format(tmp_path):
    src = _write(tmp_path, "csv", _records())
    code, _, err = run_cli(["convert", str(src), "--out", str(tmp_path / "k.csv"),
                            "--key", "experts"])
    assert code == 2 and "--format mtbench-human" in err
    code, _, err = run_cli(["convert", str(src), "--format", "mtbench-human", "--out",
                            str(tmp_path / "k.csv"), "--min-votes", "experts"])
    assert code == 2 and "PANEL=N" in err


def test_no_panel_votes_refused_naming_the_judges(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("question_id,model_a,model_b,winner,judge\n1,x,y,tie,gpt4_pair\n")
    with pytest.raises(InputError, match="its judges are gpt4_pair"):
        build_key(path)
    assert len(build_key(path, "gpt4=gpt4")[0]) == 1
