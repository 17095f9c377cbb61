"""The agents x items score matrix in memory (no file is read in this package).

:class:`ScoreMatrix` (:mod:`evalcert.data.matrix`) stores only the observed cells;
:mod:`evalcert.data.cells` holds the algorithms on cell coordinates (row-major counting sort,
duplicates, bipartite components) and :mod:`evalcert.data.frames` turns in-memory tables into
cells. Files are read by :mod:`evalcert.io` (``evalcert.io.scores.read_scores``).
"""

from evalcert.data.cells import ConnectivityReport, bipartite_components
from evalcert.data.frames import MISSING_TOKENS
from evalcert.data.matrix import ScoreMatrix

__all__ = ["ScoreMatrix", "ConnectivityReport", "bipartite_components", "MISSING_TOKENS"]
