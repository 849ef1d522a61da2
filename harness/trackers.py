"""Experiment trackers: a run's metrics as its episodes finish, and the table and report as artifacts.

``harness run ... tracker=wandb`` (or ``mlflow``) opens one tracker run per harness
run (per variant x suite x split of a sweep or experiment): its config is the run's
spec, its identity and run id; every finished episode logs, at step = episodes done
(resumed ones included), the running ``sr`` and ``errors`` of this session, the
episode's ``success`` and ``episodes``; the end logs the counts over every stored
episode of the run (``final_sr``, ``final_episodes``, ``final_errors``). After the last
job, one more tracker run (``table``) holds what ``harness table OUT`` prints
(Markdown and JSON; the experiment's own table with ``+experiment=``) and the HTML
report (``harness report OUT``) as artifacts.

A tracker never changes a result and never stops a run: a tracker that fails while
logging prints one warning and is dropped; the episodes are in the store regardless.

Both built-ins work without a network by default: W&B in offline mode (files under
``dir``; ``wandb sync`` uploads them later) and MLflow into a local file store
(``file:OUT/mlruns``). MLflow 3 keeps its file store in maintenance mode and refuses it
unless ``MLFLOW_ALLOW_FILE_STORE=true``; this module sets that (when unset) for a
``file:`` URI only, as the file store is what needs no server and no database driver.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Mapping, Protocol

from harness.registry import MissingDependencyError


class Tracker(Protocol):
    """What ``harness run`` calls. ``out``: the run's output directory."""

    def start_run(self, *, name: str, run_id: str, config: Mapping[str, Any], out: Path, group: str | None) -> None: ...

    def log_episode(self, step: int, metrics: Mapping[str, float]) -> None: ...

    def end_run(self, summary: Mapping[str, float]) -> None: ...

    def log_outputs(self, *, name: str, files: Mapping[str, Path], folders: Mapping[str, Path], out: Path,
                    group: str | None) -> None: ...

    def close(self) -> None:
        """After the invocation's last run: everything written (the files complete on return)."""


def _require(module: str, tracker: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        raise MissingDependencyError(f"tracker {tracker!r} needs the package {module!r}, which is not installed "
                                     "(pip install -e '.[trackers]')") from None


class WandbTracker:
    """Weights & Biases (``wandb``): one W&B run per harness run, ``mode=offline`` by default."""

    def __init__(self, project: str = "embodied-transfer", mode: str = "offline", dir: str | None = None,
                 entity: str | None = None, group: str | None = None):
        self.wandb = _require("wandb", "wandb")
        self.project, self.mode, self.dir, self.entity, self.group = project, mode, dir, entity, group
        self._run: Any = None

    def _init(self, name: str, config: Mapping[str, Any], out: Path, group: str | None, job_type: str) -> Any:
        folder = Path(self.dir) if self.dir else out
        folder.mkdir(parents=True, exist_ok=True)
        settings = self.wandb.Settings(silent=True, console="off")
        return self.wandb.init(project=self.project, entity=self.entity, mode=self.mode, dir=str(folder),
                               name=name, group=self.group or group, job_type=job_type, config=dict(config),
                               settings=settings, reinit="create_new")

    def start_run(self, *, name: str, run_id: str, config: Mapping[str, Any], out: Path, group: str | None) -> None:
        self._run = self._init(name, {**config, "run_id": run_id}, out, group, "run")

    def log_episode(self, step: int, metrics: Mapping[str, float]) -> None:
        self._run.log(dict(metrics), step=step)

    def end_run(self, summary: Mapping[str, float]) -> None:
        for key, value in summary.items():
            self._run.summary[key] = value
        self._run.finish()
        self._run = None

    def log_outputs(self, *, name: str, files: Mapping[str, Path], folders: Mapping[str, Path], out: Path,
                    group: str | None) -> None:
        run = self._init(name, {"out": str(out)}, out, group, "table")
        artifact = self.wandb.Artifact(_artifact_name(name), type="results")
        for label, path in files.items():
            artifact.add_file(str(path), name=label)
        for label, path in folders.items():
            artifact.add_dir(str(path), name=label)
        run.log_artifact(artifact)
        run.finish()

    def close(self) -> None:
        # finish() hands the records to W&B's service process, which writes the run files on its
        # own time; teardown waits for it, so the files are complete when `harness run` returns.
        self.wandb.teardown()


def _artifact_name(name: str) -> str:
    """A W&B artifact name: letters, digits, '-', '_' and '.' only."""
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip("-") or "results"


class MlflowTracker:
    """MLflow (``mlflow`` or ``mlflow-skinny``): one MLflow run per harness run, a local file
    store under the output directory by default."""

    def __init__(self, tracking_uri: str | None = None, experiment: str = "embodied-transfer"):
        self.mlflow = _require("mlflow", "mlflow")
        self.tracking_uri, self.experiment = tracking_uri, experiment
        self._client: Any = None
        self._run_id: str | None = None

    def _connect(self, out: Path) -> Any:
        uri = self.tracking_uri or (out.resolve() / "mlruns").as_uri()
        if uri.startswith("file:"):
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=uri)
        found = client.get_experiment_by_name(self.experiment)
        experiment_id = found.experiment_id if found is not None else client.create_experiment(self.experiment)
        return client, experiment_id

    def _start(self, name: str, out: Path, group: str | None, tags: Mapping[str, str]) -> tuple[Any, str]:
        client, experiment_id = self._connect(out)
        all_tags = {"mlflow.runName": name, **({"group": group} if group else {}), **tags}
        run = client.create_run(experiment_id, run_name=name, tags=all_tags)
        return client, run.info.run_id

    def start_run(self, *, name: str, run_id: str, config: Mapping[str, Any], out: Path, group: str | None) -> None:
        self._client, self._run_id = self._start(name, out, group, {"harness.run_id": run_id, "kind": "run"})
        params = {k: v for k, v in config.items() if not isinstance(v, (dict, list))}
        for key, value in params.items():
            self._client.log_param(self._run_id, key, "null" if value is None else str(value)[:500])
        self._client.log_dict(self._run_id, dict(config), "run.json")

    def log_episode(self, step: int, metrics: Mapping[str, float]) -> None:
        from mlflow.entities import Metric
        import time

        now = int(time.time() * 1000)
        self._client.log_batch(self._run_id, metrics=[Metric(k, float(v), now, step) for k, v in metrics.items()])

    def end_run(self, summary: Mapping[str, float]) -> None:
        from mlflow.entities import Metric
        import time

        now = int(time.time() * 1000)
        self._client.log_batch(self._run_id, metrics=[Metric(k, float(v), now, 0) for k, v in summary.items()])
        self._client.set_terminated(self._run_id, "FINISHED")
        self._run_id = None

    def log_outputs(self, *, name: str, files: Mapping[str, Path], folders: Mapping[str, Path], out: Path,
                    group: str | None) -> None:
        client, run_id = self._start(name, out, group, {"kind": "table"})
        for label, path in files.items():
            client.log_artifact(run_id, str(path))
        for label, path in folders.items():
            client.log_artifacts(run_id, str(path), artifact_path=label)
        client.set_terminated(run_id, "FINISHED")

    def close(self) -> None:
        """Nothing pending: each call above has written its files."""


# --- used by `harness run` ------------------------------------------------------


class RunLogger:
    """One harness run's side of a tracker: ``episode(record)`` from the runner's ``on_record``,
    ``end(...)`` after the run. A tracker error prints one warning and turns logging off."""

    def __init__(self, tracker: Any, label: str):
        self.tracker, self.label = tracker, label
        self.ok = self.n = self.errors = 0
        self.skipped = 0
        self.active = tracker is not None

    def _guard(self, what: str, fn: Any, *args: Any, **kw: Any) -> None:
        if not self.active:
            return
        try:
            fn(*args, **kw)
        except Exception as exc:  # noqa: BLE001 - a tracker never stops a run
            self.active = False
            text = str(exc).strip().splitlines()
            print(f"harness: warning: tracker {self.label}: {what} failed ({type(exc).__name__}: "
                  f"{text[0] if text else ''}); no more tracking for this run, its episodes are in the store",
                  file=sys.stderr)

    def start(self, *, name: str, run_id: str, config: Mapping[str, Any], out: Path, group: str | None,
              skipped: int = 0) -> None:
        self.skipped = skipped
        self._suite = str(config.get("suite")) if isinstance(config, Mapping) and config.get("suite") else None
        if not self.active:
            return
        self._guard("start", self.tracker.start_run, name=name, run_id=run_id, config=config, out=out, group=group)

    def _running(self, record: Any) -> dict[str, float]:
        """Each declared (not judged) metric of the record's suite over this session's episodes so far."""
        from dataclasses import asdict

        from harness.scoring import columns, episode_values, suite_scoring

        self._suite = self._suite or record.suite
        metrics, derive = suite_scoring(record.suite)
        values = episode_values(asdict(record), derive)
        sums = self.__dict__.setdefault("_sums", {})
        out: dict[str, float] = {}
        for m in metrics:
            if m.judged:
                continue
            (num,), (den,) = columns(m, [values])
            acc = sums.setdefault(m.name, [0.0, 0.0])
            if num == num:  # not NaN: the episode has a value
                acc[0] += num
                acc[1] += den
            out[m.name] = acc[0] / acc[1] if acc[1] else float("nan")
        return out

    def _headline(self) -> str | None:
        from harness.scoring import suite_scoring

        suite = getattr(self, "_suite", None)
        if suite is None:
            return None
        binary = [m.name for m in suite_scoring(suite)[0] if m.binary and m.default]
        return binary[0] if binary else None

    def episode(self, record: Any) -> None:
        if not self.active:
            return
        self.n += 1
        self.ok += bool(record.success) and record.error_kind is None
        self.errors += record.error_kind is not None
        metrics = {"success": float(bool(record.success) and record.error_kind is None),
                   **self._running(record), "errors": float(self.errors), "episodes": float(self.skipped + self.n)}
        self._guard("logging an episode", self.tracker.log_episode, self.skipped + self.n, metrics)

    def end(self, stored: int, successes: int, errors: int) -> None:
        if not self.active:
            return
        summary = {"final_episodes": float(stored)}
        headline = self._headline()
        if headline is not None:  # the suite's first default binary metric: successes / episodes
            summary[f"final_{headline}"] = successes / stored if stored else float("nan")
        summary["final_errors"] = float(errors)
        self._guard("finishing", self.tracker.end_run, summary)


def run_config(spec: Any, identity: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a tracker run records about a harness run: its spec's result-relevant fields and identity."""
    from dataclasses import asdict

    data = asdict(spec)
    keep = ("suite", "split", "agent", "variant", "agent_kind", "seed", "repeat", "limit", "suite_params",
            "agent_params")
    out = {k: data[k] for k in keep if k in data}
    out = json.loads(json.dumps(out, default=str))
    if identity is not None:
        out["identity"] = json.loads(json.dumps(dict(identity), default=str))
    return out
