"""``evalcert rank`` against Evalica and choix on an Arena-size battle log (issue 24).

A simulated log the size of the Chatbot Arena's (129 models, 1.8e6 battles, 15% ties,
Parquet) is written once; then, each in its own process, timed from start to exit with
its peak RSS (``os.wait4``):

* ``evalcert rank FILE`` - the whole CLI run: read + fit + certificate;
* Evalica 0.4 (Rust core): ``pandas.read_parquet`` + ``evalica.bradley_terry`` on the
  battles (ties as half a win, its default);
* choix: ``pandas.read_parquet`` + ``choix.ilsr_pairwise`` on (winner, loser) tuples
  (a tie entered once each way and a decisive battle twice: the same likelihood as half
  a win each way), and ``choix.ilsr_pairwise_dense`` on a win matrix aggregated with
  pandas (choix's fastest route);
* ``evalcert rank FILE --bootstrap 1000 --n-jobs 2`` - 1,000 warm-started refits.

Peers run in the Python of a throwaway venv (``--peer-python``, default
``/work/venvs/compare/bin/python``; ``python -m venv V && V/bin/pip install evalica choix
pandas pyarrow``). Each peer's centred log-strengths are compared with evalcert's.

Run: ``python benchmarks/bench_rank.py [--battles 1800000] [--boot 1000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from evalcert.datasets.battles import simulate_battles
from evalcert.results import format_table

DEFAULT_PEER = "/work/venvs/compare/bin/python"

EVALICA = """
import json, sys, numpy as np, pandas as pd, evalica
df = pd.read_parquet(sys.argv[1], columns=["model_a", "model_b", "winner"])
w = df["winner"].astype(str).map({"model_a": evalica.Winner.X, "model_b": evalica.Winner.Y,
                                  "tie": evalica.Winner.Draw, "tie (bothbad)": evalica.Winner.Draw})
res = evalica.bradley_terry(df["model_a"].astype(str).tolist(), df["model_b"].astype(str).tolist(),
                            w.tolist())
s = np.log(np.asarray(res.scores, float)); s -= s.mean()
json.dump(dict(zip(map(str, res.scores.index), s.tolist())), open(sys.argv[2], "w"))
"""

CHOIX = """
import json, sys, numpy as np, pandas as pd, choix
df = pd.read_parquet(sys.argv[1], columns=["model_a", "model_b", "winner"])
models = sorted(set(df["model_a"].astype(str)) | set(df["model_b"].astype(str)))
idx = {m: k for k, m in enumerate(models)}
a = df["model_a"].astype(str).map(idx).to_numpy(); b = df["model_b"].astype(str).map(idx).to_numpy()
w = df["winner"].astype(str).to_numpy()
win_a, win_b, tie = w == "model_a", w == "model_b", np.char.startswith(w.astype(str), "tie")
pairs = np.concatenate([np.column_stack([a[win_a], b[win_a]])] * 2
                       + [np.column_stack([b[win_b], a[win_b]])] * 2
                       + [np.column_stack([a[tie], b[tie]]), np.column_stack([b[tie], a[tie]])])
s = choix.ilsr_pairwise(len(models), [tuple(p) for p in pairs.tolist()], tol=1e-10)
s = s - s.mean()
json.dump(dict(zip(models, s.tolist())), open(sys.argv[2], "w"))
"""

CHOIX_DENSE = """
import json, sys, numpy as np, pandas as pd, choix
df = pd.read_parquet(sys.argv[1], columns=["model_a", "model_b", "winner"])
models = sorted(set(df["model_a"].astype(str)) | set(df["model_b"].astype(str)))
idx = {m: k for k, m in enumerate(models)}
df = df.assign(a=df["model_a"].astype(str).map(idx), b=df["model_b"].astype(str).map(idx),
               w=df["winner"].astype(str))
g = df.groupby(["a", "b", "w"], observed=True).size().reset_index(name="n")
M = np.zeros((len(models), len(models)))
for a, b, w, n in g.itertuples(index=False):
    if w == "model_a": M[a, b] += n
    elif w == "model_b": M[b, a] += n
    else: M[a, b] += n / 2; M[b, a] += n / 2
s = choix.ilsr_pairwise_dense(M, tol=1e-10)
s = s - s.mean()
json.dump(dict(zip(models, s.tolist())), open(sys.argv[2], "w"))
"""


def run(argv: list[str]) -> tuple[float, float, int, float]:
    """Wall seconds, peak RSS (MB), exit status and CPU seconds (user + system, children
    included) of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    err = proc.stderr.read().decode()
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code:
        print(f"  {' '.join(argv[:3])} ... failed ({code}): {err.strip()[-300:]}",
              file=sys.stderr)
    return elapsed, usage.ru_maxrss / 1024, code, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=129)
    parser.add_argument("--battles", type=int, default=1_800_000)
    parser.add_argument("--ties", type=float, default=0.15)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--peer-python", default=DEFAULT_PEER)
    parser.add_argument("--skip-choix-tuples", action="store_true",
                        help="skip choix.ilsr_pairwise on 3.6e6 tuples (the slowest run)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = tmp / "battles.parquet"
        frame, _ = simulate_battles(args.models, args.battles, tie_rate=args.ties, seed=0)
        frame.to_parquet(data)
        del frame
        print(f"simulated log: {args.models} models, {args.battles} battles, ties "
              f"{args.ties:.0%}, {data.stat().st_size / 2**20:.0f} MB Parquet")
        cli = [sys.executable, "-m", "evalcert", "rank", str(data), "--no-progress"]
        ours_json = tmp / "ours.json"
        times = [run(cli + ["--json", str(ours_json), "--force"]) for _ in range(2)]
        ours_t, ours_rss = min(t[0] for t in times), max(t[1] for t in times)
        ours_cpu = min(t[3] for t in times)
        ours = json.loads(ours_json.read_text())
        theta = {r["model"]: r["score"] for r in ours["ranks"]}
        rows = [["evalcert rank (read + fit + certificate)", ours_t, 1.0, ours_cpu, 1.0,
                 f"{ours_rss:.0f}", "-"]]
        peers = [("Evalica bradley_terry (pandas read + fit)", EVALICA),
                 ("choix ilsr_pairwise_dense (pandas read + aggregate + fit)", CHOIX_DENSE)]
        if not args.skip_choix_tuples:
            peers.append(("choix ilsr_pairwise (pandas read + fit on tuples)", CHOIX))
        fastest = fastest_cpu = np.inf
        if Path(args.peer_python).exists():
            for name, code in peers:
                out = tmp / "peer.json"
                t, rss, status, cpu = run([args.peer_python, "-c", code, str(data), str(out)])
                if status:
                    rows.append([name, "failed", "-", "-", "-", "-", "-"])
                    continue
                peer = json.loads(out.read_text())
                gap = max(abs(peer[m] - theta[m]) for m in theta)
                rows.append([name, t, t / ours_t, cpu, cpu / ours_cpu, f"{rss:.0f}", f"{gap:.1e}"])
                fastest, fastest_cpu = min(fastest, t), min(fastest_cpu, cpu)
        else:
            print(f"no peer python at {args.peer_python}: peers skipped")
        boot_json = tmp / "boot.json"
        t, rss, _, cpu = run(cli + ["--bootstrap", str(args.boot), "--n-jobs",
                                    str(args.n_jobs), "--json", str(boot_json)])
        boot = json.loads(boot_json.read_text())
        rows.append([f"evalcert rank --bootstrap {args.boot} --n-jobs {args.n_jobs}", t, "-",
                     cpu, "-", f"{rss:.0f}", "-"])
        print(f"load average before the table: {os.getloadavg()[0]:.1f}")
        print(format_table(rows, ["run", "wall s", "wall ratio", "CPU s", "CPU ratio",
                                  "peak RSS MB", "max |score - evalcert|"]))
        print(f"certificate: ||grad|| = {ours['certificate']['grad_norm']:.2e}, "
              f"||theta - theta*|| <= {ours['certificate']['distance_bound']:.2e}, "
              f"proves optimum: {ours['certificate']['proves_optimum']}")
        print(f"bootstrap: {boot['n_boot']} refits in {boot['seconds']['bootstrap']:.1f} s "
              f"({boot['n_boot_failed']} resamples without an MLE)")
        if np.isfinite(fastest):
            print(f"fastest peer / evalcert = {fastest / ours_t:.1f}x wall, "
                  f"{fastest_cpu / ours_cpu:.1f}x CPU (target >= 5x)")


if __name__ == "__main__":
    main()
