"""The report's power line, the cost of the agent calls and the runs' provenance."""

from __future__ import annotations

import json
import math
from statistics import NormalDist
from typing import Any, Mapping, Sequence

import numpy as np

from harness.report.page import esc
from harness.scoring.policy import columns, suite_scoring, value_rows

#: Statistical power of the power line (conventional 80 %).
POWER = 0.80
#: Two-sided significance level of the power line.
ALPHA = 0.05
#: Effect the power line is stated for: 5 percentage points of SR.
POWER_DELTA = 0.05


def episodes_for_power(p_base: float, delta: float = POWER_DELTA, alpha: float = ALPHA, power: float = POWER) -> int:
    """Episodes per variant to detect ``p_base`` -> ``p_base + delta`` (two-sided test
    of two proportions, normal approximation; Fleiss, *Statistical Methods for
    Rates and Proportions*, eq. 4.14 without continuity correction).

    Stated for independent samples: the paired design (same episodes for every
    variant, McNemar) needs fewer when the variants agree on most episodes.
    """
    p1 = min(max(p_base, 0.0), 1.0)
    p2 = p1 + delta if p1 + delta <= 1.0 else p1 - delta
    pbar = (p1 + p2) / 2
    z_a = NormalDist().inv_cdf(1 - alpha / 2)
    z_b = NormalDist().inv_cdf(power)
    num = (z_a * math.sqrt(2 * pbar * (1 - pbar)) + z_b * math.sqrt(p1 * (1 - p1) + p2 * (1 - p2))) ** 2
    return int(math.ceil(num / (delta ** 2)))


def power_section(df: Any, baseline: str) -> str:
    """Per suite, the episodes per variant the power line asks for (:func:`episodes_for_power`) from
    the baseline's rate there, beside those the store holds."""
    # The rate is the suite's headline binary metric (its chart's), over the episodes it scores.
    power_items = []
    for suite in sorted(set(df["suite"])):
        sub = df[(df["suite"] == suite) & (df["variant"].astype(str) == baseline)]
        binary = [m for m in suite_scoring(suite)[0] if m.binary and m.default]
        if sub.empty or not binary:
            continue
        num = np.asarray(columns(binary[0], value_rows(sub))[0], dtype=float)
        known = num[~np.isnan(num)]
        if not known.size:
            continue
        p = float(known.mean())
        need = episodes_for_power(p)
        per_variant = int(known.size)
        power_items.append(
            f'<li class="power" data-suite="{esc(suite)}"><b>{esc(suite)}</b>: base rate ({esc(binary[0].label)}) '
            f'{100 * p:.1f} % ({esc(baseline)}, {per_variant} episodes) → <b>{need}</b> episodes per variant to '
            f'detect a Δ of '
            f'{100 * POWER_DELTA:.0f} points at {100 * POWER:.0f} % power (two-sided α={ALPHA}); '
            + ("this store has enough." if per_variant >= need else f"this store has {per_variant}.") + "</li>")
    return ('<section id="power"><h2>Power</h2><ul>' + "".join(power_items) + "</ul>"
            '<p class="notes">Two-proportion normal approximation for independent samples; the paired '
            "design here (same episodes, McNemar) needs fewer when variants agree on most episodes.</p></section>")


def _quantiles(values: Sequence[float]) -> str:
    """'median · p90 · max' of values ('–' when none)."""
    if not len(values):
        return "–"
    q = np.percentile(np.asarray(values, dtype=float), [50, 90, 100])
    return " · ".join(f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}" for v in q)


def cost_section(df: Any, transcripts: Mapping[tuple, list[dict]]) -> str:
    """Per variant: agent calls, total and per-episode tokens, latency per call and
    wall time per episode, each with its distribution (median · p90 · max).

    A call's latency is the wall time of the batched agent call that served it
    (shared by the ``batch`` episodes of that call). Token counts appear where
    the backend reported them. '' when no episode has a recorded call.
    """
    if not any(transcripts.values()):
        return ""
    rows = []
    for variant, group in df.groupby(df["variant"].astype(str), sort=False):
        calls = [t for r in group.itertuples() for t in transcripts.get(
            (r.run_id, r.suite, r.split, r.episode_id, int(r.seed)), [])]
        per_ep_prompt, per_ep_out = [], []
        for r in group.itertuples():
            ts = transcripts.get((r.run_id, r.suite, r.split, r.episode_id, int(r.seed)), [])
            if any(t.get("prompt_tokens") is not None for t in ts):
                per_ep_prompt.append(sum(t.get("prompt_tokens") or 0 for t in ts))
                per_ep_out.append(sum(t.get("output_tokens") or 0 for t in ts))
        latency = [float(t["latency_s"]) for t in calls if t.get("latency_s") is not None]
        seconds = [float(v) for v in group["wall_time_s"].fillna(0.0)]
        rows.append(
            f'<tr data-variant="{esc(variant)}"><th>{esc(variant)}</th><td>{len(group)}</td><td>{len(calls)}</td>'
            f"<td>{sum(per_ep_prompt):,}</td><td>{sum(per_ep_out):,}</td>"
            f"<td>{_quantiles(per_ep_prompt)}</td><td>{_quantiles(per_ep_out)}</td>"
            f"<td>{sum(latency):,.1f}</td><td>{_quantiles(latency)}</td><td>{_quantiles(seconds)}</td></tr>")
    return ('<section id="cost"><h2>Cost of the agent calls</h2><table id="cost-table"><thead><tr>'
            "<th>variant</th><th>episodes</th><th>calls</th><th>prompt tokens</th><th>output tokens</th>"
            "<th>prompt tokens / episode<br>median · p90 · max</th><th>output tokens / episode<br>median · p90 · max</th>"
            "<th>call latency s<br>total</th><th>call latency s<br>median · p90 · max</th>"
            "<th>episode wall time s<br>median · p90 · max</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
            '<details class="notes"><summary>Notes (1)</summary><p class="notes">Tokens as the backend counted them '
            "(0 where it reports none: scripted agents). A call's "
            "latency is the wall time of the batched agent call that served it. <code>harness table --metrics "
            "prompt_tokens,output_tokens,seconds</code> gives the per-episode means as a table.</p></details></section>")


def _hashes(identity: Any, prefix: str = "") -> list[tuple[str, str]]:
    """(dotted key, value) of every hash in an agent identity (checkpoint, adapter, examples...)."""
    out: list[tuple[str, str]] = []
    if isinstance(identity, Mapping):
        for k, v in identity.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, (Mapping, list)):
                out += _hashes(v, key)
            elif isinstance(v, str) and ("sha" in str(k).lower() or "hash" in str(k).lower()):
                out.append((key, v))
    elif isinstance(identity, list):
        for i, v in enumerate(identity):
            out += _hashes(v, f"{prefix}[{i}]")
    return out


def provenance_section(runs: Any, provenance: Mapping[str, list[dict[str, Any]]]) -> str:
    """Per run: variant, suite/split, sessions, checkpoint and adapter hashes (from
    the run identity), and per session its time, commit and dirty flag, Python and
    platform, package versions and the resolved config (folded)."""
    blocks = []
    for r in runs.itertuples():
        identity = json.loads(r.identity) if isinstance(r.identity, str) else {}
        hashes = _hashes(identity.get("agent_identity", {}), "agent")
        hash_rows = "".join(f"<tr><th>{esc(k)}</th><td><code>{esc(v)}</code></td></tr>" for k, v in hashes)
        sessions = []
        for i, p in enumerate(provenance.get(r.run_id, [])):
            git = p.get("git") or {}
            commit = git.get("commit")
            state = (f"<code>{esc(commit[:12])}</code>" + (' <span class="dirty">dirty</span>' if git.get("dirty")
                                                            else " clean")) if commit else "not a git checkout"
            packages = " · ".join(f"{esc(k)} {esc(v)}" for k, v in sorted((p.get("packages") or {}).items()))
            config = json.dumps(p.get("config") or {}, indent=1, sort_keys=True, default=str)
            sessions.append(
                f'<li class="session">session {i + 1}: {esc(p.get("time", ""))} · commit {state} · Python '
                f'{esc(p.get("python", ""))} · {esc(p.get("platform", ""))}<br><span class="notes">{packages}</span>'
                f"<details><summary>resolved config</summary><pre>{esc(config)}</pre></details></li>")
        ident = json.dumps(identity, indent=1, sort_keys=True, default=str)
        blocks.append(
            f'<div class="run" data-run="{esc(r.run_id)}"><h3><code>{esc(r.run_id)}</code> · {esc(r.variant)} · '
            f"{esc(r.suite)}/{esc(r.split)} · {int(r.sessions)} session(s)</h3>"
            + (f'<table class="hashes"><tbody>{hash_rows}</tbody></table>' if hash_rows
               else '<p class="notes">No checkpoint hash in the agent identity (a scripted agent).</p>')
            + f"<ul>{''.join(sessions)}</ul><details><summary>run identity (what the run id hashes)</summary>"
              f"<pre>{esc(ident)}</pre></details></div>")
    return '<section id="runs"><h2>Runs and provenance</h2>' + "".join(blocks) + "</section>"
