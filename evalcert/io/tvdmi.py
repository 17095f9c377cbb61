"""The per-item JSON files of ``llm-peer-prediction`` (``tvd_mi_example_<j>.json``).

Those files store one ``f(P) - f(Q)`` per pair with failed calls already written as 0, so the
reader keeps that convention (the failures are only counted, from ``metadata``); the result is
a :class:`evalcert.diagnostics.tvdmi.TVDMIExamples` in memory.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evalcert.diagnostics.tvdmi import TVDMIExamples
from evalcert.errors import InputError
from evalcert.io._json import load_json
from evalcert.io.tables import check_file

__all__ = ["read_tvdmi_examples"]


def read_tvdmi_examples(folder: str | Path) -> TVDMIExamples:
    """Read ``tvd_mi_example_<j>.json`` files of one domain (README of the shared data).

    Examples
    --------
    Two items of a three-agent domain, written to a temporary folder:

    >>> import json, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     for j in (0, 1):
    ...         _ = (Path(tmp) / f"tvd_mi_example_{j}.json").write_text(json.dumps(
    ...             {"condition_keys": ["a", "b", "c"], "example_idx": j,
    ...              "tvd_mi_matrix": (np.ones((3, 3)) - np.eye(3)).tolist()}))
    ...     ex = read_tvdmi_examples(tmp)
    >>> ex.agents, ex.items, ex.pairwise.shape, ex.n_calls, ex.n_failed_calls
    (('a', 'b', 'c'), ('item_0', 'item_1'), (2, 3, 3), 24, 0)
    """
    files = sorted(Path(folder).glob("tvd_mi_example_*.json"),
                   key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    if not files:
        raise InputError(f"no tvd_mi_example_<item>.json files in {folder}")
    agents: tuple[str, ...] | None = None
    items, mats = [], []
    n_calls = n_failed = 0
    for path in files:
        check_file(path)                       # not a FIFO or device: it could block forever
        data = load_json(path, path.read_text(encoding="utf-8"))
        keys = tuple(data["condition_keys"])
        if agents is None:
            agents = keys
        elif keys != agents:
            raise InputError(f"{path.name}: condition_keys differ from the first file's")
        K = len(keys)
        meta = data.get("metadata", {})
        made = int(meta.get("num_p_comparisons", K * (K - 1))) + int(
            meta.get("num_q_comparisons", K * (K - 1)))
        n_calls += 2 * K * (K - 1)
        n_failed += 2 * K * (K - 1) - made
        items.append(f"item_{int(data['example_idx'])}")
        mats.append(np.asarray(data["tvd_mi_matrix"], dtype=float))
    return TVDMIExamples(agents, tuple(items), np.stack(mats), n_calls, n_failed)
