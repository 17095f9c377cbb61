"""Regenerate the fixtures in this folder with the real tools, offline.

Run with a Python that has ``inspect_ai`` and ``lm_eval`` installed (they are not evalcert
dependencies), e.g.::

    python3 -m venv /tmp/tools && /tmp/tools/bin/pip install inspect_ai lm_eval
    HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 /tmp/tools/bin/python tests/data/formats/regenerate.py

No network and no model weights: Inspect runs ``mockllm/<name>`` models with a solver that
sets ``state.output`` itself (one answer table per model), with ``--epochs 2`` and
``fail_on_error=False`` (errored samples stay in the log); lm-eval runs a subclass of
``lm_eval.api.model.LM`` on local JSONL tasks and writes through ``EvaluationTracker``.
Everything the tools write is kept as written; only the output folders are chosen here.

FastChat and AlpacaEval call an OpenAI-style judge: here a canned judge on localhost
(:func:`local_judge`, stdlib ``http.server``; ``OPENAI_API_BASE`` points the tools at it),
which reads a quality marker in each answer. Run them with a Python that has ``fschat``
0.2.36 (plus ``openai<1``, ``anthropic``, ``torch``, ``transformers``, ``accelerate``,
``psutil``, ``shortuuid``: FastChat's model adapter imports them at start, though the judge
path uses none) or ``alpaca_eval`` 0.6.6 (its ``openai>=1`` clashes with FastChat's, so a
second venv), naming the tools::

    python tests/data/formats/regenerate.py tests/data/formats fastchat
    python tests/data/formats/regenerate.py tests/data/formats alpaca_eval

What is made (see README.md):

* ``inspect/eval/*.eval`` and ``inspect/json/*.json``: task ``arith`` (6 samples, scorers
  ``match`` (C/I) and ``graded`` (C/P/I plus a dict-valued ``detail``)), models alpha,
  beta, gamma, 2 epochs; beta errors on q3 in epoch 1, gamma on q5 in both epochs;
* ``lm_eval/<org>__<model>/``: tasks ``qa_gen`` (generate_until, filters ``strict-match``
  and ``flexible-extract``) and ``qa_mc`` (multiple_choice, acc and acc_norm), models
  mock/alpha (two runs: the newest is read), mock/beta, mock/gamma;
* ``lm_eval_mismatch/mock__delta/``: mock/delta on a copy of the data whose doc 2 differs
  (same doc_id, another doc_hash).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("INSPECT_LOG_LEVEL", "warning")

QUESTIONS = [("q1", "2 + 2", "4"), ("q2", "3 * 3", "9"), ("q3", "10 - 7", "3"),
             ("q4", "6 / 2", "3"), ("q5", "5 + 6", "11"), ("q6", "2 ** 3", "8")]
#: per model, the questions it answers wrongly and partly (lower case "x" -> P)
WRONG = {"alpha": {"q2"}, "beta": {"q4", "q6"}, "gamma": {"q1", "q2", "q3"}}
PARTIAL = {"alpha": {"q6"}, "beta": set(), "gamma": {"q4"}}
#: (model, sample id, epochs) that raise
ERRORS = {("beta", "q3"): {1}, ("gamma", "q5"): {1, 2}}


def _pick(*parts: object) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest(), 16)


# -- Inspect --------------------------------------------------------------------------------
def make_inspect(out: Path) -> None:
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import CORRECT, INCORRECT, PARTIAL as P, Score, Target, accuracy, \
        match, scorer
    from inspect_ai.solver import TaskState, solver

    @solver
    def answer_table():
        async def solve(state: TaskState, generate):
            name = str(state.model).split("/")[-1]
            sid = str(state.sample_id)
            if state.epoch in ERRORS.get((name, sid), set()):
                raise RuntimeError(f"simulated provider error for {name} on {sid}")
            right = state.target.text
            text = "0" if sid in WRONG[name] else right
            if sid in PARTIAL[name]:
                text = f"about {right}"
            state.output = ModelOutput.from_content(model=str(state.model), content=text)
            state.messages.append(state.output.message)
            return state
        return solve

    @scorer(metrics=[accuracy()])
    def graded():
        async def score(state: TaskState, target: Target) -> Score:
            said = state.output.completion.strip()
            value = CORRECT if said == target.text else P if target.text in said else INCORRECT
            return Score(value=value, answer=said)
        return score

    @scorer(metrics={"exact": [accuracy()]})
    def detail():
        async def score(state: TaskState, target: Target) -> Score:
            said = state.output.completion.strip()
            return Score(value={"exact": 1.0 if said == target.text else 0.0,
                                "chars": float(len(said))}, answer=said)
        return score

    task = Task(name="arith",
                dataset=[Sample(id=sid, input=f"What is {q}?", target=a)
                         for sid, q, a in QUESTIONS],
                solver=answer_table(), scorer=[match(), graded(), detail()])
    models = [f"mockllm/{m}" for m in WRONG]
    for fmt in ("eval", "json"):
        folder = out / "inspect" / fmt
        shutil.rmtree(folder, ignore_errors=True)
        inspect_eval(task, model=models, epochs=2, fail_on_error=False, log_dir=str(folder),
                     log_format=fmt, display="none", max_tasks=1)


# -- lm-evaluation-harness ------------------------------------------------------------------
def _lm_class():
    from lm_eval.api.model import LM

    class AnswerTable(LM):
        """Answers from a fixed table per model name: no weights, no network."""

        def __init__(self, name: str, skill: int = 0) -> None:
            super().__init__()
            self.name, self.skill = name, skill

        def _right(self, doc: dict) -> bool:
            return (_pick(self.name, doc["id"]) + self.skill) % 3 != 0

        def generate_until(self, requests):
            out = []
            for req in requests:
                doc = req.doc
                answer = doc["answer"] if self._right(doc) else "0"
                # every third doc answers without the "ANSWER:" tag: the filters differ
                out.append(f"ANSWER: {answer}" if _pick(self.name, "tag", doc["id"]) % 3
                           else f"it is {answer}")
            return out

        def loglikelihood(self, requests):
            out = []
            for req in requests:
                doc, continuation = req.doc, req.args[1]
                choice = doc["choices"][doc["label"]] if self._right(doc) else \
                    doc["choices"][(doc["label"] + 1) % len(doc["choices"])]
                best = continuation.strip() == choice
                out.append((-0.5 if best else -2.0 - len(continuation) / 10, best))
            return out

        def loglikelihood_rolling(self, requests):
            return [(-1.0,) for _ in requests]

    return AnswerTable


def _tasks(folder: Path, rows: list[dict]) -> None:
    data = folder / "qa.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "qa_gen.yaml").write_text(f"""task: qa_gen
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["\\n\\n"]
  do_sample: false
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
filter_list:
  - name: strict-match
    filter:
      - function: regex
        regex_pattern: "ANSWER: (\\\\w+)"
      - function: take_first
  - name: flexible-extract
    filter:
      - function: regex
        group_select: -1
        regex_pattern: "(\\\\w+)"
      - function: take_first
metadata:
  version: 1.0
""")
    (folder / "qa_mc.yaml").write_text(f"""task: qa_mc
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: label
metric_list:
  - metric: acc
  - metric: acc_norm
metadata:
  version: 1.0
""")


def _run_lm_eval(out: Path, tasks: Path, name: str, skill: int = 0) -> None:
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    tracker = EvaluationTracker(output_path=str(out))
    results = simple_evaluate(model=_lm_class()(name, skill), model_args=f"pretrained={name}",
                              tasks=["qa_gen", "qa_mc"], log_samples=True,
                              task_manager=TaskManager(include_path=str(tasks)),
                              evaluation_tracker=tracker)
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for task_name in results["configs"]:
        tracker.save_results_samples(task_name=task_name, samples=samples[task_name])


def make_lm_eval(out: Path) -> None:
    rows = [{"id": k, "question": f"What is {q}?", "answer": a,
             "choices": [a, str(int(float(eval(q))) + 1), "0"] if a != "0" else [a, "1", "2"],
             "label": 0}
            for k, (_, q, a) in enumerate(QUESTIONS)]
    for folder in ("lm_eval", "lm_eval_mismatch"):
        shutil.rmtree(out / folder, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        same, other = Path(tmp) / "same", Path(tmp) / "other"
        same.mkdir()
        other.mkdir()
        _tasks(same, rows)
        changed = [dict(r) for r in rows]
        changed[2]["question"] = "What is 10 - 8?"
        _tasks(other, changed)
        _run_lm_eval(out / "lm_eval", same, "mock/alpha", skill=0)
        time.sleep(1.1)                                 # a later run: another date in names
        _run_lm_eval(out / "lm_eval", same, "mock/alpha", skill=1)
        _run_lm_eval(out / "lm_eval", same, "mock/beta")
        _run_lm_eval(out / "lm_eval", same, "mock/gamma")
        _run_lm_eval(out / "lm_eval_mismatch", other, "mock/delta")


# -- a local judge for FastChat and AlpacaEval ------------------------------------------------
#: answers carry their quality as a marker the canned judge reads; GARBLE makes it reply
#: without a verdict (FastChat writes "error" / -1, AlpacaEval a null preference)
QUALITY = re.compile(r"\[q=(\d+)\]")


def _qualities(text: str, *marks: tuple[str, str]) -> list[int | None]:
    """The quality marker of each answer delimited by ``marks`` (the last occurrence)."""
    out = []
    for start, end in marks:
        body = text.rsplit(start, 1)[-1].split(end, 1)[0] if start in text else ""
        out.append(None if "GARBLE" in body or not QUALITY.search(body)
                   else int(QUALITY.findall(body)[-1]))
    return out


def judge_reply(prompt: str) -> str:
    """The canned judge: the better answer wins, equal ones tie, and when they differ by
    one the first shown wins (a position bias, so both answer orders can disagree);
    AlpacaEval's ``gpt4`` annotator has no bias and no tie (equal: the second)."""
    if "[[rating]]" in prompt or "Rating: [[" in prompt:                  # FastChat single
        (q,) = _qualities(prompt.split("### User:")[-1] if "### User:" in prompt else prompt,
                          ("[The Start of Assistant's Answer]", "[The End") if "[The End" in prompt else
                          ("Assistant A:", "<|The End"))
        return "No rating can be given." if q is None else f"Fine. Rating: [[{q}]]"
    if "Assistant B" in prompt:                                           # FastChat pair
        marks = (("[The Start of Assistant A's Answer]", "[The End of Assistant A"),
                 ("[The Start of Assistant B's Answer]", "[The End of Assistant B"))
        if "### Assistant A:" in prompt:
            marks = (("### Assistant A:", "<|The End"), ("### Assistant B:", "<|The End"))
        qa, qb = _qualities(prompt, *marks)
        if qa is None or qb is None:
            return "Both answers are hard to compare."
        return "[[C]]" if qa == qb else "[[A]]" if qa >= qb - 1 else "[[B]]"
    if "## Output (a):" in prompt:                                        # AlpacaEval gpt4
        qa, qb = _qualities(prompt, ("## Output (a):", "## Output (b):"),
                            ("## Output (b):", "## Which is best"))
        if qa is None or qb is None:
            return "Neither."
        return "Output (a)" if qa > qb else "Output (b)"                 # no tie: b
    qa, qb = _qualities(prompt, ('"model": "model_1"', '},'),            # alpaca_eval_gpt4
                        ('"model": "model_2"', '}\n]'))
    if qa is None or qb is None:
        return "I cannot rank these."
    first = "model_1" if qa >= qb - 1 else "model_2"
    second = "model_2" if first == "model_1" else "model_1"
    return f"[{{'model': '{first}', 'rank': 1}}, {{'model': '{second}', 'rank': 2}}]"


class _Judge(http.server.BaseHTTPRequestHandler):
    """An OpenAI-style ``/chat/completions`` endpoint answering with :func:`judge_reply`."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        text = judge_reply(prompt)
        reply = json.dumps({
            "id": "chatcmpl-local", "object": "chat.completion", "created": 0,
            "model": body.get("model", "judge"),
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": 8,
                      "total_tokens": len(prompt) // 4 + 8}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def local_judge():
    """Serve :class:`_Judge` on localhost (a free port) and yield its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()


# -- AlpacaEval ------------------------------------------------------------------------------
INSTRUCTIONS = ["Name a prime number above 10.", "Give a synonym of happy.",
                "Translate 'bonjour' into English.", "What is the capital of Italy?",
                "Suggest a name for a cat.", "Summarise the water cycle in one line."]
#: per generator, the quality of its answer to each instruction (None: a garbled answer)
ALPACA_QUALITY = {"reference": [5, 5, 5, 5, 5, 5], "alpha": [8, 6, 5, 4, 2, 9],
                  "beta": [5, 4, 7, 6, None, 1]}


def make_alpaca_eval(out: Path) -> None:
    """``alpaca_eval evaluate`` (its own CLI, in a child) for alpha and beta against the
    reference, with the annotators ``alpaca_eval_gpt4`` (ranking) and ``gpt4`` (Output
    (a)/(b)), judged by the local server; writes ``<out>/<model>/<annotator>/annotations.json``.
    """
    def outputs(generator: str) -> list[dict]:
        return [{"instruction": text, "output": f"Answer {j} [q={q}]" if q is not None else
                 "GARBLE", "generator": generator, "dataset": "regenerate"}
                for j, (text, q) in enumerate(zip(INSTRUCTIONS, ALPACA_QUALITY[generator]))]

    with local_judge() as url, tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "reference.json").write_text(json.dumps(outputs("reference")))
        env = {**os.environ, "OPENAI_API_BASE": url, "OPENAI_API_KEY": "local",
               "OPENAI_MAX_CONCURRENCY": "1", "IS_ALPACA_EVAL_2": "False"}
        for model in ("alpha", "beta"):
            (tmp / f"{model}.json").write_text(json.dumps(outputs(model)))
            for annotator in ("alpaca_eval_gpt4", "gpt4"):
                target = out / "alpaca_eval" / model
                subprocess.run([sys.executable, "-m", "alpaca_eval.main", "evaluate",
                                f"--model_outputs={tmp / f'{model}.json'}",
                                f"--reference_outputs={tmp / 'reference.json'}",
                                f"--annotators_config={annotator}", f"--output_path={target}",
                                "--caching_path=None", "--is_overwrite_leaderboard=True"],
                               check=True, env=env, cwd=tmp)
                for extra in ("leaderboard.csv", "model_outputs.json", "reference_outputs.json"):
                    for path in target.rglob(extra):
                        path.unlink()


# -- FastChat (MT-Bench llm_judge) ----------------------------------------------------------
#: two-turn questions (categories without reference answers) and, per model, the quality
#: of its two answers to each (None: garbled, so the judge gives no verdict)
MT_QUESTIONS = [(81, "writing", "Write a haiku about rain.", "Now make it about snow."),
                (82, "roleplay", "Greet me as a pirate.", "Now say goodbye."),
                (83, "humanities", "Name a Greek philosopher.", "Name one of his works.")]
MT_QUALITY = {"alpha": [(8, 7), (6, 6), (5, 9)], "beta": [(7, 7), (6, None), (3, 2)],
              "gamma": [(2, 4), (9, 8), (5, 8)]}
#: FastChat's judge-prompt names and placeholders, with short prompt texts of ours (the
#: tool picks the prompt by name and the verdict parser by ``output_format``)
_PAIR = "[User Question]\n{question}\n\n[The Start of Assistant A's Answer]\n{answer_a}\n" \
        "[The End of Assistant A's Answer]\n\n[The Start of Assistant B's Answer]\n" \
        "{answer_b}\n[The End of Assistant B's Answer]"
_PAIR_MT = "".join(f"<|The Start of Assistant {x}'s Conversation with User|>\n\n### User:\n"
                   f"{{question_1}}\n\n### Assistant {x}:\n{{answer_{x.lower()}_1}}\n\n"
                   f"### User:\n{{question_2}}\n\n### Assistant {x}:\n"
                   f"{{answer_{x.lower()}_2}}\n\n<|The End of Assistant {x}'s Conversation "
                   "with User|>\n\n" for x in "AB")
_SINGLE = "[Question]\n{question}\n\n[The Start of Assistant's Answer]\n{answer}\n" \
          "[The End of Assistant's Answer]"
_SINGLE_MT = "<|The Start of Assistant A's Conversation with User|>\n\n### User:\n" \
             "{question_1}\n\n### Assistant A:\n{answer_1}\n\n### User:\n{question_2}\n\n" \
             "### Assistant A:\n{answer_2}\n\n<|The End of Assistant A's Conversation with User|>"
JUDGE_PROMPTS = [
    {"name": name, "type": kind, "category": "general", "output_format": fmt,
     "system_prompt": "Judge the answers; reply [[A]], [[B]] or [[C]] (tie)." if
     kind == "pairwise" else "Rate the answer from 1 to 10 as [[rating]].",
     "prompt_template": template, "description": "regenerate.py"}
    for name, kind, fmt, template in (
        ("pair-v2", "pairwise", "[[A]]", _PAIR), ("pair-v2-multi-turn", "pairwise", "[[A]]", _PAIR_MT),
        ("pair-math-v1", "pairwise", "[[A]]", _PAIR),
        ("pair-math-v1-multi-turn", "pairwise", "[[A]]", _PAIR_MT),
        ("single-v1", "single", "[[rating]]", _SINGLE),
        ("single-v1-multi-turn", "single", "[[rating]]", _SINGLE_MT),
        ("single-math-v1", "single", "[[rating]]", _SINGLE),
        ("single-math-v1-multi-turn", "single", "[[rating]]", _SINGLE_MT))]


def make_fastchat(out: Path) -> None:
    """FastChat's own ``gen_judgment.py`` (``python -m fastchat.llm_judge.gen_judgment``, in
    a child) in ``single`` and ``pairwise-all`` modes for alpha, beta and gamma on
    :data:`MT_QUESTIONS`, judge ``gpt-4`` served by the local judge (``OPENAI_API_BASE``;
    FastChat 0.2.36 needs ``openai<1``); writes ``<out>/fastchat/gpt-4_single.jsonl`` and
    ``gpt-4_pair.jsonl``: both answer orders (g1, g2), turns 1 and 2, and the tool's own
    ``error`` / ``-1`` where the judge gave no verdict."""
    with local_judge() as url, tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        bench = tmp / "data" / "mini"
        (bench / "model_answer").mkdir(parents=True)
        (tmp / "data" / "judge_prompts.jsonl").write_text(
            "".join(json.dumps(p) + "\n" for p in JUDGE_PROMPTS))
        (bench / "question.jsonl").write_text("".join(
            json.dumps({"question_id": qid, "category": cat, "turns": [t1, t2]}) + "\n"
            for qid, cat, t1, t2 in MT_QUESTIONS))
        for model, qualities in MT_QUALITY.items():
            (bench / "model_answer" / f"{model}.jsonl").write_text("".join(
                json.dumps({"question_id": qid, "answer_id": f"{model}-{qid}", "model_id": model,
                            "choices": [{"index": 0, "turns": [
                                "GARBLE" if q is None else f"Answer [q={q}]" for q in quality]}],
                            "tstamp": 0.0}) + "\n"
                for (qid, *_), quality in zip(MT_QUESTIONS, qualities)))
        env = {**os.environ, "OPENAI_API_BASE": url, "OPENAI_API_KEY": "local"}
        for mode in ("single", "pairwise-all"):
            subprocess.run([sys.executable, "-m", "fastchat.llm_judge.gen_judgment",
                            "--bench-name", "mini", "--judge-file", "data/judge_prompts.jsonl",
                            "--mode", mode, "--model-list", *MT_QUALITY, "--parallel", "1"],
                           input="\n", text=True, check=True, env=env, cwd=tmp)
        (out / "fastchat").mkdir(exist_ok=True)
        for name in ("gpt-4_single.jsonl", "gpt-4_pair.jsonl"):
            shutil.copy(bench / "model_judgment" / name, out / "fastchat" / name)


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    tools = sys.argv[2].split(",") if len(sys.argv) > 2 else ["inspect", "lm_eval"]
    if "inspect" in tools:
        make_inspect(target)
    if "lm_eval" in tools:
        make_lm_eval(target)
    if "alpaca_eval" in tools:
        make_alpaca_eval(target)
    if "fastchat" in tools:
        make_fastchat(target)
    print(f"wrote fixtures under {target}")
