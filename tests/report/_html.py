"""A small reader of evalcert's pages for the tests (the standard library's HTML parser):
tables by id (each cell's text and ``data-value``), facts by label, every id's text, and
every URL-bearing attribute."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

VOID = {"meta", "img", "br", "hr", "input", "link", "source", "wbr", "col", "area", "base"}


class Page(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, dict[str, Any]] = {}
        self.facts: dict[str, tuple[str, str | None]] = {}
        self.texts: dict[str, str] = {}
        self.urls: list[tuple[str, str, str]] = []      # (tag, attribute, value)
        self.tags: list[str] = []
        self._open: list[tuple[str, str | None]] = []    # (tag, id) of open elements
        self._ids: dict[str, list[str]] = {}
        self._table: dict[str, Any] | None = None
        self._cell: list[str] | None = None
        self._cell_value: str | None = None
        self._row: list[tuple[str, str | None]] | None = None
        self._dt: list[str] | None = None
        self._dd: list[str] | None = None
        self._dd_value: str | None = None
        self._label = ""
        self.feed(text)
        self.close()
        self.texts = {k: " ".join("".join(v).split()) for k, v in self._ids.items()}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append(tag)
        for name in ("src", "href", "srcset", "action", "poster", "data", "style"):
            if a.get(name):
                self.urls.append((tag, name, a[name] or ""))
        if tag not in VOID:
            self._open.append((tag, a.get("id")))
        if a.get("id"):
            self._ids.setdefault(a["id"], [])
        if tag == "table":
            self._table = {"headers": [], "rows": []}
            self.tables[a.get("id") or f"table-{len(self.tables)}"] = self._table
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th"):
            self._cell, self._cell_value = [], a.get("data-value")
        elif tag == "dt":
            self._dt = []
        elif tag == "dd":
            self._dd, self._dd_value = [], a.get("data-value")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append((" ".join("".join(self._cell).split()), self._cell_value))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            if self._row and all(v is None for _, v in self._row) and not self._table["rows"] \
                    and not self._table["headers"]:
                self._table["headers"] = [t for t, _ in self._row]
            else:
                self._table["rows"].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None
        elif tag == "dt" and self._dt is not None:
            self._label, self._dt = "".join(self._dt).strip(), None
        elif tag == "dd" and self._dd is not None:
            self.facts[self._label] = (" ".join("".join(self._dd).split()), self._dd_value)
            self._dd = None
        while self._open:
            open_tag, _ = self._open.pop()
            if open_tag == tag:
                break

    def handle_data(self, data: str) -> None:
        for _, ident in self._open:
            if ident:
                self._ids[ident].append(data)
        for buf in (self._cell, self._dt, self._dd):
            if buf is not None:
                buf.append(data)

    def column(self, table: str, header: str) -> list[tuple[str, str | None]]:
        t = self.tables[table]
        k = t["headers"].index(header)
        return [row[k] for row in t["rows"]]


URL = re.compile(r"""(?:https?:)?//[^\s"'<>)]+""", re.I)
CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)", re.I)


def external_references(text: str, page: Page) -> list[str]:
    """Everything in the page that a browser could fetch from elsewhere: http(s) or
    protocol-relative URLs in attributes or CSS ``url()``, ``@import``, and any ``src`` or
    ``href`` that is not a ``data:`` URI or an in-page ``#`` link."""
    found = []
    for tag, name, value in page.urls:
        if name in ("src", "srcset", "data", "poster") and not value.startswith("data:"):
            found.append(f"<{tag} {name}={value[:80]}>")
        if name == "href" and not value.startswith("#"):
            found.append(f"<{tag} href={value[:80]}>")
        if name == "style" and URL.search(value):
            found.append(f"<{tag} style=...{URL.search(value).group(0)}>")
    for match in CSS_URL.finditer(text):
        if not match.group(1).startswith(("data:", "#")):
            found.append(f"url({match.group(1)[:80]})")
    if re.search(r"@import|@font-face", text, re.I):
        found.append("@import or @font-face")
    return found
