"""``evalcert irt fit|holdout``: IRT estimators on a models x items CSV."""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from evalcert.errors import InputError
from evalcert.solvers.irt import MODELS, holdout_evaluate, make_estimator

#: estimator options that only some models take: flag -> models
_MODEL_OPTIONS = {"optimizer": ("rasch",), "quadrature": ("rasch", "2pl")}


def _read(args: argparse.Namespace) -> tuple[pd.DataFrame, dict]:
    table = pd.read_csv(args.responses, index_col=0)
    if args.transpose:
        table = table.T
    options: dict = {"dims": args.dims}
    if args.lam is not None:
        options["lam"] = args.lam
    if args.item_embeddings:
        options["item_embeddings"] = np.load(args.item_embeddings)
    for flag, models in _MODEL_OPTIONS.items():
        value = getattr(args, flag)
        if value is None:
            continue
        if args.model not in models:
            raise InputError(f"--{flag} applies to --model {' or '.join(models)} only")
        options[flag] = value
    return table, options


def _fit(args: argparse.Namespace) -> int:
    table, options = _read(args)
    est = make_estimator(args.model, args.method, **options).fit(table)
    print(est.result_.summary())
    if args.json:
        est.result_.to_json(args.json)
    return 0


def _holdout(args: argparse.Namespace) -> int:
    table, options = _read(args)
    res = holdout_evaluate(make_estimator(args.model, args.method, **options), table,
                           args.scheme, frac=args.frac, exposure=args.exposure, seed=args.seed)
    print(res.summary())
    if args.json:
        res.to_json(args.json)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``irt fit`` and ``irt holdout``."""
    irt = subparsers.add_parser("irt", help="fit IRT models (Rasch, 2PL, factor, Beta, JE)")
    verbs = irt.add_subparsers(dest="irt_command", metavar="VERB")
    verbs.required = True
    for name, func, text in (("fit", _fit, "fit one model and print its summary"),
                             ("holdout", _holdout, "held-out AUC under a masking scheme")):
        p = verbs.add_parser(name, help=text)
        p.add_argument("responses", help="CSV, models as rows (first column = names)")
        p.add_argument("--model", choices=sorted(MODELS), default="rasch")
        p.add_argument("--method", choices=["jml", "cml", "mml", "map", "mcmc"], default=None)
        p.add_argument("--dims", type=int, default=None, help="K for factor / d for je")
        p.add_argument("--lam", type=float, default=None, help="prior precision 1/sigma^2")
        p.add_argument("--item-embeddings", default=None, help=".npy array (je only)")
        p.add_argument("--optimizer", choices=["auto", "newton", "lbfgs"], default=None,
                       help="rasch jml/map solver (default auto: Newton on pooled groups)")
        p.add_argument("--quadrature", choices=["auto", "adaptive", "grid"], default=None,
                       help="rasch/2pl mml E-step (default auto)")
        p.add_argument("--transpose", action="store_true", help="the CSV has items as rows")
        p.add_argument("--json", default=None, help="also write the result as JSON here")
        if name == "holdout":
            p.add_argument("--scheme", choices=["entrywise", "rows", "columns", "l_mask"],
                           default="entrywise")
            p.add_argument("--frac", type=float, default=0.2)
            p.add_argument("--exposure", type=float, default=0.3)
            p.add_argument("--seed", type=int, default=0)
        p.set_defaults(func=func)
