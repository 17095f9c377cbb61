"""The documentation site builds with warnings as errors, tutorials executed.

CI installs the docs tools with the ``test`` extra, so this test runs there; without
them (or without the ``docs/`` folder, e.g. from an sdist) it skips with the reason.
The site is built from a copy of ``docs/`` in a temporary folder, so sphinx-gallery's
generated pages never land in the working tree.
"""

from __future__ import annotations

import html as html_module
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
TOOLS = ("sphinx", "pydata_sphinx_theme", "numpydoc", "sphinx_gallery")
TUTORIALS = sorted(p.stem for p in (DOCS / "tutorials").glob("plot_*.py"))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """Build the site once (``-W``: any warning fails the build); return the HTML folder."""
    missing = [t for t in TOOLS if importlib.util.find_spec(t) is None]
    if missing:
        pytest.skip(f"docs tools not installed ({', '.join(missing)}): "
                    "pip install '.[docs]' to build the site")
    if not (DOCS / "conf.py").is_file():
        pytest.skip(f"{DOCS} is absent (the docs are not shipped in the package)")
    root = tmp_path_factory.mktemp("docs")
    src = root / "src"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "auto_tutorials",
                                                             "__pycache__"))
    out = root / "html"
    env = {**os.environ, "MPLBACKEND": "Agg", "OPENBLAS_NUM_THREADS": "1",
           "PYTHONWARNINGS": "ignore::UserWarning:numpydoc.docscrape"}
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q",
                           "-b", "html", "-d", str(root / "doctrees"), str(src), str(out)],
                          capture_output=True, text=True, timeout=900, env=env, cwd=root)
    assert proc.returncode == 0, f"docs build failed:\n{proc.stderr[-6000:]}"
    return out


def test_build_has_every_page(site):
    for page in ("index", "getting_started", "certificates", "cli", "api/index",
                 "papers/index", "auto_tutorials/index"):
        assert (site / f"{page}.html").is_file(), page
    assert len(list((site / "papers").glob("*.html"))) >= 5  # index + one page per paper


def test_one_example_report_page_per_job(site):
    """docs/reports.rst links one page per job, made by ``--html`` at build time; each is a
    self-contained page under 2 MB."""
    text = (site / "reports.html").read_text(encoding="utf-8")
    for job in ("fit", "audit", "irt", "curl", "bench", "compare", "rank", "cat"):
        page = site / "reports" / f"{job}.html"
        assert f'href="reports/{job}.html"' in text, job
        html = page.read_text(encoding="utf-8")
        assert 'id="verdict"' in html and "<script" not in html
        assert page.stat().st_size < 2_000_000, (job, page.stat().st_size)


@pytest.mark.parametrize("tutorial", TUTORIALS)
def test_tutorial_executed_with_figure(site, tutorial):
    html = (site / "auto_tutorials" / f"{tutorial}.html").read_text(encoding="utf-8")
    assert "sphx-glr-script-out" in html, f"{tutorial}: no captured output"
    images = re.findall(r'src="[^"]*_images/sphx_glr_' + tutorial + r'_\d+\.png"', html)
    assert images, f"{tutorial}: no figure captured"


@pytest.mark.parametrize("tutorial", TUTORIALS)
def test_tutorial_shows_each_figure_once_and_output_fits_the_page(site, tutorial):
    """Issue 21 item 9: the IRT tutorial showed its Rasch figure again under "A 2PL fit"
    and its fit summary printed 125-character lines, clipped on the page."""
    html = (site / "auto_tutorials" / f"{tutorial}.html").read_text(encoding="utf-8")
    images = sorted(set(re.findall(r'_images/(sphx_glr_' + tutorial + r'_\d+\.png)', html)))
    contents = [(site / "_images" / name).read_bytes() for name in images]
    assert len(set(contents)) == len(contents), f"{tutorial}: a figure is shown twice"
    for block in re.findall(r'sphx-glr-script-out.*?<pre>(.*?)</pre>', html, flags=re.S):
        text = html_module.unescape(re.sub(r"<[^>]+>", "", block))
        assert max(map(len, text.splitlines()), default=0) <= 100, text[:400]


def test_figure_scraper_never_saves_a_pyplot_figure_twice(tmp_path):
    """A pyplot figure loses its canvas manager when the matplotlib scraper closes it; in a
    later block it must not look like a new Figure of ours."""
    pytest.importorskip("sphinx_gallery")
    import importlib.util as iu

    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    spec = iu.spec_from_file_location("figure_scraper", DOCS / "_ext" / "figure_scraper.py")
    scraper = iu.module_from_spec(spec)
    spec.loader.exec_module(scraper)
    paths = iter(tmp_path / f"img_{k}.png" for k in range(10))
    example = {"fig": plt.figure()}
    block_vars = {"src_file": str(tmp_path / "plot_x.py"), "example_globals": example,
                  "image_path_iterator": paths}
    conf = {"src_dir": str(tmp_path)}
    assert scraper.agg_figure_scraper(None, block_vars, conf) == ""  # pyplot's: not ours
    plt.close(example["fig"])                                       # as matplotlib's scraper does
    assert scraper.agg_figure_scraper(None, block_vars, conf) == ""  # the next block
    example["ours"] = Figure()                                       # evalcert.plots' kind
    assert "img_0.png" in scraper.agg_figure_scraper(None, block_vars, conf)
    assert scraper.agg_figure_scraper(None, block_vars, conf) == ""


def test_there_is_a_tutorial_per_job():
    assert len(TUTORIALS) >= 4
    jobs = ("certificate", "audit", "irt", "backend")
    assert all(any(job in t for t in TUTORIALS) for job in jobs), TUTORIALS


def test_cli_reference_lists_every_verb_and_flag(site):
    import argparse

    from docutils.nodes import make_id

    from evalcert.cli import build_parser

    html = (site / "cli.html").read_text(encoding="utf-8")

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield path + (name,), sub
                    yield from walk(sub, path + (name,))

    verbs = list(walk(build_parser(), ("evalcert",)))
    assert verbs
    for path, sub in verbs:
        assert f'id="{make_id("cli-" + "-".join(path[1:]))}"' in html, path
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue  # -h/--help is on every verb; the reference leaves it out
            for flag in action.option_strings:
                if flag.startswith("--"):
                    assert flag in html, (path, flag)


def test_api_reference_links_every_public_name(site):
    import evalcert

    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in evalcert._PUBLIC:
        assert re.search(rf'href="[^"]+#evalcert\.[\w.]*\b{name}"', html), name


def test_every_documented_command_line_parses():
    """Each ``evalcert ...`` line in the docs is accepted by the real parser (no rot)."""
    import shlex

    from evalcert.cli import build_parser

    if not DOCS.is_dir():
        pytest.skip(f"{DOCS} is absent")
    lines = []
    for path in [*DOCS.rglob("*.rst"), *(DOCS / "tutorials").glob("*.py")]:
        if "_build" in path.parts or "auto_tutorials" in path.parts:
            continue
        for text in path.read_text(encoding="utf-8").splitlines():
            # indented lines only: code blocks in .rst, "#    evalcert ..." in tutorials
            match = re.match(r"^(?: {3,}|# {2,})evalcert ((?:--?\w|[a-z]).*)$", text)
            if match and not re.search(r"[\[|]|\.\.\.", match.group(1)):
                lines.append((path.name, match.group(1)))
    assert len(lines) >= 8, lines
    for name, args in lines:
        try:
            build_parser().parse_args(shlex.split(args))
        except SystemExit as exit_:
            assert exit_.code == 0, f"{name}: 'evalcert {args}' does not parse"


def test_cli_reference_expands_help_like_argparse(monkeypatch):
    """%(default)s, %(choices)s and %% in help strings read as ``--help`` shows them."""
    import argparse

    pytest.importorskip("sphinx")
    monkeypatch.syspath_prepend(str(DOCS / "_ext"))
    from cli_reference import _argument_row

    parser = argparse.ArgumentParser()
    lam = parser.add_argument("--lam", type=float, default=1e-6,
                              help="ridge weight (default %(default)s; 100%% sure)")
    order = parser.add_argument("--m", choices=["1", "2"], default="1",
                                help="order, one of %(choices)s")
    assert "ridge weight (default 1e-06; 100% sure)" in _argument_row(lam).astext()
    assert "order, one of 1, 2 (choices: 1, 2; default: 1)" in _argument_row(order).astext()
