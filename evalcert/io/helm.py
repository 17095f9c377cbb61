"""Stanford CRFM HELM run folders (``per_instance_stats.json`` + ``run_spec.json``).

Each run folder holds one model on one scenario. ``per_instance_stats.json`` is a list of
``{instance_id, train_trial_index, stats: [{name: {name, split, [perturbation]}, count,
sum, mean, ...}]}``; ``run_spec.json`` names the run and the model
(``adapter_spec.model``). The matrix:

* model = ``adapter_spec.model``;
* item = ``<scenario>|<instance_id>``, where the scenario is the run's name without its
  ``model=`` (and ``model_deployment=``) arguments, so the same scenario joins across
  models; a stat computed on a perturbation is a separate item
  ``<scenario>|<instance_id>|<perturbation name>:<computed_on>`` (perturbations kept apart);
* score = the stat ``stat`` (default ``exact_match``): its ``mean`` (``sum / count``); a
  stat with ``count == 0`` is a missing cell; several train trials are averaged (said).

Example
-------
>>> import json, pathlib, tempfile
>>> run = pathlib.Path(tempfile.mkdtemp()) / "mmlu:subject=x,model=org_m"
>>> run.mkdir()
>>> _ = (run / "run_spec.json").write_text(json.dumps(
...     {"name": "mmlu:subject=x,model=org/m", "adapter_spec": {"model": "org/m"}}))
>>> stat = lambda v: {"name": {"name": "exact_match", "split": "test"}, "count": 1, "sum": v, "mean": v}
>>> _ = (run / "per_instance_stats.json").write_text(json.dumps(
...     [{"instance_id": "id1", "train_trial_index": 0, "stats": [stat(1.0)]}]))
>>> read_helm(run.parent).matrix.items
('mmlu:subject=x|id1',)
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from evalcert.errors import InputError
from evalcert.io._json import read_json
from evalcert.io.results import CellCollector, ResultsRead

__all__ = ["read_helm", "scenario_of"]

_MODEL_ARG = re.compile(r"(^|,)(model|model_deployment)=[^,]*")


def find_runs(path: Path) -> list[Path]:
    """Run folders (holding ``per_instance_stats.json``) at or under ``path``."""
    if path.is_file():
        path = path.parent
    return sorted(p.parent for p in path.rglob("per_instance_stats.json"))


def scenario_of(run_name: str) -> str:
    """The run's name without its model arguments.

    Examples
    --------
    >>> scenario_of("mmlu:subject=philosophy,method=multiple_choice_joint,model=openai_gpt2")
    'mmlu:subject=philosophy,method=multiple_choice_joint'
    """
    head, colon, args = run_name.partition(":")
    if not colon:
        return _MODEL_ARG.sub("", head).strip(",")
    args = _MODEL_ARG.sub("", args).strip(",")
    return f"{head}:{args}" if args else head


def read_helm(path: str | Path, *, stat: str = "exact_match",
              bounds: tuple[float, float] | None = None) -> ResultsRead:
    """Read HELM run folders (one run folder, or a folder searched recursively).

    Parameters
    ----------
    path : path-like
    stat : str
        The per-instance stat (default ``exact_match``); an unknown name is refused with
        the stats found.
    bounds : tuple of float, optional
        Score range (default ``(-1, 1)`` widened to the scores).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> read_helm(pathlib.Path(tempfile.mkdtemp()))
    Traceback (most recent call last):
    ...
    evalcert.errors.InputError: ...: no HELM run folder (per_instance_stats.json) here
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder; check the path")
    runs = find_runs(path)
    if not runs:
        raise InputError(f"{path}: no HELM run folder (per_instance_stats.json) here")
    out = CellCollector(str(path), "helm")
    for run in runs:
        spec_path = run / "run_spec.json"
        if not spec_path.exists():
            raise InputError(f"{run}: per_instance_stats.json without run_spec.json; the "
                             "model is named there (copy the whole run folder)")
        spec = read_json(spec_path)
        try:
            model = str(spec["adapter_spec"]["model"])
            scenario = scenario_of(str(spec["name"]))
        except (KeyError, TypeError):
            raise InputError(f"{spec_path}: no name or adapter_spec.model; is this a HELM "
                             "run_spec.json?") from None
        instances = read_json(run / "per_instance_stats.json")
        if not isinstance(instances, list):
            raise InputError(f"{run / 'per_instance_stats.json'}: expected a list of "
                             "instances")
        _read_run(run, model, scenario, stat, instances, out)
    return out.finish(bounds)


def _read_run(run: Path, model: str, scenario: str, stat: str, instances: list,
              out: CellCollector) -> None:
    sums: dict[str, list[float]] = defaultdict(list)
    empty: set[str] = set()
    names: set[str] = set()
    trials: set[int] = set()
    for k, inst in enumerate(instances):
        try:
            instance_id, stats = str(inst["instance_id"]), inst["stats"]
        except (KeyError, TypeError):
            raise InputError(f"{run / 'per_instance_stats.json'}: entry {k + 1} has no "
                             "instance_id or stats") from None
        trials.add(int(inst.get("train_trial_index", 0)))
        for s in stats:
            name = s.get("name") or {}
            names.add(str(name.get("name")))
            if name.get("name") != stat:
                continue
            item = f"{scenario}|{instance_id}"
            pert = name.get("perturbation")
            if pert:
                item += f"|{pert.get('name', 'perturbation')}:{pert.get('computed_on', '')}"
            count = s.get("count", 0)
            if not count:
                empty.add(item)
                continue
            value = s.get("mean", s.get("sum", 0) / count)
            sums[item].append(float(value))
    if stat not in names:
        shown = ", ".join(sorted(n for n in names if "token" not in n)[:12])
        raise InputError(f"{run}: no stat {stat!r}; this run has {shown} ...; pick one with "
                         "--stat")
    if len(trials) > 1:
        out.note(f"{len(trials)} train trials per instance are averaged")
    for item, values in sums.items():
        out.add(model, item, sum(values) / len(values))
    for item in empty - set(sums):
        out.add_missing(model, item)
