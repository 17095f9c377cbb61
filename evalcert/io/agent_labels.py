"""The good/problematic partition of agents (paper 000, Sec. 5) read from a labels CSV.

The labels feed :func:`evalcert.diagnostics.metrics.partition_vector` and the ranking AUC.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from evalcert.errors import InputError
from evalcert.io.tables import check_file

__all__ = ["read_agent_labels"]


def read_agent_labels(path: str | Path, agents: Sequence[str],
                      domain: str | None = None) -> dict[str, bool]:
    """Read a good/problematic partition from a CSV with columns ``agent, good_faith``.

    ``good_faith`` is 1 (good: Faithful, Style) or 0 (problematic: Strategic,
    Low Effort); blank rows (e.g. the Reference agent) are left out. A
    ``domain`` column, when present, selects the rows of ``domain``; without
    ``domain`` the one whose agent names equal ``agents`` is used (as in
    ``derived/agent_labels.csv``).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "labels.csv"
    >>> _ = path.write_text("agent,good_faith\\nagent_0,1\\nagent_1,0\\nreference,\\n")
    >>> read_agent_labels(path, ["agent_0", "agent_1", "agent_2"])
    {'agent_0': True, 'agent_1': False}
    """
    check_file(Path(path))                     # not a FIFO or device: it could block forever
    frame = pd.read_csv(path)
    missing = {"agent", "good_faith"} - set(frame.columns)
    if missing:
        raise InputError(f"{path} lacks column(s) {sorted(missing)}; need agent, good_faith")
    if "domain" in frame.columns:
        if domain is None:
            hits = [name for name, g in frame.groupby("domain", sort=False)
                    if tuple(g["agent"].astype(str)) == tuple(agents)]
            if len(hits) != 1:
                raise InputError(f"cannot tell which domain of {path} matches these agents "
                                 f"(candidates {hits}); pass domain=")
            domain = hits[0]
        frame = frame[frame["domain"] == domain]
    frame = frame.dropna(subset=["good_faith"])
    unknown = sorted(set(frame["agent"].astype(str)) - set(agents))
    if unknown:
        raise InputError(f"labelled agents not in the score matrix: {unknown[:8]}")
    return {str(a): bool(int(g)) for a, g in zip(frame["agent"], frame["good_faith"])}
