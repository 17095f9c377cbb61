"""sphinx-gallery scraper for matplotlib Figures built without pyplot.

evalcert's plot functions (:mod:`evalcert.plots`) build a ``Figure`` on an Agg canvas and
never touch pyplot, so sphinx-gallery's own matplotlib scraper does not see them. This
scraper saves every ``Figure`` that a tutorial binds to a global name, once, after the
code block that created it.
"""

from __future__ import annotations

from matplotlib.figure import Figure
from sphinx_gallery.scrapers import figure_rst

_SEEN: dict[str, list[Figure]] = {}


def agg_figure_scraper(block, block_vars, gallery_conf) -> str:  # noqa: ANN001 - gallery API
    """Save the Figures in the example's globals that no earlier block has saved."""
    seen = _SEEN.setdefault(block_vars["src_file"], [])
    paths = []
    for value in list(block_vars["example_globals"].values()):
        if isinstance(value, Figure) and value.canvas.manager is None \
                and not any(value is old for old in seen):
            seen.append(value)
            path = next(block_vars["image_path_iterator"])
            value.savefig(path, dpi=110)
            paths.append(path)
    return figure_rst(paths, gallery_conf["src_dir"])


def _get_sg_image_scraper():  # noqa: ANN202 - sphinx-gallery looks this name up by module
    return agg_figure_scraper
