"""The package layout's rules (README "Layout"; shared ARCHITECTURE.md), checked on the source.

- no import circle among evalcert's modules, counting imports inside functions and under
  ``TYPE_CHECKING`` (a module-level graph from the AST, so nothing is imported to check it);
- domain packages work in memory: they never import ``io``, ``report`` or ``commands`` at
  module level;
- ``evalcert.solvers`` holds no IRT code beyond the deprecated ``solvers.irt`` alias, which
  warns and re-exports the old public names;
- no top-level subpackage holds more than 35% of the package's lines.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "evalcert"
DOMAIN = ("data", "solvers", "irt", "logic", "compare", "diagnostics")
FILE_LAYERS = ("io", "report", "commands")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(path: Path, name: str, modules: dict[str, Path]):
    """(target module, at module level?) for every import of an evalcert module in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top_level = {id(node) for node in tree.body}
    # statements under `if TYPE_CHECKING:` at module level count as module level too
    for node in tree.body:
        if isinstance(node, ast.If):
            top_level.update(id(n) for n in node.body)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            # `from pkg import sub` imports the submodule pkg.sub
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target.startswith("evalcert") and target != name:
                yield target, id(node) in top_level


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: {t for t, _ in _imports(path, name, modules)}
            for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt == "evalcert":        # the lazy top-level namespace, not a dependency
                continue
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_circle_counting_lazy_and_type_checking_imports():
    cycle = _cycle(_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_cycle_finder_finds_a_planted_circle():
    graph = {"evalcert.a": {"evalcert.b"}, "evalcert.b": {"evalcert.c"},
             "evalcert.c": {"evalcert.a"}}
    assert _cycle(graph) == ["evalcert.a", "evalcert.b", "evalcert.c", "evalcert.a"]


def test_domain_packages_never_import_files_layers_at_module_level():
    modules = _modules()
    offenders = []
    for name, path in modules.items():
        if name.split(".")[1:2] and name.split(".")[1] in DOMAIN:
            for target, module_level in _imports(path, name, modules):
                if module_level and target.split(".")[1:2] and target.split(".")[1] in FILE_LAYERS:
                    offenders.append(f"{name} -> {target}")
    assert not offenders, offenders


def test_solvers_holds_no_irt_code_beyond_the_alias():
    solvers = PACKAGE / "solvers"
    irt_files = sorted(p.relative_to(PACKAGE).as_posix() for p in solvers.rglob("*.py")
                       if "irt" in p.relative_to(solvers).parts)
    assert irt_files == ["solvers/irt/__init__.py"]
    assert len((PACKAGE / "solvers" / "irt" / "__init__.py").read_text().splitlines()) < 40


def test_no_subpackage_holds_more_than_35_percent_of_the_lines():
    lines: dict[str, int] = {}
    for path in PACKAGE.rglob("*.py"):
        top = path.relative_to(PACKAGE).parts[0]
        lines[top] = lines.get(top, 0) + len(path.read_text().splitlines())
    total = sum(lines.values())
    largest = max(lines, key=lines.get)
    assert lines[largest] <= 0.35 * total, f"{largest}: {lines[largest]} of {total} lines"


def test_old_irt_path_warns_and_reexports():
    code = ("import warnings; warnings.simplefilter('error', FutureWarning)\n"
            "try:\n    import evalcert.solvers.irt\n"
            "except FutureWarning as w:\n    print('warned', w)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("warned evalcert.solvers.irt moved to evalcert.irt")
    with pytest.warns(FutureWarning):
        sys.modules.pop("evalcert.solvers.irt", None)
        old = importlib.import_module("evalcert.solvers.irt")
    import evalcert.io.responses
    import evalcert.irt
    assert old.Rasch is evalcert.irt.Rasch and old.fit_irt is evalcert.irt.fit_irt
    assert old.read_responses is evalcert.io.responses.read_responses


def test_top_level_names_of_the_layout_issue():
    import evalcert
    for name in ("run_audit", "AuditReport", "alarm_full", "GradedResponse", "ThreePL",
                 "read_scores", "read_decisions", "read_responses"):
        assert callable(getattr(evalcert, name)), name
