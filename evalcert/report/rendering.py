"""Render a :class:`~evalcert.report.page.Page` to one self-contained HTML file with Jinja2.

The templates (``evalcert/report/templates/*.html``) carry the layout and the CSS; nothing
is fetched when the page opens (no script, no font, no stylesheet link: figures are
``data:`` URIs). Every rule of the CSS is scoped under ``.evalcert-page``, so
:func:`render_fragment` (what a notebook shows through ``_repr_html_``) does not restyle the
notebook around it.

Examples
--------
>>> from evalcert.report.page import Page, Provenance, Section, Table, Verdict
>>> page = Page("demo", Verdict("all good", "ok"),
...             (Section("numbers", (Table(("name", "value"), (("a", 0.123456),)),)),),
...             Provenance(command="evalcert demo"))
>>> html = render(page)
>>> html.startswith("<!DOCTYPE html>"), 'data-value="0.123456"' in html, "0.1235" in html
(True, True, True)
"""

from __future__ import annotations

import math
import os
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

from evalcert.report.page import Page

__all__ = ["render", "render_fragment", "write_html", "format_value", "exact_value",
           "heat_class"]


def format_value(value: Any) -> str:
    """A cell as shown: floats with 4 decimals (scientific outside [1e-3, 1e6)), fractions
    as ``p/q (0.xxxx)``, booleans as yes/no, missing values as an en dash.

    Examples
    --------
    >>> format_value(0.123456), format_value(2e-7), format_value(Fraction(2, 3))
    ('0.1235', '2.000e-07', '2/3 (0.6667)')
    >>> format_value(float("nan")), format_value(True), format_value(12)
    ('–', 'yes', '12')
    """
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Fraction):
        return (str(value) if value.denominator == 1
                else f"{value.numerator}/{value.denominator} ({float(value):.4f})")
    if isinstance(value, float):
        if not math.isfinite(value):
            return "–" if math.isnan(value) else ("∞" if value > 0 else "−∞")
        return f"{value:.4f}" if value == 0 or 1e-3 <= abs(value) < 1e6 else f"{value:.3e}"
    return str(value)


def exact_value(value: Any) -> str | None:
    """The full value of a numeric cell for its ``data-value`` attribute (``repr`` of a
    float, ``p/q`` of a fraction); ``None`` for text.

    Examples
    --------
    >>> exact_value(0.1), exact_value(Fraction(2, 3)), exact_value("a"), exact_value(3)
    ('0.1', '2/3', None, '3')
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, int):
        return str(value)
    return None


def heat_class(level: Any) -> str:
    """The CSS class (with a leading space) of a heat-map cell's level, -4..4; ``""`` for
    ``None`` (a plain cell).

    Examples
    --------
    >>> heat_class(3), heat_class(-1), heat_class(0), heat_class(None)
    (' heat-p3', ' heat-n1', ' heat-0', '')
    """
    if level is None:
        return ""
    level = int(level)
    return f" heat-{'p' if level > 0 else 'n' if level < 0 else ''}{abs(level)}"


@lru_cache(maxsize=1)
def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("evalcert.report", "templates"),
                             autoescape=jinja2.select_autoescape(("html",), default=True),
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True)
    env.filters["show"] = format_value
    env.filters["exact"] = exact_value
    env.filters["heat"] = heat_class
    env.tests["table"] = lambda b: type(b).__name__ == "Table"
    env.tests["figure"] = lambda b: type(b).__name__ == "Figure"
    env.tests["facts"] = lambda b: type(b).__name__ == "Facts"
    env.tests["text"] = lambda b: type(b).__name__ == "Text"
    return env


def render(page: Page) -> str:
    """The whole HTML document of ``page`` (a string; :func:`write_html` saves it).

    Examples
    --------
    >>> from evalcert.report.page import Page, Provenance, Verdict
    >>> html = render(Page("demo <1>", Verdict("fine", "ok"), (), Provenance()))
    >>> "<title>demo &lt;1&gt;</title>" in html, "<script" in html   # names are escaped
    (True, False)
    """
    return _environment().get_template("page.html").render(page=page, fragment=False)


def render_fragment(page: Page) -> str:
    """The page as one ``<div>`` with its scoped ``<style>``: what a notebook displays.

    Examples
    --------
    >>> from evalcert.report.page import Page, Provenance, Verdict
    >>> html = render_fragment(Page("demo", Verdict("fine"), (), Provenance()))
    >>> html.lstrip().startswith('<div class="evalcert-page"'), "<html" in html
    (True, False)
    """
    return _environment().get_template("page.html").render(page=page, fragment=True)


def write_html(page: Page, path: str | os.PathLike[str]) -> Path:
    """Write ``render(page)`` to ``path`` (UTF-8); return the path.

    The caller checks the path first (the CLI: :func:`evalcert.io.outputs.check_outputs`);
    the file is written like every output of evalcert, through
    :func:`evalcert.io.outputs.writing` (a temporary file beside it, then moved into place,
    so a link planted after the check is not followed and a failed write leaves nothing).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from evalcert.report.page import Page, Provenance, Verdict
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = write_html(Page("demo", Verdict("fine"), (), Provenance()),
    ...                      Path(tmp) / "page.html")
    ...     out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    True
    """
    from evalcert.io.outputs import writing

    out = Path(path)
    text = render(page)
    with writing(out) as tmp:           # a temporary file moved into place (the CLI's policy)
        tmp.write_text(text, encoding="utf-8")
    return out
