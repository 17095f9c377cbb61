"""Fig. 1 of paper 000: ECDF of curl magnitude ``|Delta|`` per link and domain.

Example
-------
>>> import numpy as np
>>> from evalcert.data import ScoreMatrix
>>> from evalcert.diagnostics.curl import curl_test
>>> S = ScoreMatrix.from_array(np.random.default_rng(0).uniform(-1, 1, (6, 9)))
>>> fig = plot_curl_ecdf({"demo": curl_test(S, n_rectangles=200)})
>>> len(fig.axes)
1
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from evalcert.diagnostics.curl import CurlResult  # noqa: E402
from evalcert.io.outputs import writing  # noqa: E402

__all__ = ["plot_curl_ecdf"]


def plot_curl_ecdf(results: Mapping[str, CurlResult], path: str | Path | None = None) -> Figure:
    """One panel per domain with the ECDF of ``|Delta|`` for every link (Fig. 1).

    Parameters
    ----------
    results : mapping of str to CurlResult
        Domain name to its :func:`~evalcert.diagnostics.curl.curl_test` result.
    path : str or Path, optional
        Save the figure there (format from the suffix).

    Examples
    --------
    >>> import numpy as np
    >>> from evalcert.data import ScoreMatrix
    >>> from evalcert.diagnostics.curl import curl_test
    >>> S = ScoreMatrix.from_array(np.random.default_rng(0).uniform(-1, 1, (6, 9)))
    >>> fig = plot_curl_ecdf({"a": curl_test(S, n_rectangles=200),
    ...                       "b": curl_test(S, n_rectangles=100)})  # path= saves it
    >>> [ax.get_title() for ax in fig.axes]
    ['a (200 rectangles)', 'b (100 rectangles)']
    >>> plt.close(fig)
    """
    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.4), squeeze=False)
    for ax, (name, res) in zip(axes[0], results.items()):
        for link in res.links:
            x, y = res.ecdf(link)
            ax.step(x, y, where="post", label=f"{link} (median {res.median[link]:.3f})")
        ax.set_title(f"{name} ({res.n_rectangles} rectangles)")
        ax.set_xlabel("|Delta|")
        ax.set_ylabel("ECDF")
        ax.legend(fontsize="small")
    fig.tight_layout()
    if path is not None:
        with writing(path) as tmp:
            fig.savefig(tmp)
    return fig
