"""App. B weighted-vote key: ``weighted_vote_key`` against a pandas groupby reference.

Simulated MT-Bench-like human votes (the public split has 3,355 votes over 80 questions x
15 model pairs x 2 turns; ``--votes`` scales it): experts and authors, about a fifth of the
votes cast with the models the other way round. The reference computes the same key with
one vectorised groupby (orientation by majority, sign of #a - #b, minimum votes); the two
keys are checked equal, then best-of-N CPU seconds of each, their ratio and the peak RSS
are printed.

    python benchmarks/bench_keys.py [--votes 3355 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import pandas as pd

from evalcert.logic.keys import weighted_vote_key

MODELS = ["gpt-4", "gpt-3.5-turbo", "claude-v1", "vicuna-13b-v1.2", "alpaca-13b", "llama-13b"]


def simulate(n_votes: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    pairs = [(a, b) for i, a in enumerate(MODELS) for b in MODELS[i + 1:]]
    n_q = max(80, n_votes // 40)
    q = rng.integers(81, 81 + n_q, n_votes)
    pair = rng.integers(0, len(pairs), n_votes)
    turn = rng.integers(1, 3, n_votes)
    swap = rng.random(n_votes) < 0.2
    ma = np.array([pairs[p][0] for p in range(len(pairs))])[pair]
    mb = np.array([pairs[p][1] for p in range(len(pairs))])[pair]
    judge = np.where(rng.random(n_votes) < 0.7, "expert_", "author_").astype(object) + \
        rng.integers(0, 60, n_votes).astype(str)
    label = rng.choice(np.array(["a", "b", "tie"]), n_votes, p=[0.35, 0.4, 0.25])
    flip = {"a": "b", "b": "a", "tie": "tie"}
    return pd.DataFrame({"question_id": q.astype(str), "model_a": np.where(swap, mb, ma),
                         "model_b": np.where(swap, ma, mb), "turn": turn.astype(str),
                         "judge": judge,
                         "label": [flip[v] if s else v for v, s in zip(label, swap)]})


def reference(votes: pd.DataFrame) -> pd.DataFrame:
    """The same key by pandas: majority orientation, sign of #a - #b, min votes 2 / 1."""
    lo = np.minimum(votes["model_a"], votes["model_b"])
    hi = np.maximum(votes["model_a"], votes["model_b"])
    sorted_order = votes["model_a"] == lo
    v = votes.assign(lo=lo, hi=hi, s=sorted_order.astype(int),
                     d=np.where(votes["label"] == "a", 1, np.where(votes["label"] == "b", -1, 0)),
                     panel=np.where(votes["judge"].str.startswith("expert"), "experts",
                                    "authors"))
    v["d"] = np.where(v["s"] == 1, v["d"], -v["d"])            # in sorted order
    g = ["turn", "question_id", "lo", "hi"]
    orient = v.groupby(g)["s"].agg(["sum", "size"])
    keep_sorted = orient["sum"] * 2 >= orient["size"]          # majority; tie -> sorted
    per = v.groupby(g + ["panel"])["d"].agg(["sum", "size"]).unstack("panel")
    out = pd.DataFrame(index=per.index)
    for p, m in (("experts", 2), ("authors", 1)):
        d = per[("sum", p)].fillna(0).to_numpy()
        n = per[("size", p)].fillna(0).to_numpy()
        d = np.where(keep_sorted.reindex(per.index).to_numpy(), d, -d)
        out[p] = np.where(n < m, "", np.where(d > 0, "a", np.where(d < 0, "b", "tie")))
    ks = keep_sorted.reindex(per.index).to_numpy()
    idx = per.index.to_frame(index=False)
    out = out.reset_index(drop=True)
    out.insert(0, "question_id", idx["question_id"])
    out.insert(1, "model_a", np.where(ks, idx["lo"], idx["hi"]))
    out.insert(2, "model_b", np.where(ks, idx["hi"], idx["lo"]))
    out.insert(3, "turn", idx["turn"])
    return out


def _canon(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["turn", "question_id", "model_a", "model_b"]).reset_index(
        drop=True)[["question_id", "model_a", "model_b", "turn", "experts", "authors"]]


def best_cpu(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--votes", type=int, nargs="+", default=[3355, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'votes':>10} {'comparisons':>11} {'evalcert CPU-s':>14} {'pandas CPU-s':>12} "
          f"{'ratio':>6}")
    for n in args.votes:
        votes = simulate(n)
        key = weighted_vote_key(votes)
        ours, ref = _canon(key.to_frame()), _canon(reference(votes))
        if not ours.equals(ref):
            raise SystemExit(f"keys differ at {n} votes")
        t_ours = best_cpu(lambda: weighted_vote_key(votes), args.repeat)
        t_ref = best_cpu(lambda: reference(votes), args.repeat)
        print(f"{n:>10,} {len(key.rows):>11,} {t_ours:>14.3f} {t_ref:>12.3f} "
              f"{t_ours / t_ref:>6.1f}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
