"""CITATION.cff: valid CFF 1.2 structure citing the four papers evalcert implements, the same
ones the docs' paper pages cite."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_citation_cites_the_four_papers_of_the_docs():
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["message"] and cff["title"]
    assert cff["version"] == __import__("evalcert").__version__
    refs = cff["references"]
    assert len(refs) == 4 and all(r["title"] and r["authors"] and r["url"] for r in refs)
    urls = {r["url"] for r in refs}
    pages = [p for p in (ROOT / "docs" / "papers").glob("*.rst") if p.name != "index.rst"]
    assert len(pages) == 4
    for page in pages:
        citation = page.read_text(encoding="utf-8").split("**In one paragraph.**")[0]
        assert any(url in citation for url in urls), f"{page.name} cites none of {urls}"
        for arxiv in re.findall(r"arXiv:(\d{4}\.\d{4,5})", citation):
            assert any(arxiv in r["url"] for r in refs)
