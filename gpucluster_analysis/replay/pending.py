"""The scheduler's own pending reasons (squeue snapshots) beside the replay's cause at the same
instant: per (reason, cause), how many snapshots and jobs agree or differ.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from gpucluster_analysis.replay import split
from gpucluster_analysis.replay.caps import UserCaps
from gpucluster_analysis.replay.rules import LocalityRule
from gpucluster_analysis.replay.split import CAUSES, WaitJobs
from gpucluster_analysis.replay.timeline import Steps, Timeline


def pending_vs_causes(
    source: str,
    pend_df: pl.DataFrame,
    job_df: pl.DataFrame,
    tl: Timeline,
    jobs: WaitJobs,
    splittable: np.ndarray,
    usage: dict[int, Steps],
    quota: dict[int, float | None],
    rule: LocalityRule,
    caps: UserCaps,
) -> pl.DataFrame:
    """Per (scheduler's reason, replay's cause): snapshots and jobs."""
    schema = {"source": pl.Utf8, "reason": pl.Utf8, "replay_cause": pl.Utf8, "snapshots": pl.Int64, "jobs": pl.Int64}
    if pend_df.is_empty():
        return pl.DataFrame(schema=schema)
    index = job_df.select("job_id").with_row_index("row")
    rows = pend_df.join(index, on="job_id", how="left")
    row = rows.get_column("row").to_numpy()
    t = rows.get_column("observed_s").to_numpy().astype(float)
    label = np.full(len(rows), "not in the store", dtype=object)
    in_store = ~rows.get_column("row").is_null().to_numpy()
    r = np.where(in_store, row, 0).astype(np.int64)
    can = in_store & splittable[r]
    label[in_store & ~can] = "no split (GPUs or times unknown)"
    waiting = can & (t >= jobs.wait_from[r]) & (t < jobs.wait_until[r])
    label[can & ~waiting & (t < jobs.wait_from[r])] = "before its queue start"
    label[can & ~waiting & (t >= jobs.wait_until[r])] = "after its start"
    wait_rows = np.flatnonzero(waiting)
    if wait_rows.size:
        w = r[wait_rows]
        keys = np.stack([jobs.vc[w], jobs.gpus[w], caps.job_assoc[w], caps.job_qos[w]], axis=1)
        for key in np.unique(keys, axis=0):
            sel = wait_rows[np.all(keys == key, axis=1)]
            vc, g = int(key[0]), float(key[1])
            at = tl.index(t[sel])
            part = split.covered_intervals(at, at)
            q = quota.get(vc) if vc >= 0 else None
            user_over = caps.over(part, g, (int(key[2]), int(key[3])))
            state = split.class_state(tl, part, g, usage.get(vc) if q is not None else None, q, None, rule, user_over)
            causes = split.cause_at(state, t[sel])
            label[sel] = np.array(CAUSES, dtype=object)[causes]
            if not tl.placement_known:
                label[sel[causes == split.OTHER]] = "other (fragmentation unknown)"
    out = pl.DataFrame(
        {
            "source": source,
            "reason": rows.get_column("reason"),
            "replay_cause": label.astype(str),
            "job_id": rows.get_column("job_id"),
        }
    )
    return (
        out.group_by("source", "reason", "replay_cause")
        .agg(pl.len().cast(pl.Int64).alias("snapshots"), pl.col("job_id").n_unique().cast(pl.Int64).alias("jobs"))
        .sort("reason", "replay_cause")
    )
