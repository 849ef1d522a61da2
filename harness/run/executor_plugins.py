"""The built-in executors' declarations (imports nothing heavy)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from harness.params import param
from harness.plugins import ExecutorPlugin

#: Upper bounds of the executor's sizes (far above any machine; a typo like 1e10 is refused).
MAX_WORKERS, MAX_BATCH = 4096, 65536


@dataclass
class LocalParams:
    batch_size: int = param(8, ge=1, le=MAX_BATCH, results=False,
                            help="episodes in flight in this process; one agent call takes up to this many ready ones")
    num_workers: int = param(1, ge=1, le=MAX_WORKERS, results=False, help="unused by the local executor")


@dataclass
class ProcessParams:
    num_workers: int = param(2, ge=1, le=MAX_WORKERS, results=False,
                             help="worker processes; episodes in flight = num_workers x envs_per_worker")
    batch_size: int = param(2, ge=1, le=MAX_BATCH, results=False,
                            help="requests per agent call at most (pipelined; lockstep: a call serves every slot)")
    envs_per_worker: int = param(1, ge=1, le=MAX_WORKERS, results=False,
                                 help="envs per worker process, stepped in turn")


@dataclass
class RayParams:
    num_workers: int = param(2, ge=1, le=MAX_WORKERS, results=False, help="Ray actors (one CPU each)")
    batch_size: int = param(4, ge=1, le=MAX_BATCH, results=False,
                            help="episodes in flight, spread over the actors (ceil(batch_size/num_workers) envs each)")
    address: Optional[str] = param(None, results=False,
                                   help="cluster to join: auto, HOST:PORT, ray://HOST:PORT (Ray client); "
                                        "null: RAY_ADDRESS, else a local one")


LOCAL = ExecutorPlugin(name="local", target="harness.run.executors:local_executor", params=LocalParams, in_process=True,
                       summary="env slots in this process; batch_size slots")
PROCESS = ExecutorPlugin(name="process", target="harness.run.executors:process_executor", params=ProcessParams,
                         summary="num_workers worker processes, envs_per_worker envs each (default 1); hard timeouts")
RAY = ExecutorPlugin(name="ray", target="harness.run.executors_ray:ray_executor", params=RayParams, extra="ray",
                     setup="harness.run.ray_cluster:setup",
                     summary="envs on Ray actors (num_workers actors, ceil(batch_size/num_workers) envs each)")
