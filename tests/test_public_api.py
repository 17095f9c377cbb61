"""The public API: one obvious place for every family, lazily imported, all documented."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import re
import subprocess
import sys
import warnings

import pytest

import evalcert

#: Subpackages whose ``__all__`` is public API.
PACKAGES = ("evalcert.solvers", "evalcert.irt", "evalcert.solvers.backends",
            "evalcert.logic", "evalcert.diagnostics", "evalcert.benchmarking")
HEAVY = ("cvxpy", "pulp", "scipy.optimize", "matplotlib", "pandas")
#: Every module of the package (``__main__`` runs the CLI when imported): each public
#: function and class in a module's ``__all__`` has an "Examples" section in its own
#: docstring, run by ``--doctest-modules``.
#: (``evalcert.solvers.irt``, the deprecated alias, is left out: it warns on import and
#: defines nothing; tests/test_layout.py checks it.)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)      # walk_packages imports the alias
    EXAMPLED = ("evalcert", *sorted(m.name for m in pkgutil.walk_packages(evalcert.__path__,
                                                                           "evalcert.")
                                    if m.name.rsplit(".", 1)[-1] != "__main__"
                                    and m.name != "evalcert.solvers.irt"))


def test_import_evalcert_stays_light():
    code = ("import sys, evalcert\n"
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"import evalcert loaded {out.stdout.strip()}"


def test_dir_lists_the_public_names():
    assert set(evalcert.__all__) <= set(dir(evalcert))
    assert not [n for n in dir(evalcert) if n.startswith("_") and n != "__version__"]
    assert "Rasch" in dir(evalcert) and "ClippedLinear" in dir(evalcert)


@pytest.mark.parametrize("name", [n for n in evalcert.__all__ if n != "__version__"])
def test_every_public_name_resolves_with_a_docstring_example(name):
    obj = getattr(evalcert, name)
    assert not inspect.ismodule(obj), f"evalcert.{name} is a module"
    doc = inspect.getdoc(obj) or ""
    assert doc, f"evalcert.{name} has no docstring"
    module = importlib.import_module(evalcert._PUBLIC[name])
    assert getattr(module, name) is obj
    if not (inspect.isclass(obj) and issubclass(obj, BaseException)):
        assert _has_example(obj), f"evalcert.{name}: no docstring example"


def _has_example(obj) -> bool:
    """An example in the object's docstring, or one in its module's docstring using it."""
    if ">>>" in (inspect.getdoc(obj) or ""):
        return True
    module_doc = inspect.getmodule(obj).__doc__ or ""
    examples = [line for line in module_doc.splitlines()
                if line.strip().startswith((">>>", "..."))]
    return any(re.search(rf"\b{obj.__name__}\b", line) for line in examples)


def _has_examples_section(obj) -> bool:
    """A numpydoc "Examples" section with at least one ``>>>`` line in the object's docstring."""
    doc = inspect.getdoc(obj) or ""
    section = re.search(r"^Examples\n-{8,}\n(.*?)(?=^\S[^\n]*\n-{3,}$|\Z)", doc, re.M | re.S)
    return section is not None and ">>>" in section.group(1)


def test_every_module_is_checked_for_examples():
    assert len(EXAMPLED) > 50 and "evalcert.irt.holdout" in EXAMPLED
    assert "evalcert.__main__" not in EXAMPLED


@pytest.mark.parametrize("module", EXAMPLED)
def test_every_public_object_has_an_example(module):
    mod = importlib.import_module(module)
    objects = [getattr(mod, n) for n in getattr(mod, "__all__", ())]
    public = [o for o in objects if (inspect.isclass(o) or inspect.isfunction(o))
              and not (inspect.isclass(o) and issubclass(o, BaseException))]
    assert [f"{o.__module__}.{o.__qualname__}" for o in public
            if not _has_examples_section(o)] == []


def test_estimator_families_from_one_place():
    from evalcert import (BetaIRT, ClippedLinear, JEIRT, LogisticFactor, Rasch, ThreePL,
                          TwoPL, alarm, alarm_m2, gini_projection)
    from evalcert.logic import alarm as logic_alarm
    from evalcert.irt import Rasch as irt_rasch

    assert Rasch is irt_rasch and alarm is logic_alarm
    for cls in (Rasch, TwoPL, ThreePL, LogisticFactor, BetaIRT, JEIRT, ClippedLinear):
        assert hasattr(cls, "fit"), cls
    assert all(callable(f) and not inspect.ismodule(f) for f in (alarm, alarm_m2,
                                                                 gini_projection))


def test_subpackages_are_attributes():
    assert evalcert.logic is importlib.import_module("evalcert.logic")
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        evalcert.nope  # noqa: B018


def _package_names():
    for package in PACKAGES:
        for name in importlib.import_module(package).__all__:
            yield package, name


@pytest.mark.parametrize("package, name", list(_package_names()))
def test_subpackage_all_names_resolve(package, name):
    # Regression: in a lazy package, importing a submodule named like a public function
    # (evalcert.solvers.gini_projection) bound the module over the function. Import the
    # same-named submodule first, when there is one, so the test sees that order.
    if importlib.util.find_spec(f"{package}.{name}") is not None:
        importlib.import_module(f"{package}.{name}")
    obj = getattr(importlib.import_module(package), name)
    assert not inspect.ismodule(obj), f"{package}.{name} is a module"



@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0, 0.0])
def test_every_tolerance_is_validated(bad):
    # issue 21: tol=nan was accepted (a nan tolerance never stops a loop, or always does)
    import numpy as np

    from evalcert.diagnostics.baselines import NuclearNormCompletion
    from evalcert.errors import InputError
    from evalcert.irt import Rasch, TwoPL
    from evalcert.solvers.backends.base import SolveSettings
    from evalcert.solvers.certificates import Tolerance

    Y = (np.random.default_rng(0).random((20, 15)) < 0.5).astype(float)
    cases = [lambda: Rasch(method="map", max_iter=bad).fit(Y),
             lambda: NuclearNormCompletion(tol=bad).fit(None)]
    if bad != 0.0:         # tol = 0: run to the rounding limit; lam = 0: no prior; exact
        cases += [lambda: Rasch(method="map", tol=bad).fit(Y),
                  lambda: TwoPL(method="map", tol=bad).fit(Y),
                  lambda: Rasch(method="map", lam=bad).fit(Y),
                  lambda: Tolerance(abs_tol=bad), lambda: Tolerance(rel_tol=bad)]
    if bad != float("inf"):                          # no time limit, allowed
        cases.append(lambda: SolveSettings(time_limit=bad))
    for make in cases:
        with pytest.raises(InputError):
            make()
