"""evalcert.progress.heartbeat: a step past its delay says what it is doing, and how long it
took; a short step says nothing (issue 21: audit --estimates ds ran 300 s in silence)."""

from __future__ import annotations

import io
import time

from evalcert.progress import heartbeat


def test_a_long_step_says_what_it_is_doing_and_when_it_is_done():
    err = io.StringIO()
    with heartbeat("Dawid-Skene on 10 decisions", after=0.05, every=0.1, stream=err):
        time.sleep(0.6)
    lines = err.getvalue().splitlines()
    assert lines[0].startswith("evalcert: Dawid-Skene on 10 decisions ... (")
    assert len(lines) >= 3                       # the first line, repeats, then "done in"
    assert lines[-1].startswith("evalcert: Dawid-Skene on 10 decisions: done in ")


def test_a_short_or_disabled_step_is_silent():
    err = io.StringIO()
    with heartbeat("quick", after=5.0, stream=err):
        pass
    with heartbeat("off", after=0.0, enabled=False, stream=err):
        time.sleep(0.1)
    assert err.getvalue() == ""


def test_an_error_in_the_step_still_stops_the_heartbeat():
    err = io.StringIO()
    try:
        with heartbeat("failing", after=0.05, stream=err):
            time.sleep(0.2)
            raise ValueError("boom")
    except ValueError:
        pass
    said = err.getvalue()
    time.sleep(0.2)
    assert err.getvalue() == said                # nothing printed after the block ended
