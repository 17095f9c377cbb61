"""Sphinx configuration of the evalcert documentation.

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (``pip install
".[docs]"``). The tutorials in ``docs/tutorials/`` are executed by sphinx-gallery during
the build and their figures captured; the CLI reference is generated from
``evalcert.cli.build_parser()`` by ``docs/_ext/cli_reference.py``; the API reference
from the docstrings (numpydoc).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import importlib  # noqa: E402

import evalcert  # noqa: E402
from public_names import documented_modules  # noqa: E402


def _materialise_lazy_exports() -> None:
    """Bind the lazily imported names (PEP 562 ``__getattr__``) of every documented module.

    autodoc lists a module's members with ``dir(module)``, which does not show names a
    lazy ``__init__`` imports on first use; binding them here (docs build only) lets
    ``automodule`` document ``__all__`` whatever the package's import strategy.
    """
    for name in sorted(documented_modules(HERE / "api")):
        module = importlib.import_module(name)
        if hasattr(module, "__getattr__"):
            for public in getattr(module, "__all__", ()):
                setattr(module, public, getattr(module, public))


_materialise_lazy_exports()

project = "evalcert"
author = "evalcert developers"
copyright = "evalcert developers"  # noqa: A001 - Sphinx's name
version = release = evalcert.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "cli_reference",
    "public_names",
    "report_examples",
]

exclude_patterns = ["_build", "**.ipynb_checkpoints", "tutorials/README.rst"]
templates_path: list[str] = []
root_doc = "index"
smartquotes = False  # keep "--flag" and quotes as typed

# -- API reference (autodoc + numpydoc) --------------------------------------
autosummary_generate = False
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# -- Tutorials (sphinx-gallery: executed at build time) -----------------------
sphinx_gallery_conf = {
    "examples_dirs": ["tutorials"],
    "gallery_dirs": ["auto_tutorials"],
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_signature": False,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("figure_scraper", "matplotlib"),  # ours first: pyplot figures still have a manager
    "matplotlib_animations": False,
    "reset_modules": ("matplotlib",),
    "write_computation_times": False,
}

# -- HTML --------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"evalcert {release}"
html_static_path = ["_static"]
html_css_files = ["evalcert.css"]
html_show_sourcelink = False
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # tutorials print wide tables: give them the width of the right-hand column
    "secondary_sidebar_items": {page: ["page-toc"] for page in
                                ("index", "getting_started", "certificates", "cli",
                                 "api/*", "papers/*")},
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"index": [], "getting_started": [], "certificates": []}
