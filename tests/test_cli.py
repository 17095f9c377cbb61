"""The command line: fit and demo."""

from __future__ import annotations

import json

from evalcert.cli import main
from evalcert.datasets.demo import demo_scores


def test_demo_prints_fit_certificate_and_audit(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "certificate PASSED" in out and "binding upper box" in out
    assert "re-verified" in out and "MT-Bench" in out


def test_fit_writes_json(tmp_path, capsys):
    csv = tmp_path / "s.csv"
    demo_scores().to_frame().to_csv(csv)
    out_json = tmp_path / "fit.json"
    assert main(["fit", str(csv), "--box", "observed", "--json", str(out_json)]) == 0
    text = capsys.readouterr().out
    assert "ranking by theta" in text
    data = json.loads(out_json.read_text())
    assert data["box"] == "observed" and data["certificate"]["passed"] is True
    assert len(data["theta"]) == 30 and abs(sum(data["b"])) < 1e-9


def test_fit_long_format_and_bad_file(tmp_path, capsys):
    csv = tmp_path / "long.csv"
    demo_scores().to_long().to_csv(csv, index=False)
    assert main(["fit", str(csv), "--format", "long", "--solver", "osqp-direct"]) == 0
    bad = tmp_path / "bad.csv"
    bad.write_text("agent,x\na,2.5\n")
    assert main(["fit", str(bad)]) == 2
    assert "outside the bounds" in capsys.readouterr().err


# ---- issue 10: options, output paths, exit codes -------------------------------------------

import io  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture()
def scores_csv(tmp_path):
    csv = tmp_path / "s.csv"
    demo_scores().to_frame().to_csv(csv)
    return csv


def _one_line_error(capsys, *needles):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err
    return err


def test_fit_refuses_to_write_json_over_its_input(scores_csv, capsys):
    # Before: the JSON replaced the input file.
    before = scores_csv.read_bytes()
    assert main(["fit", str(scores_csv), "--json", str(scores_csv)]) == 2
    _one_line_error(capsys, "input file")
    assert scores_csv.read_bytes() == before
    assert main(["gini", str(scores_csv), "--json", str(scores_csv)]) == 2
    assert scores_csv.read_bytes() == before


def test_existing_output_needs_force(scores_csv, tmp_path, capsys):
    out = tmp_path / "fit.json"
    out.write_text("keep me")
    assert main(["fit", str(scores_csv), "--json", str(out)]) == 2
    _one_line_error(capsys, "--force")
    assert out.read_text() == "keep me"
    assert main(["fit", str(scores_csv), "--json", str(out), "--force"]) == 0
    assert json.loads(out.read_text())["certificate"]["passed"] is True


@pytest.mark.parametrize("argv, needle", [
    (["curl", "{csv}", "--plot", "{tmp}/fig.xyz"], "unsupported extension"),
    (["curl", "{csv}", "--plot", "{tmp}/nodir/fig.png"], "does not exist"),
    (["curl", "{csv}", "--json", "{tmp}/nodir/c.json"], "does not exist"),
    (["demo", "--json", "{tmp}/nodir/d.json"], "does not exist"),
    (["experiment", "sparse-recovery", "--scores", "{csv}", "--seeds", "2",
      "--json", "{tmp}/nodir/e.json"], "does not exist"),
])
def test_bad_output_paths_are_refused_before_any_work(argv, needle, scores_csv, tmp_path,
                                                      capsys, monkeypatch):
    # Before: the work ran first (experiment lost all its seeds), then a traceback.
    import evalcert.diagnostics.curl as curl_module
    import evalcert.diagnostics.experiments as experiments

    def no_work(*args, **kwargs):
        raise AssertionError("the work started before the output path was checked")

    monkeypatch.setattr(curl_module, "curl_test", no_work)
    monkeypatch.setattr(experiments, "sparse_recovery", no_work)
    argv = [a.format(csv=scores_csv, tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    _one_line_error(capsys, needle)


def test_read_only_folder_is_refused(scores_csv, tmp_path, capsys, monkeypatch):
    import os

    import evalcert.io.outputs

    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):  # root may write anywhere: deny it as a user would be
            real_access = os.access
            monkeypatch.setattr(evalcert.io.outputs.os, "access",
                                lambda p, mode: False if str(p) == str(folder)
                                else real_access(p, mode))
        assert main(["fit", str(scores_csv), "--json", str(folder / "x.json")]) == 2
        _one_line_error(capsys, "not writable")
    finally:
        folder.chmod(0o700)


@pytest.mark.parametrize("argv, needle", [
    (["gini", "{csv}", "--lam", "1e-3"], "--penalised"),
    (["gini", "{csv}", "--penalised", "--method", "rectangles"], "--method"),
    (["curl", "{csv}", "--rectangles", "0"], "--rectangles"),
    (["curl", "{csv}", "--rectangles", "1e12"], "--rectangles"),
    (["curl", "{csv}", "--seed", "-1"], "--seed"),
    (["experiment", "sparse-recovery", "--scores", "{csv}", "--seeds", "0"], "--seeds"),
    (["experiment", "sparse-recovery", "--scores", "{csv}", "--n-jobs", "0"], "--n-jobs"),
    (["experiment", "sparse-recovery", "--scores", "{csv}", "--C", "nan"], "--C"),
    (["experiment", "sparse-recovery", "--scores", "{csv}", "--holdout", "1"], "--holdout"),
    (["experiment", "sparse-recovery", "--scores", "{csv}", "--scheduler", "tcp://x:1"],
     "--backend dask"),
    (["experiment", "sparse-recovery", "--scores", "{csv}", "--regime", "row", "--alpha", "0.3",
      "--C", "1.6"], "--C does nothing"),
    (["experiment", "sparse-recovery", "--scores", "{csv}", "--C", "1.6", "--domain", "x"],
     "--labels"),
    (["fit", "{csv}", "--lam", "inf"], "--lam"),
    (["fit", "{csv}", "--lam", "-1"], "--lam"),
])
def test_bad_options_are_one_line_errors(argv, needle, scores_csv, capsys):
    # Before: tracebacks (curl --rectangles 0, --seed -1, --seeds 0, --n-jobs 0) or
    # silently accepted (gini --lam without --penalised, nan).
    assert main([a.format(csv=scores_csv) for a in argv]) == 2
    _one_line_error(capsys, needle)


def test_unreachable_scheduler_is_refused_within_seconds(scores_csv, capsys):
    pytest.importorskip("distributed")
    import socket
    import time

    with socket.socket() as sock:  # a free port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    start = time.perf_counter()
    status = main(["experiment", "sparse-recovery", "--scores", str(scores_csv), "--seeds", "1",
                   "--backend", "dask", "--scheduler", f"tcp://127.0.0.1:{port}"])
    assert status == 2 and time.perf_counter() - start < 30
    _one_line_error(capsys, "Dask scheduler")


def test_curl_prints_no_nan_prediction_columns(scores_csv, capsys):
    # Before: two all-NaN "(pred)" columns (the CLI passes no predictions).
    assert main(["curl", str(scores_csv), "--rectangles", "300"]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out.lower() and "(pred)" not in out
    assert "not computed" in out


def test_keyboard_interrupt_exits_130_quietly(monkeypatch, capsys):
    import evalcert.commands.demo as demo

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "run", interrupted)
    assert main(["demo"]) == 130
    assert "Traceback" not in capsys.readouterr().err


def test_closed_stdout_is_not_a_traceback(monkeypatch):
    import evalcert.commands.demo as demo

    class ClosedPipe(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(demo, "run", lambda args: print("ranking") or 0)
    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["demo"]) == 1


def test_argparse_errors_are_one_line(capsys):
    assert main(["fit"]) == 2
    _one_line_error(capsys, "scores")
    assert main(["no-such-verb"]) == 2
    _one_line_error(capsys, "invalid choice")


def test_every_accepted_plot_suffix_is_one_matplotlib_writes():
    # --plot suffixes are checked before any work without importing matplotlib; each one
    # accepted must be a format matplotlib can write here.
    from matplotlib.backend_bases import FigureCanvasBase

    from evalcert.commands._args import PLOT_SUFFIXES

    supported = {f".{s}" for s in FigureCanvasBase.get_supported_filetypes()}
    assert set(PLOT_SUFFIXES) <= supported
