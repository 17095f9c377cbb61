"""OSQP after PuLP/HiGHS: the native-library clash that segfaulted OSQP's setup."""

from __future__ import annotations

import subprocess
import sys


def test_osqp_setup_survives_pulp_loaded_through_evalcert():
    # PuLP 3.3 loads highspy with RTLD_GLOBAL at import; an OSQP extension
    # loaded after it crashed in setup(). evalcert imports osqp first.
    code = ("import evalcert.logic, pulp, osqp, numpy as np, scipy.sparse as sp\n"
            "s = osqp.OSQP()\n"
            "s.setup(P=sp.eye(3, format='csc'), q=np.ones(3), A=sp.eye(3, format='csc'),"
            " l=-np.ones(3), u=np.ones(3), verbose=False)\n"
            "print(round(float(s.solve().x[0]), 3))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert abs(float(out.stdout) + 1.0) < 1e-2  # OSQP default accuracy: x = -1
