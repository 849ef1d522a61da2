"""The built-in experiment trackers' declarations (imports nothing heavy).

``tracker=wandb`` / ``tracker=mlflow`` on ``harness run``; their settings are
``tracker.NAME=VALUE``. Neither changes a result, so none is in a run identity.
Both work without a network by default: W&B in offline mode (``wandb sync``
uploads later), MLflow into a local file store under the output directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from harness.params import param
from harness.plugins import TrackerPlugin


@dataclass
class WandbParams:
    project: str = param("embodied-transfer", results=False, help="W&B project")
    mode: str = param("offline", choices=("offline", "online"), results=False,
                      help="offline: written under dir (no network; `wandb sync DIR/wandb/offline-run-*` uploads "
                           "later); online: sent as the run goes (needs a login)")
    dir: Optional[str] = param(None, results=False, help="folder W&B writes into; null: the run's output directory")
    entity: Optional[str] = param(None, results=False, help="W&B entity (team or user); null: the default")
    group: Optional[str] = param(None, results=False,
                                 help="W&B run group; null: the experiment's name, else the output directory's name")


@dataclass
class MlflowParams:
    tracking_uri: Optional[str] = param(None, results=False, secret="url",
                                        help="MLflow tracking URI; null: a local file store, file:OUT/mlruns "
                                             "(no server, no network)")
    experiment: str = param("embodied-transfer", results=False, help="MLflow experiment name")


WANDB = TrackerPlugin(name="wandb", target="harness.run.trackers:WandbTracker", params=WandbParams, extra="trackers",
                      modules=("wandb",),
                      summary="Weights & Biases: per-episode metrics of each run, the table and report as artifacts "
                              "(offline by default)")
MLFLOW = TrackerPlugin(name="mlflow", target="harness.run.trackers:MlflowTracker", params=MlflowParams, extra="trackers",
                       modules=("mlflow",),
                       summary="MLflow: per-episode metrics of each run, the table and report as artifacts "
                               "(a local file store by default)")
