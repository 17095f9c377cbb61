"""``evalcert irt fit|holdout|score|itemfit|compare|anchors|cat``: IRT on a response file.

Every verb reads its file through :func:`evalcert.io.responses.read_responses`
(wide or long; a missing header row, duplicate names and non-0/1 cells are
refused; missing cells are counted on stderr), checks its options against the
chosen model and method and its output paths before any fit, and calls one
library function. Building the parser imports no estimator (SciPy's optimisers):
the model names and per-model defaults are spelled out here and checked against
the library in ``tests/irt/test_cli_irt.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from pathlib import Path

from evalcert.commands._args import (HTML_SUFFIXES, PLOT_SUFFIXES, add_html_option,
                                     add_output_flags, finite_float,
                                     nonnegative_float, nonnegative_int, open_probability,
                                     positive_float, positive_int, probability)
from evalcert.commands._finish import finish as _finish
from evalcert.commands._sources import RESULTS_FORMATS, add_source_options
from evalcert.errors import InputError

# Model names only, so that building the parser imports no estimator (SciPy's optimisers):
# tests/test_startup.py checks them against evalcert.irt.MODELS.
MODELS = ("2pl", "3pl", "3plu", "4pl", "beta", "factor", "graded", "je", "m2pl", "rasch")

#: per-model defaults shown in --help (tests/irt/test_cli_irt.py checks the library)
DEFAULTS = {
    "rasch": {"method": "jml", "lam": 1.0, "max_iter": 2000, "tol": 1e-6},
    "2pl": {"method": "mml", "lam": 1.0, "max_iter": 2000, "tol": 1e-6, "slope_prior": 4.0},
    "factor": {"method": "map", "lam": 0.1, "max_iter": 5000, "tol": 1e-6, "dims": 2},
    "beta": {"method": "map", "lam": 0.1, "max_iter": 5000, "tol": 1e-6},
    "je": {"method": "map", "lam": 0.1, "max_iter": 5000, "tol": 1e-3, "dims": 16},
    "3pl": {"method": "mml", "max_iter": 2000, "tol": 1e-5, "slope_prior": 4.0},
    "graded": {"method": "mml", "max_iter": 3000, "tol": 1e-5, "slope_prior": 4.0},
    "4pl": {"method": "mml", "max_iter": 2000, "tol": 1e-5, "slope_prior": 4.0},
    "3plu": {"method": "mml", "max_iter": 2000, "tol": 1e-5, "slope_prior": 4.0},
    "m2pl": {"method": "mml", "max_iter": 2000, "tol": 1e-4, "dims": 2},
}
#: methods each model supports (checked against the estimators' ``methods``)
METHODS = {"rasch": ("jml", "cml", "mml", "map", "mcmc"), "2pl": ("jml", "map", "mml"),
           "factor": ("map", "jml"), "beta": ("jml", "map"), "je": ("map",), "3pl": ("mml",),
           "graded": ("mml",), "4pl": ("mml",), "3plu": ("mml",), "m2pl": ("mml",)}
#: response kind each model reads (``read_responses(kind=...)``)
KINDS = {"beta": "unit", "graded": "ordinal"}
#: estimator options that only some models/methods take: flag -> (models, methods or None)
_SCOPED = {"optimizer": (("rasch",), ("jml", "map")),
           "quadrature": (("rasch", "2pl"), ("mml",)),
           "lam": (MODELS, ("map", "mcmc")),
           "dims": (("factor", "je", "m2pl"), None),
           "item_embeddings": (("je",), None),
           "guessing": (("3pl", "4pl"), None),
           "density": (("2pl", "3pl", "4pl", "3plu"), ("mml",))}
#: options passed only when given, to estimators whose ``__init__`` takes them
_PASSED = {"max_iter": "max_iter", "tol": "tol", "slope_prior": "slope_prior",
           "progress": "verbose"}
SCORING = ("ml", "wle", "map", "eap")


def _defaults_text(key: str) -> str:
    return ", ".join(f"{m} {d[key]:g}" if not isinstance(d[key], str) else f"{m} {d[key]}"
                     for m, d in DEFAULTS.items() if key in d)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


# -- reading and options ----------------------------------------------------------------------
def _read(args: argparse.Namespace, path: str | None = None, kind: str | None = None):
    from evalcert.io.responses import read_responses
    from evalcert.progress import heartbeat

    path = path or args.responses
    fmt = args.format
    if fmt not in ("wide", "long"):
        from evalcert.io.detect import detect_format, kind_of

        tool = detect_format(path) if fmt == "auto" else fmt
        if tool is not None and kind_of(tool) != "results":
            raise InputError(f"{path} holds {tool} {kind_of(tool)}, not per-item responses; "
                             "IRT reads results (lm-eval, helm, inspect, eee, py-irt)")
        if tool is not None:
            return _read_tool(args, path, tool, kind or KINDS.get(args.model, "binary"))
        fmt = "wide"
    with heartbeat(f"reading {path}"):                       # says so past 3 s
        table = read_responses(path, format=fmt,
                               kind=kind or KINDS.get(args.model, "binary"),
                               header=not args.no_header, transpose=args.transpose,
                               model_col=args.model_col, item_col=args.item_col,
                               response_col=args.response_col,
                               names=False if args.no_names else None)
    args.read_description = table.describe()
    print(f"evalcert: {table.describe()}", file=sys.stderr)
    return table.table


def _read_tool(args: argparse.Namespace, path: str, tool: str, kind: str):
    """A tool's results (lm-eval, HELM, Inspect, EEE, py-irt) as a response table."""
    from evalcert.commands._sources import source_options
    from evalcert.io.detect import read_results
    from evalcert.io.responses import responses_from_long

    if args.format == "auto":
        print(f"evalcert: {path}: read as {tool} (detected; pick --format to change)",
              file=sys.stderr)
    read = read_results(path, tool, **source_options(args))
    print(f"evalcert: {read.summary()}".replace("\n", "\nevalcert: "), file=sys.stderr)
    args.read_description = read.summary().replace("\n", "; ")
    long = read.to_long()
    table = responses_from_long(long, model_col="model", item_col="item", response_col="score",
                                kind=kind, where=str(path)).table
    return table


@contextlib.contextmanager
def _warnings_as_lines():
    """Print the library's warnings (excluded lines, clipped cells) as one stderr line each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            for w in caught:
                print(f"evalcert: warning: {w.category.__name__}: {w.message}", file=sys.stderr)


def _check_scope(args: argparse.Namespace, method: str) -> None:
    """Refuse options that do nothing for the chosen model and method (before reading)."""
    for option, (models, methods) in _SCOPED.items():
        if getattr(args, option, None) is None:
            continue
        if args.model not in models or (methods is not None and method not in methods):
            where = f"--model {' or '.join(models)}" if args.model not in models else \
                f"--method {' or '.join(methods)}"
            raise InputError(f"{_flag(option)} does nothing for --model {args.model} "
                             f"--method {method}; it applies to {where}")


def _check_dims(args: argparse.Namespace, n_items: int) -> None:
    dims = getattr(args, "dims", None)
    if dims is not None and dims > n_items:
        raise InputError(f"--dims {dims} is above the number of items ({n_items}); use "
                         f"--dims <= {n_items}")


def _estimator(args: argparse.Namespace):
    """Build the estimator from the options, or refuse them (before reading any file)."""
    import inspect

    from evalcert.irt import MODELS as CLASSES, make_estimator

    cls = CLASSES[args.model]
    method = getattr(args, "method", None) or DEFAULTS[args.model]["method"]
    if method not in cls.methods:
        raise InputError(f"--model {args.model} supports --method {', '.join(cls.methods)}; "
                         f"got {method}")
    _check_scope(args, method)
    dims, embeddings = getattr(args, "dims", None), getattr(args, "item_embeddings", None)
    if args.model == "je" and not embeddings:
        raise InputError("--model je needs --item-embeddings FILE.npy (n_items x D)")
    accepted = inspect.signature(cls.__init__).parameters
    options: dict = {}
    for flag, name in _PASSED.items():
        value = getattr(args, flag, None)
        if value is None or value is False:
            continue
        if name not in accepted:
            raise InputError(f"{_flag(flag)} is not supported by --model {args.model} "
                             "(its estimator has no such setting)")
        if flag == "slope_prior" and method != "mml":
            raise InputError(f"--slope-prior applies to --method mml; --method {method} "
                             "ignores it")
        options[name] = value
    for name in ("lam", "optimizer", "quadrature", "guessing", "density"):
        if getattr(args, name, None) is not None:
            options[name] = getattr(args, name)
    if getattr(args, "no_se", False):
        options["standard_errors"] = False
    if embeddings:
        options["item_embeddings"] = _load_embeddings(embeddings)
    return make_estimator(args.model, method, dims=dims, **options)


def _load_embeddings(path: str):
    import numpy as np

    from evalcert.io.tables import check_file
    check_file(Path(path))                     # not a FIFO or device: it could block forever
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"--item-embeddings {path}: not a readable .npy array without "
                         f"pickles ({str(exc).splitlines()[0][:100]})") from None


def _outputs(args: argparse.Namespace, inputs: list, names: tuple[str, ...] = ()) -> dict:
    """Check every output path up front; ``--out-dir`` is created if its parent exists."""
    from evalcert.io.outputs import check_outputs

    paths = {"--json": getattr(args, "json", None), "--plot": getattr(args, "plot", None),
             "--html": getattr(args, "html", None)}
    suffixes = {"--json": (".json",), "--plot": PLOT_SUFFIXES, "--html": HTML_SUFFIXES}
    out_dir = getattr(args, "out_dir", None)
    if out_dir:
        folder = Path(out_dir)
        if folder.is_symlink():
            if not args.follow_symlinks:
                raise InputError(f"--out-dir {folder} is a symbolic link; evalcert does not "
                                 "write through links: give the folder itself, or pass "
                                 "--follow-symlinks")
            folder = Path(os.path.realpath(folder))
        if folder.exists() and not folder.is_dir():
            raise InputError(f"--out-dir {folder} is a file; give a folder")
        if not folder.parent.is_dir():
            raise InputError(f"--out-dir {folder}: its parent folder does not exist")
        try:
            folder.mkdir(exist_ok=True)
        except OSError as exc:              # read-only or special file system
            raise InputError(f"--out-dir {folder}: cannot create it ({exc.strerror}); "
                             "give a folder you can write to") from None
        for name in names:
            paths[f"--out-dir ({name})"] = str(folder / name)
            suffixes[f"--out-dir ({name})"] = (Path(name).suffix,)
    members = {k for k in paths if k.startswith("--out-dir")}
    check_outputs({k: v for k, v in paths.items() if v and k not in members}, inputs=inputs,
                  force=args.force, suffixes={k: v for k, v in suffixes.items() if paths.get(k)})
    if members:
        check_outputs({k: paths[k] for k in members}, inputs=inputs, force=args.force,
                      suffixes={k: suffixes[k] for k in members}, within=folder)
    return paths


def _write_tables(args: argparse.Namespace, est, table) -> None:
    from evalcert.io.irt_tables import estimate_tables, ranking_text, write_estimate_tables

    if args.out_dir:
        models, _, paths = write_estimate_tables(est, table, args.out_dir)
    else:
        models, _ = estimate_tables(est, table)
    what = "ability, standard error" if est.standard_errors else "ability"
    print(f"\nranking of models ({what}):\n" + ranking_text(models))
    if args.out_dir:
        print(f"\nwrote {paths[0]} and {paths[1]}")


# -- verbs --------------------------------------------------------------------------------------
def _quiet(verb):
    """Run a verb with the library's warnings printed as one line each."""
    def run(args: argparse.Namespace) -> int:
        with _warnings_as_lines():
            return verb(args)

    run.__name__ = verb.__name__
    return run


def _fit(args: argparse.Namespace) -> int:
    if args.plot and args.model not in ("rasch", "2pl", "3pl"):
        raise InputError("--plot draws the item curves of rasch, 2pl or 3pl fits")
    est = _estimator(args)                              # options refused before reading
    _outputs(args, [args.responses], ("models.csv", "items.csv"))
    table = _read(args)
    _check_dims(args, table.shape[1])
    est.fit(table)
    print(est.result_.summary())
    _write_tables(args, est, table)

    def plot(path):
        from evalcert.plots.irt import plot_item_curves
        from evalcert.irt.information import item_parameters

        plot_item_curves(item_parameters(est), abilities=est.abilities_, path=path)

    return _finish(args, est.result_, plot=plot,
                   page={"responses": table, "estimator": est, "source": args.responses,
                         "fmt": args.format, "read": args.read_description})


def _holdout(args: argparse.Namespace) -> int:
    from evalcert.irt import holdout_evaluate

    est = _estimator(args)
    _outputs(args, [args.responses])
    table = _read(args)
    _check_dims(args, table.shape[1])
    res = holdout_evaluate(est, table, args.scheme,
                           frac=args.frac, exposure=args.exposure, seed=args.seed)
    print(res.summary())
    return _finish(args, res)


def _score(args: argparse.Namespace) -> int:
    from evalcert.io.irt_tables import read_item_table
    from evalcert.irt.scoring import score_responses

    _outputs(args, [args.items, args.responses])
    params, prior = read_item_table(args.items)
    prior = (prior[0] if args.prior_mean is None else args.prior_mean,
             prior[1] if args.prior_sd is None else args.prior_sd)
    table = _read(args, kind="binary")
    res = score_responses(params, table, args.method, prior=prior)
    print(res.summary())
    return _finish(args, res)


def _itemfit(args: argparse.Namespace) -> int:
    from evalcert.irt.itemfit import item_fit

    if KINDS.get(args.model, "binary") != "binary":
        raise InputError(f"itemfit computes infit/outfit of 0/1 responses; --model {args.model} "
                         "fits other responses")
    est = _estimator(args)
    _outputs(args, [args.responses])
    table = _read(args)
    _check_dims(args, table.shape[1])
    est.fit(table)
    res = item_fit(est, table, threshold=args.threshold)
    print(res.summary())

    def plot(path):
        from evalcert.plots.irt import plot_item_fit

        plot_item_fit(res, path=path)

    return _finish(args, res, plot=plot)


def _compare(args: argparse.Namespace) -> int:
    from evalcert.irt.compare import likelihood_ratio_test

    general = _estimator(args)                          # 2pl mml with --slope-prior/--progress
    restricted = _estimator(argparse.Namespace(**{**vars(args), "model": "rasch",
                                                  "slope_prior": None}))
    _outputs(args, [args.responses])
    table = _read(args, kind="binary")
    res = likelihood_ratio_test(restricted.fit(table), general.fit(table))
    print(res.summary())
    return _finish(args, res)


def _anchors(args: argparse.Namespace) -> int:
    from evalcert.irt.anchors import evaluate_anchors

    if args.model not in ("rasch", "2pl", "3pl"):
        raise InputError(f"anchors need item curves: use --model rasch, 2pl or 3pl, not "
                         f"{args.model}")
    est = _estimator(args)
    _outputs(args, [args.responses])
    table = _read(args)
    _check_dims(args, table.shape[1])
    if args.n_anchors >= table.shape[1]:
        raise InputError(f"--n-anchors {args.n_anchors} must be below the number of items "
                         f"({table.shape[1]})")
    res = evaluate_anchors(est, table,
                           n_anchors=args.n_anchors, selection=args.selection,
                           test_frac=args.test_frac, seed=args.seed, scoring=args.scoring)
    print(res.summary())

    def plot(path):
        from evalcert.plots.irt import plot_anchor_estimates

        plot_anchor_estimates(res, path=path)

    return _finish(args, res, plot=plot)


def _cat(args: argparse.Namespace) -> int:
    from evalcert.irt.cat import simulate_cat

    if args.model not in ("rasch", "2pl", "3pl"):
        raise InputError(f"adaptive testing needs item curves: use --model rasch, 2pl or 3pl, "
                         f"not {args.model}")
    if args.items and args.holdout is not None:
        raise InputError("--holdout splits the response file to calibrate a bank; with "
                         "--items every model of the file is tested: drop one of them")
    if not args.items and (args.prior_mean is not None or args.prior_sd is not None):
        raise InputError("--prior-mean/--prior-sd apply with --items; a fit uses its own "
                         "ability distribution")
    prior, holdout = None, None
    if args.items:
        from evalcert.io.irt_tables import read_item_table

        _outputs(args, [args.items, args.responses])
        bank, prior = read_item_table(args.items)
        prior = (prior[0] if args.prior_mean is None else args.prior_mean,
                 prior[1] if args.prior_sd is None else args.prior_sd)
    else:
        bank = _estimator(args)
        _outputs(args, [args.responses])
        holdout = 0.2 if args.holdout is None else args.holdout
    table = _read(args, kind="binary")
    res = simulate_cat(bank, table, holdout=holdout, max_items=args.max_items,
                       se_stop=args.se_stop, delta_stop=args.delta_stop,
                       selection=args.selection, update=args.update,
                       randomesque=args.randomesque, max_exposure=args.max_exposure,
                       prior=prior, seed=args.seed)
    print(res.summary())
    return _finish(args, res, page={"source": args.responses, "fmt": args.format,
                                    "read": args.read_description, "bank": args.items})


# -- parser -------------------------------------------------------------------------------------
def _input_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("auto", "wide", "long") + RESULTS_FORMATS,
                   default="auto",
                   help="auto (default): a tool's files (lm-eval, helm, inspect, eee, "
                        "py-irt) are detected, any other table is read as wide; wide: one "
                        "row per model, first column = names; long: one row per model-item "
                        "pair")
    p.add_argument("--model-col", default="model", help="long format: model column")
    p.add_argument("--item-col", default="item", help="long format: item column")
    p.add_argument("--response-col", default="correct", help="long format: response column")
    p.add_argument("--transpose", action="store_true", help="wide file has items as rows")
    p.add_argument("--no-header", action="store_true",
                   help="wide CSV with neither a header row nor a name column (models and "
                        "items are numbered)")
    p.add_argument("--no-names", action="store_true",
                   help="wide file with a header row of item names but no model-name column "
                        "(LSAT6/LSAT7 as usually distributed): every column is an item, "
                        "models are named row1..rowN. Without it this layout is detected "
                        "when the first column holds repeated 0/1 responses, and stderr "
                        "says so")
    add_source_options(p)


def _model_options(p: argparse.ArgumentParser, generic: bool = True) -> None:
    p.add_argument("--model", choices=MODELS, default="rasch", help="IRT model (default rasch)")
    p.add_argument("--method", choices=["jml", "cml", "mml", "map", "mcmc"], default=None,
                   help=f"estimation method; default per model: {_defaults_text('method')}")
    p.add_argument("--dims", type=positive_int, default=None,
                   help=f"dimensions (factor, je, m2pl); default {_defaults_text('dims')}")
    p.add_argument("--lam", type=nonnegative_float, default=None,
                   help=f"prior precision 1/sigma^2 of map/mcmc; default {_defaults_text('lam')}")
    p.add_argument("--item-embeddings", default=None, help=".npy array (je only)")
    p.add_argument("--optimizer", choices=["auto", "newton", "lbfgs"], default=None,
                   help="rasch jml/map solver (default auto: Newton on pooled groups)")
    p.add_argument("--quadrature", choices=["auto", "adaptive", "grid"], default=None,
                   help="rasch/2pl mml E-step (default auto)")
    p.add_argument("--density", choices=["normal", "histogram", "davidian-1", "davidian-2",
                                          "davidian-3", "davidian-4", "auto"], default=None,
                   help="latent ability density of 2pl/3pl/4pl/3plu mml (default normal; "
                        "auto: each on the same grid, lowest BIC, table in the notes)")
    p.add_argument("--max-iter", type=positive_int, default=None,
                   help=f"iteration budget; default {_defaults_text('max_iter')}")
    p.add_argument("--tol", type=positive_float, default=None,
                   help=f"convergence tolerance; default {_defaults_text('tol')}")
    p.add_argument("--slope-prior", type=nonnegative_float, default=None,
                   help="precision p of the slope prior of mml (log a ~ N(0, 1/p); 0 = pure "
                        f"marginal ML); default {_defaults_text('slope_prior')}")
    p.add_argument("--guessing", type=_floor, default=None,
                   help="3pl, 4pl: fix every item's guessing floor (e.g. 0.25 for 4 choices); "
                        "default: estimated per item under a Beta(6, 16) prior (3plu: 0; "
                        "4pl/3plu also estimate an upper asymptote per item, Beta(16, 6))")
    p.add_argument("--no-se", action="store_true",
                   help="skip the standard errors (faster: mml skips the observed "
                        "information); estimates are unchanged, SEs print as not computed")
    p.add_argument("--progress", action="store_true", help="show a progress bar (stderr)")


def _floor(text: str) -> float:
    value = probability(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1), got {text!r}")
    return value


def _exposure(text: str) -> float:
    value = probability(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}")
    return value


def _output_options(p: argparse.ArgumentParser, plot: str | None = None,
                    out_dir: bool = False, html: bool = False) -> None:
    p.add_argument("--json", default=None, metavar="OUT.json", help="write the result as JSON")
    if html:
        add_html_option(p)
    if out_dir:
        p.add_argument("--out-dir", default=None, metavar="DIR",
                       help="write models.csv and items.csv (estimates with SEs) there")
    if plot:
        p.add_argument("--plot", default=None, metavar="FIG.png", help=plot)
    add_output_flags(p)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``irt fit|holdout|score|itemfit|compare|anchors|cat``."""
    irt = subparsers.add_parser("irt", help="fit IRT models (Rasch, 2PL, 3PL, graded, factor, "
                                            "Beta, JE)")
    verbs = irt.add_subparsers(dest="irt_command", metavar="VERB")
    verbs.required = True
    file_help = "response file (CSV/TSV/Parquet/JSONL/JSON), models as rows"

    p = verbs.add_parser("fit", help="fit one model; print the fit and the ranking")
    p.add_argument("responses", help=file_help)
    _input_options(p)
    _model_options(p)
    _output_options(p, plot="item characteristic and information curves (rasch, 2pl, 3pl)",
                    out_dir=True, html=True)
    p.set_defaults(func=_quiet(_fit))

    p = verbs.add_parser("holdout", help="held-out AUC under a masking scheme")
    p.add_argument("responses", help=file_help)
    _input_options(p)
    _model_options(p)
    p.add_argument("--scheme", choices=["entrywise", "rows", "columns", "l_mask"],
                   default="entrywise")
    p.add_argument("--frac", type=open_probability, default=0.2,
                   help="held-out fraction in (0, 1) (default 0.2)")
    p.add_argument("--exposure", type=open_probability, default=0.3,
                   help="share of a held-out line kept for stage 2, in (0, 1) (default 0.3)")
    p.add_argument("--seed", type=nonnegative_int, default=0)
    _output_options(p)
    p.set_defaults(func=_quiet(_holdout))

    p = verbs.add_parser("score", help="score new models against a fitted item file")
    p.add_argument("items", help="items.csv written by `irt fit --out-dir` (rasch or 2pl)")
    p.add_argument("responses", help="new models' responses to those items (by item name)")
    _input_options(p)
    p.add_argument("--method", choices=SCORING, default="wle",
                   help="ml, wle (Warm 1989; default), map or eap")
    p.add_argument("--prior-mean", type=finite_float, default=None,
                   help="map/eap prior mean (default: the fit's, from the item file)")
    p.add_argument("--prior-sd", type=positive_float, default=None,
                   help="map/eap prior sd (default: the fit's, from the item file)")
    _output_options(p)
    p.set_defaults(func=_quiet(_score))

    p = verbs.add_parser("itemfit", help="infit/outfit mean squares and t of items and models")
    p.add_argument("responses", help=file_help)
    _input_options(p)
    _model_options(p)
    p.add_argument("--threshold", type=positive_float, default=2.0,
                   help="flag |t| above this (default 2)")
    _output_options(p, plot="infit/outfit t of every item")
    p.set_defaults(func=_quiet(_itemfit))

    p = verbs.add_parser("compare", help="Rasch vs 2PL (both mml): AIC, BIC, LR test")
    p.add_argument("responses", help=file_help)
    _input_options(p)
    p.add_argument("--slope-prior", type=nonnegative_float, default=None,
                   help="2pl slope prior precision (0 = pure ML: the exact LR test)")
    p.add_argument("--progress", action="store_true", help="show a progress bar (stderr)")
    _output_options(p)
    p.set_defaults(func=_quiet(_compare), model="2pl", method="mml")

    p = verbs.add_parser("anchors", help="tinyBenchmarks: full-benchmark accuracy from a few "
                                         "anchor items, error on held-out models")
    p.add_argument("responses", help=file_help)
    _input_options(p)
    _model_options(p)
    p.add_argument("--n-anchors", type=positive_int, default=30, help="anchor items (default 30)")
    p.add_argument("--selection", choices=["information", "cluster", "random"],
                   default="information", help="how anchors are chosen (default information)")
    p.add_argument("--scoring", choices=("map", "eap", "wle"), default="eap",
                   help="ability of a held-out model from its anchors (default eap)")
    p.add_argument("--test-frac", type=open_probability, default=0.2,
                   help="share of models held out, in (0, 1) (default 0.2)")
    p.add_argument("--seed", type=nonnegative_int, default=0)
    _output_options(p, plot="estimated vs true accuracy of the held-out models")
    p.set_defaults(func=_quiet(_anchors))

    p = verbs.add_parser("cat", help="computerised adaptive testing: replay held-out models, "
                                     "error against items used vs random items and anchors")
    p.add_argument("responses", help=file_help)
    _input_options(p)
    _model_options(p)
    p.add_argument("--items", default=None, metavar="ITEMS.csv",
                   help="a bank written by `irt fit --out-dir` (rasch, 2pl or 3pl): test "
                        "every model of the response file on it (no fit, no holdout)")
    p.add_argument("--holdout", type=open_probability, default=None,
                   help="share of models held out and tested, the rest calibrate the bank "
                        "(default 0.2)")
    p.add_argument("--max-items", type=positive_int, default=50,
                   help="stop after this many items (default 50)")
    p.add_argument("--se-stop", type=positive_float, default=None,
                   help="stop once the ability's standard error is at most this")
    p.add_argument("--delta-stop", type=positive_float, default=None,
                   help="stop once the ability moves less than this after an item")
    p.add_argument("--selection", choices=["mfi", "kl", "random", "astrat"], default="mfi",
                   help="next item: maximum Fisher information (default), posterior-weighted "
                        "Kullback-Leibler, random, or a-stratified")
    p.add_argument("--update", choices=["eap", "map"], default="eap",
                   help="ability after each item (default eap)")
    p.add_argument("--randomesque", type=positive_int, default=1,
                   help="exposure control: draw among this many best items (default 1)")
    p.add_argument("--max-exposure", type=_exposure, default=None,
                   help="exposure control: give an item to at most this share of the models")
    p.add_argument("--prior-mean", type=finite_float, default=None,
                   help="with --items: ability prior mean (default: the item file's)")
    p.add_argument("--prior-sd", type=positive_float, default=None,
                   help="with --items: ability prior sd (default: the item file's)")
    p.add_argument("--seed", type=nonnegative_int, default=0)
    _output_options(p, html=True)
    p.set_defaults(func=_quiet(_cat))
