"""Deprecated alias of :mod:`evalcert.irt` (kept for one release).

The IRT family moved to ``evalcert.irt`` (engines in ``evalcert.irt.estimation``; response and
item tables in ``evalcert.io.responses`` and ``evalcert.io.irt_tables``). Importing this module
warns once with a :class:`FutureWarning`; its public names are the old ones, re-exported.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

warnings.warn("evalcert.solvers.irt moved to evalcert.irt (readers to evalcert.io); the old "
              "path will be removed in the next release", FutureWarning, stacklevel=2)

#: the old public names that moved out of the IRT package (everything else is evalcert.irt's)
_MOVED = {"estimate_tables": "evalcert.io.irt_tables", "read_item_table": "evalcert.io.irt_tables",
          "read_responses": "evalcert.io.responses",
          "responses_from_long": "evalcert.io.responses", "ResponseTable": "evalcert.io.responses"}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        return getattr(importlib.import_module(_MOVED[name]), name)
    return getattr(importlib.import_module("evalcert.irt"), name)
