"""Start-up of the CLI: building the parser imports no heavy module (issue 10, item 10).

The start-up time itself is measured in ``benchmarks/bench_cli.py``; these tests
pin the property that makes it fast, which does not depend on the machine.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("cvxpy", "pulp", "highspy", "matplotlib", "scipy.optimize", "pandas", "crowdkit",
         "osqp", "evalcert.benchmarking", "evalcert.irt", "distributed")


def _loaded_after(code: str) -> list[str]:
    probe = (f"import sys\n{code}\n"
             f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return [m for m in out.stdout.strip().split(",") if m]


def test_building_the_parser_imports_nothing_heavy():
    # Before: the parser imported cvxpy, pulp, pandas and scipy.optimize (2.2-2.5 s).
    assert _loaded_after("from evalcert.cli import build_parser\nbuild_parser()") == []


@pytest.mark.parametrize("argv", [["--help"], ["fit", "--help"], ["irt", "fit", "--help"],
                                  ["bench", "--help"], ["experiment", "sparse-recovery",
                                                        "--help"], ["audit", "--help"]])
def test_help_of_every_verb_imports_nothing_heavy(argv):
    code = ("import contextlib, io\nfrom evalcert.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main({argv!r}) == 0\n")
    assert _loaded_after(code) == []


def test_import_evalcert_solvers_irt_does_not_load_cvxpy():
    assert "cvxpy" not in _loaded_after("import evalcert.irt")


def test_osqp_still_loads_before_pulp_after_import_evalcert():
    # import evalcert no longer imports osqp eagerly (0.4 s); a meta-path hook loads it
    # just before pulp/highspy (tests/test_import_order.py runs the segfault case).
    code = ("import evalcert, sys\nassert 'osqp' not in sys.modules\nimport pulp\n"
            "names = list(sys.modules)\n"
            "assert names.index('osqp') < names.index('pulp'), names\n")
    _loaded_after(code)


def test_spelled_out_choice_lists_match_the_library():
    # The command modules spell their choice lists out so that the parser imports no
    # library module; they must stay equal to the library's.
    import evalcert.commands.bench as cbench
    import evalcert.commands.diagnostics as cdiag
    import evalcert.commands.fit as cfit
    import evalcert.commands.irt as cirt
    from evalcert.benchmarking import FAMILIES, PROFILES
    from evalcert.diagnostics.sampling import HOLDOUT_SCHEMES, REGIMES
    from evalcert.parallel import BACKENDS
    from evalcert.solvers.backends import CVXPY_SOLVERS, DIRECT_BACKENDS, QPSOLVERS_BACKENDS
    from evalcert.irt import MODELS

    assert cirt.MODELS == tuple(sorted(MODELS))
    assert cbench.FAMILIES == tuple(FAMILIES) and cbench.PROFILES == tuple(PROFILES)
    assert cdiag.REGIMES == tuple(REGIMES) and cdiag.BACKENDS == tuple(BACKENDS)
    assert cdiag.HOLDOUT_SCHEMES == tuple(HOLDOUT_SCHEMES)
    assert cfit.SOLVERS == (*DIRECT_BACKENDS, *CVXPY_SOLVERS, *QPSOLVERS_BACKENDS)
    from evalcert.solvers.clipped_linear import LAM_MAX
    assert cfit.MAX_LAM == LAM_MAX


def test_lazy_solvers_package_keeps_gini_projection_the_function():
    # Regression: with the lazy package, importing the submodule bound the module over
    # the function of the same name, so `from evalcert.solvers import gini_projection`
    # returned a module (the eager package returned the function).
    code = ("import inspect\nimport evalcert.solvers.gini_projection\n"
            "from evalcert.solvers import gini_projection\n"
            "import evalcert.solvers as s\n"
            "assert inspect.isfunction(gini_projection), gini_projection\n"
            "assert s.gini_projection is gini_projection\n")
    _loaded_after(code)
