"""sphinx-gallery scraper for matplotlib Figures built without pyplot.

evalcert's plot functions (:mod:`evalcert.plots`) build a ``Figure`` on an Agg canvas and
never touch pyplot, so sphinx-gallery's own matplotlib scraper does not see them. This
scraper saves every ``Figure`` that a tutorial binds to a global name, once, after the
code block that created it.

A pyplot figure (``fig, ax = plt.subplots()``) is the matplotlib scraper's: it saves and
closes it, and closing drops its canvas manager, so in a later block it would look like
one of ours. Every Figure seen is remembered, pyplot's too, so none is shown twice (the
IRT tutorial showed its Rasch figure again under "A 2PL fit").
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
        if not isinstance(value, Figure) or any(value is old for old in seen):
            continue
        seen.append(value)
        if value.canvas.manager is None:  # not pyplot's: the matplotlib scraper skips it
            path = next(block_vars["image_path_iterator"])
            value.savefig(path, dpi=110)
            paths.append(path)
    return figure_rst(paths, gallery_conf["src_dir"])


def _get_sg_image_scraper():  # noqa: ANN202 - sphinx-gallery looks this name up by module
    return agg_figure_scraper
