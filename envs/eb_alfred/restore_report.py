"""How much restoring scenes from the trajectories changes the official EB-ALFRED episodes.

Compares, for each of the 300 official episodes, the household world built from
the trajectory's scene facts (suite >= 1.2.0) with the seeded placement used
before (``restore_scenes=False``, same seed):

- **instance counts**: some pickupable type has a different number of instances;
- **start receptacles**: some task object of the trajectory (what the expert
  picks up or slices) has no instance of its type in the receptacle instance
  the trajectory shows (``_type`` variant: not even in a receptacle of that type);
- **start facing**: the agent starts facing a receptacle (seeded worlds: nothing);
- expert lengths (EB-ALFRED skill-level L*) before and after.

Run: ``python -m envs.eb_alfred.restore_report [DATA_DIR]`` (default ``$EB_ALFRED_DATA_DIR``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Iterable

from envs.eb_alfred.episodes import load_official, resolve_data_dir, scene_from_metadata, task_from_metadata
from envs.eb_alfred.expert import plan_from_world
from envs.household import World, build_world
from envs.household.restore import SceneFacts
from harness.types import EpisodeSpec


@dataclass(frozen=True)
class EpisodeChange:
    episode_id: str
    counts_changed: bool
    types_with_other_count: int
    starts_changed: bool
    starts_changed_type: bool
    faces_receptacle: bool
    expert_before: int | None
    expert_after: int | None


def _counts(world: World) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in world.objects.values():
        if o.pickupable:
            out[o.type] = out.get(o.type, 0) + 1
    return out


def compare(spec: EpisodeSpec) -> EpisodeChange | None:
    """The change restoring makes to one episode (None without scene facts)."""
    facts: SceneFacts | None = scene_from_metadata(spec.metadata)
    if facts is None:
        return None
    task = task_from_metadata(spec.metadata)
    fp = int(spec.metadata["floor_plan"])
    seeded = build_world(fp, spec.seed, task)
    restored = build_world(fp, spec.seed, task, scene=facts)
    a, b = _counts(seeded), _counts(restored)
    differ = [t for t in set(a) | set(b) if a.get(t, 0) != b.get(t, 0)]
    thor = {o.thor_id: k for k, o in seeded.objects.items() if o.thor_id}
    starts_changed = starts_changed_type = False
    for st in facts.starts:
        recep = thor.get(st.receptacle_id)
        inside = [k for k, o in seeded.objects.items() if o.type == st.obj_type and o.parent is not None]
        if recep is None or not any(seeded.objects[k].parent == recep for k in inside):
            starts_changed = True
        rtype = seeded.objects[recep].type if recep is not None else None
        if not any(seeded.objects[seeded.objects[k].parent].type == rtype for k in inside):
            starts_changed_type = True
    before = plan_from_world(seeded, task)
    after = plan_from_world(restored, task)
    return EpisodeChange(spec.episode_id, bool(differ), len(differ), starts_changed, starts_changed_type,
                         restored.at is not None, len(before) if before is not None else None,
                         len(after) if after is not None else None)


def report(changes: Iterable[EpisodeChange]) -> dict[str, float]:
    rows = list(changes)
    n = len(rows)
    before = [r.expert_before for r in rows if r.expert_before is not None]
    after = [r.expert_after for r in rows if r.expert_after is not None]
    return {
        "episodes": n,
        "counts_changed": sum(r.counts_changed for r in rows),
        "mean_types_with_other_count": round(sum(r.types_with_other_count for r in rows) / max(n, 1), 2),
        "starts_changed": sum(r.starts_changed for r in rows),
        "starts_changed_type": sum(r.starts_changed_type for r in rows),
        "either_changed": sum(r.counts_changed or r.starts_changed for r in rows),
        "faces_receptacle": sum(r.faces_receptacle for r in rows),
        "expert_mean_before": round(sum(before) / max(len(before), 1), 2),
        "expert_mean_after": round(sum(after) / max(len(after), 1), 2),
        "expert_unsolved_after": sum(r.expert_after is None for r in rows),
    }


def official_changes(data_dir) -> list[EpisodeChange]:
    official = load_official(resolve_data_dir(data_dir))
    out = []
    for episodes in official.values():
        for spec in episodes:
            change = compare(spec)
            if change is not None:
                out.append(change)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    stats = report(official_changes(argv[0] if argv else None))
    for k, v in stats.items():
        print(f"{k}: {v}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
