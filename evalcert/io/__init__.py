"""Everything that reads or writes a user's file.

Domain packages (``data``, ``solvers``, ``irt``, ``logic``, ``compare``, ``diagnostics``) work in
memory and never import this package at module level; the readers here validate a file, check its
size before allocating, and hand the domain code validated in-memory objects.
"""

# The tools' readers are loaded on first use, so ``import evalcert.io`` stays light.
_LAZY = {"read_results": "detect", "read_judgments": "detect", "read_comparisons": "detect",
         "detect_format": "detect", "FORMATS": "detect", "ResultsRead": "results",
         "ReadReport": "results", "read_lm_eval": "lm_eval", "read_helm": "helm",
         "read_inspect": "inspect_logs", "read_eee": "eee", "write_eee": "eee",
         "read_py_irt": "py_irt", "write_py_irt": "py_irt",
         "read_fastchat_pair": "fastchat", "read_fastchat_single": "fastchat",
         "read_alpaca_eval": "alpaca_eval"}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"evalcert.io.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
