"""matplotlib figures as ``data:`` URIs: SVG (text kept as text) when small, PNG otherwise.

A page embeds its figures so that it opens offline and alone. SVG stays sharp at any zoom
but grows with the points drawn (an ECDF of 20,000 rectangles is megabytes); past
:data:`MAX_SVG_BYTES` the figure is embedded as a PNG instead.

Examples
--------
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> import matplotlib.pyplot as plt
>>> fig, ax = plt.subplots()
>>> _ = ax.plot([0, 1], [0, 1])
>>> figure_uri(fig).startswith("data:image/svg+xml;base64,")
True
"""

from __future__ import annotations

import base64
import io
from typing import Any

import numpy as np

__all__ = ["figure_uri", "MAX_SVG_BYTES", "new_figure"]

#: larger SVGs are embedded as PNG
MAX_SVG_BYTES = 150_000
#: PNG resolution (dots per inch)
PNG_DPI = 110


def new_figure(width: float = 6.4, height: float = 3.6) -> Any:
    """A matplotlib ``Figure`` outside pyplot (nothing to close, no display needed).

    Examples
    --------
    >>> fig = new_figure(4, 3)
    >>> ax = fig.subplots()
    >>> figure_uri(fig).startswith("data:image/svg+xml")
    True
    """
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


def _palette(png: bytes) -> bytes:
    """The PNG with at most 256 colours when that is smaller (a plot has few colours;
    antialiased text and colour maps make thousands of near-duplicates that compress badly:
    a 58 x 58 difference matrix went from 540 to 150 kB).

    Examples
    --------
    >>> fig = new_figure(3, 2)
    >>> _ = fig.subplots().imshow(np.random.default_rng(0).random((40, 40)))
    >>> buffer = io.BytesIO(); fig.savefig(buffer, format="png")
    >>> len(_palette(buffer.getvalue())) <= len(buffer.getvalue())
    True
    """
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        small = image.convert("RGB").quantize(256, dither=Image.Dither.NONE)
        out = io.BytesIO()
        small.save(out, format="PNG", optimize=True)
    return out.getvalue() if len(out.getvalue()) < len(png) else png


def figure_uri(fig: Any, *, close: bool = True) -> str:
    """Encode ``fig`` as a ``data:`` URI (SVG, or PNG when the SVG would exceed
    :data:`MAX_SVG_BYTES`); close the figure unless ``close=False``.

    Examples
    --------
    >>> import numpy as np
    >>> fig = new_figure()
    >>> _ = fig.subplots().plot(np.random.default_rng(0).normal(size=50_000))  # many points
    >>> figure_uri(fig).startswith("data:image/png;base64,")   # too big as SVG: a PNG
    True
    """
    import matplotlib
    import matplotlib.pyplot as plt

    try:
        buffer = io.BytesIO()
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "evalcert"}):
            fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
        kind, data = "svg+xml", buffer.getvalue()
        if len(data) > MAX_SVG_BYTES:
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png", bbox_inches="tight", dpi=PNG_DPI,
                        metadata={"Software": None})
            kind, data = "png", _palette(buffer.getvalue())
    finally:
        if close:
            plt.close(fig)
    return f"data:image/{kind};base64,{base64.b64encode(data).decode('ascii')}"
