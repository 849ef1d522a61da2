"""The real hub datasets' file lists (names, paths, sizes), recorded 2026-12-02, and the
stand-ins built from them.

``testdata/eb_alfred_hub.json`` -- the hub dataset EmbodiedBench/EB-ALFRED, whose top level is
the ALFRED trajectory folders ``<task>/<trial>/pp/ann_<k>.json`` (1267 files, 370 trials, 131
tasks). Where each fact comes from:

- The layout and the trial names: the hub's public tree pages of the dataset, e.g.
  ``/datasets/EmbodiedBench/EB-ALFRED/tree/3ef19471811bf2606912d0b464373319218f0c96/<task>``
  and ``.../<task>/<trial>`` (which holds ``pp``), for the tasks
  ``look_at_obj_in_light-Statue-None-DeskLamp-216``, ``look_at_obj_in_light-RemoteControl-None-FloorLamp-213``,
  ``pick_and_place_simple-Mug-None-SideTable-329``, ``pick_and_place_simple-HandTowel-None-BathtubBasin-408``,
  ``pick_and_place_simple-Newspaper-None-Sofa-224`` and
  ``pick_and_place_with_movable_recep-AppleSliced-Pot-Fridge-24`` (every one uploaded in the
  commit ``e6dfe78``, "Upload folder").
- The full list and the sizes: EmbodiedBench's git tree at b24793607b7c5f1f236dad6d9c3f3c94d0bd4b04,
  ``embodiedbench/envs/eb_alfred/data/json_2.1.0/`` (``git ls-tree -r -l``), whose trial names
  agree with every hub page above; EmbodiedBench's later READMEs clone the hub dataset and move
  it to exactly that folder. No hub page listing the dataset's top level or a ``pp`` folder was
  found, so that the hub holds these 1267 files and no others is not verified, nor are its
  sizes; ``root_files_inferred`` (``.gitattributes``, ``README.md``: every hub repository has
  the first, and the pages show a dataset card's license) are inferred, their sizes unknown.

``testdata/eb_manipulation_hub.json`` -- the hub dataset EmbodiedBench's README names at
b247936 (README.md:199-200), markyyds/eb_manipulation_dataset, whose ``data/`` EmbodiedBench
moves into place (688 files under ``data/``). Where each fact comes from:

- The file list and the sizes: EmbodiedBench's git tree at 45c99e2 (the commit before
  9aae077 "remove data from eb_manipulation; add instruction to install dataset"),
  ``embodiedbench/envs/eb_manipulation/data/``; 168 ``configs.pkl`` sizes are unknown (null:
  their blobs are missing from the stored copy of the repository).
- Cross-checked against the public tree pages of EmbodiedBench/EB-Manipulation (the dataset
  EmbodiedBench's later READMEs name; its ``data/`` uploaded by the same account, commit
  ``c6fc638`` "add data folder"): ``/datasets/EmbodiedBench/EB-Manipulation/tree/main`` (``data``,
  ``.gitattributes`` 2.46 kB, ``README.md`` 357 Bytes), ``.../tree/f27178549d2d52dbc3786c4d1c4198c56103145a/data``
  (the five subsets and four ``*_subset_generation.py`` of 5.87, 7.72, 7.19 and 6.61 kB, as
  here) and ``.../tree/main/data/spatial/eval/stack_cubes_relative`` (``variation0`` to
  ``variation5``, as here). No listing of markyyds/eb_manipulation_dataset itself was found.

The stand-ins' file *contents* are small generated files, except the EB-ALFRED trajectory files
the official splits name, which are read in place from ``$EB_ALFRED_DATA_DIR/json_2.1.0``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

TESTDATA = Path(__file__).resolve().parent / "testdata"


def eb_alfred_listing() -> dict[str, int | None]:
    """Path -> size (None: unknown) of every file of the hub dataset EmbodiedBench/EB-ALFRED."""
    data = json.loads((TESTDATA / "eb_alfred_hub.json").read_text())
    out: dict[str, int | None] = {p: None for p in data["root_files_inferred"]}
    for trial, sizes in data["trials"].items():
        out.update({f"{trial}/pp/ann_{k}.json": size for k, size in enumerate(sizes)})
    return out


def eb_manipulation_listing() -> dict[str, int | None]:
    """Path -> size (None: unknown) of every file of the EB-Manipulation hub dataset."""
    data = json.loads((TESTDATA / "eb_manipulation_hub.json").read_text())
    out: dict[str, int | None] = {p: None for p in data["root_files_inferred"]}
    out.update(data["files"])
    for episode, sizes in data["episodes"].items():
        out.update({f"{episode}/{name}": size for name, size in zip(data["episode_files"], sizes)})
    return out


def build_tree(root: Path, listing: dict[str, int | None], real: Path | None = None) -> Path:
    """A folder holding every path of ``listing``: a symlink to ``real/<path>`` where that
    exists (read in place), else a small generated file."""
    for rel in listing:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if real is not None and (real / rel).is_file():
            os.symlink((real / rel).resolve(), path)
        else:
            path.write_text(json.dumps({"stand_in_for": rel}) + "\n")
    return root
