"""Memory honesty: estimate what an allocation needs and refuse it before it fails.

Large allocations (a dense K x J copy of the scores, a solver's matrices) are
checked against the memory this process can still get, so a job that would die
in the allocator (or be killed by the kernel) is refused up front with the
numbers and the API to use instead.

``memory_available()`` reads ``MemAvailable`` from ``/proc/meminfo`` (Linux;
elsewhere ``os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")``) and
takes the minimum with the limits the user or a container set: the address-space
and data-segment limits (``ulimit -v``/``-d``, ``RLIMIT_AS``/``RLIMIT_DATA``,
minus this process's ``VmSize``/``VmData``) and the cgroup limit (``memory.max``
minus ``memory.current``, cgroup v2, the process's own group first;
``memory.limit_in_bytes`` minus ``memory.usage_in_bytes``, v1). No psutil.

Example
-------
>>> estimate_bytes((1000, 2000))            # a dense float64 1000 x 2000 matrix
16000000
>>> estimate_bytes(10, "int64", copies=3)
240
>>> require_memory(1024, "a tiny array")    # fits: returns the bytes needed
1024
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from evalcert.errors import InputError

try:
    import resource
except ImportError:  # not POSIX: no rlimits to honour
    resource = None  # type: ignore[assignment]

__all__ = ["estimate_bytes", "memory_available", "peak_rss", "require_memory", "format_bytes",
           "estimate_fit_from_file_bytes", "estimate_table_read_bytes", "count_fields",
           "USABLE_FRACTION"]

#: share of the available memory a single allocation may take by default
USABLE_FRACTION = 0.5


def format_bytes(n: float) -> str:
    """Human-readable size: ``format_bytes(3 * 2**30) == '3.0 GiB'``.

    Examples
    --------
    >>> format_bytes(512), format_bytes(1536), format_bytes(3 * 2 ** 30)
    ('512 B', '1.5 KiB', '3.0 GiB')
    """
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def estimate_bytes(shape: int | Sequence[int], dtype: str | np.dtype | type = "float64",
                   copies: int = 1) -> int:
    """Bytes of ``copies`` arrays of ``shape`` and ``dtype``.

    ``shape`` is an element count or a shape tuple; the product is taken in
    Python integers, so 10^4 x 10^6 does not overflow.

    Examples
    --------
    >>> estimate_bytes((1000, 2000)), estimate_bytes(10, "int32", copies=2)
    (16000000, 80)
    >>> format_bytes(estimate_bytes((10 ** 4, 10 ** 6)))
    '74.5 GiB'
    """
    count = int(shape) if np.isscalar(shape) else int(np.prod([int(s) for s in shape],
                                                               dtype=object))
    return count * np.dtype(dtype).itemsize * int(copies)


def _read_int(path: str | Path) -> int | None:
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


#: (limit, usage) files of cgroup v2 then v1, relative to the cgroup mount; the
#: process's own group (``/proc/self/cgroup``) is tried before the mount's root
CGROUP_FILES = (("memory.max", "memory.current"),
                ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes"))
CGROUP_ROOT = "/sys/fs/cgroup"


def _own_cgroup() -> str:
    """This process's cgroup v2 path (``0::/path`` in ``/proc/self/cgroup``), or ``""``."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:].strip().strip("/")
    except OSError:
        pass
    return ""


def _cgroup_headroom() -> int | None:
    """Smallest ``limit - usage`` over the cgroup files found (``max``: no limit)."""
    own = _own_cgroup()
    folders = [Path(CGROUP_ROOT) / own] if own else []
    folders.append(Path(CGROUP_ROOT))
    found = []
    for folder in folders:
        for limit_file, usage_file in CGROUP_FILES:
            limit, usage = _read_int(folder / limit_file), _read_int(folder / usage_file)
            if limit is not None and usage is not None and limit < 2 ** 60:
                found.append(max(limit - usage, 0))
    return min(found) if found else None


def _status_bytes(field: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (``VmSize``, ``VmData``) in bytes."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _rlimit_headroom() -> int | None:
    """Bytes left under ``RLIMIT_AS`` / ``RLIMIT_DATA`` (``ulimit -v`` / ``-d``), if set."""
    if resource is None:
        return None
    found = []
    for limit_name, field in (("RLIMIT_AS", "VmSize"), ("RLIMIT_DATA", "VmData")):
        which = getattr(resource, limit_name, None)
        if which is None:
            continue
        soft = resource.getrlimit(which)[0]
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        used = _status_bytes(field)
        found.append(max(int(soft) - (used or 0), 0))
    return min(found) if found else None


def peak_rss() -> int:
    """Peak resident set of this process in bytes: ``VmHWM`` on Linux.

    Not ``ru_maxrss``: after fork + exec (a spawned worker, a subprocess) Linux
    starts a child's ``ru_maxrss`` at its parent's resident size, so a small
    worker of a large parent reports the parent's peak. Elsewhere ``ru_maxrss``
    (kilobytes on Linux and BSD, bytes on macOS) is the fallback.

    Examples
    --------
    >>> peak_rss() > 0
    True
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def memory_available() -> int:
    """Bytes this process can still allocate without swapping or hitting a limit (best estimate).

    The minimum of the physical memory available (``MemAvailable``), the room left
    under ``RLIMIT_AS``/``RLIMIT_DATA`` (``ulimit -v``/``-d``) and the room left in
    the cgroup (``memory.max`` - ``memory.current``, or cgroup v1's files).

    Examples
    --------
    >>> n = memory_available()  # MemAvailable, capped by ulimit -v and the cgroup limit
    >>> isinstance(n, int) and n > 0
    True
    """
    avail = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = 2 ** 62      # unknown platform: do not refuse on a guess
    limits = [n for n in (_rlimit_headroom(), _cgroup_headroom()) if n is not None]
    return int(min([avail, *limits]))


def require_memory(nbytes: int, what: str, instead: str = "",
                   fraction: float = USABLE_FRACTION) -> int:
    """Return ``nbytes`` if it fits in ``fraction`` of the available memory, else refuse.

    Parameters
    ----------
    nbytes : int
        Estimated need (see :func:`estimate_bytes`).
    what : str
        What would be allocated, for the message (e.g. "a dense 10000 x 1000000 copy").
    instead : str
        The API or option to use instead, appended to the message.
    fraction : float
        Share of :func:`memory_available` one allocation may take.

    Raises
    ------
    InputError
        With the bytes needed, the bytes available and ``instead``.

    Examples
    --------
    >>> require_memory(1024, "a tiny array")  # fits: returns the bytes needed
    1024
    >>> require_memory(2 ** 60, "an exbibyte matrix", "use a sparse format")
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: an exbibyte matrix needs 1048576.0 TiB but only ...
    """
    avail = memory_available()
    if nbytes > fraction * avail:
        raise InputError(f"{what} needs {format_bytes(nbytes)} but only {format_bytes(avail)} "
                         f"of memory is available (at most {fraction:.0%} of it is used for one "
                         f"allocation)" + (f"; {instead}" if instead else ""))
    return int(nbytes)


#: Peak resident bytes per observed cell, per agent or item name, and of the
#: imports (Python, numpy, scipy, pandas, pyarrow), of reading a long Parquet
#: file and fitting it (``benchmarks/bench_scale.py``, which prints measured /
#: estimated for every case; ``tests/test_memory.py`` checks a measured run).
FIT_FROM_FILE_BYTES = {"cell": 160, "name": 250, "base": 150 * 2 ** 20}


def estimate_fit_from_file_bytes(n_cells: int, n_agents: int, n_items: int) -> int:
    """Peak resident memory of ``read_scores(long Parquet)`` then a native clipped-linear fit.

    ``base + cell * n_cells + name * (n_agents + n_items)`` with the constants of
    :data:`FIT_FROM_FILE_BYTES`, measured (the peak is the fit's: the scores,
    the Hessian with two entries a cell, the solver's vectors a cell, the
    certificate's O(n) vectors; the reader holds about 16 bytes a cell plus
    Arrow's batches). Measured peaks were 0.65-1.25 times the estimate from
    10^5 to 2 x 10^6 cells; ``tests/test_memory.py`` holds it to a factor 1.5.

    Examples
    --------
    >>> format_bytes(estimate_fit_from_file_bytes(20_000_000, 10_000, 1_000_000))
    '3.4 GiB'
    """
    c = FIT_FROM_FILE_BYTES
    return int(c["base"] + c["cell"] * int(n_cells) + c["name"] * (int(n_agents) + int(n_items)))


#: Peak bytes of reading a table with every cell a Python string
#: (:func:`evalcert.io.tables.read_table`): per byte of text (the bytes, the decoded
#: text, the cells' characters) and per field (a str object, its list and array
#: slots). Measured 18 times the file on a 25 MiB numeric CSV of 4 x 10^6 fields
#: (estimate 1.06 times the measured peak); a 2 GiB single cell needs ~6 GiB.
#: Parquet read as strings: ``per_cell`` (measured 128 on 2 x 10^6 rows x 3 columns); a
#: long Parquet scan (``read_scores(format="long")``): ``per_row`` (measured 98).
TABLE_READ_BYTES = {"byte": 3, "field": 100, "per_cell": 130, "per_row": 100}


def estimate_table_read_bytes(n_bytes: int, n_fields: int) -> int:
    """Peak bytes of reading ``n_bytes`` of CSV/TSV/JSON text holding ``n_fields`` fields.

    ``byte * n_bytes + field * n_fields`` with :data:`TABLE_READ_BYTES`.

    Examples
    --------
    >>> format_bytes(estimate_table_read_bytes(2 ** 31, 3))   # one 2 GiB cell
    '6.0 GiB'
    """
    c = TABLE_READ_BYTES
    return int(c["byte"] * int(n_bytes) + c["field"] * int(n_fields))


def count_fields(path: str | os.PathLike, chunk: int = 1 << 24) -> int:
    """Upper bound on the fields of a text table: its separators (``,`` tab newline) + 1.

    Read in chunks of ``chunk`` bytes, so counting never needs the file's size in memory.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as fh:
    ...     _ = fh.write("a,b\\n1,2\\n")
    >>> count_fields(fh.name)
    5
    """
    n = 1
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            n += block.count(b",") + block.count(b"\t") + block.count(b"\n")
    return n
