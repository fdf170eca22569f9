"""Replay a store's cluster over time and split every second of queueing into its cause.

`replay_store(con, quotas, locality)` reads the store through the named queries
`replay_*` (DuckDB does the reading and joining), rebuilds each source's cluster as step
functions over its event times (`timeline`), and splits each job's first wait into
user_limit / fair_share / capacity / fragmentation / other (`split`). Retry waits are kept
whole. It needs no report: the report is one of its readers.

Quotas: a `--quotas` file wins; else the accounts' GPU limits Slurm's sacctmgr gave (table
quotas), for a source that has any; else each VC's quota is inferred. Per-user caps
(`caps`) come only from sacctmgr: without them no second is user_limit.

Each source (philly, slurm, ...) is its own cluster. Where a source names no machines
(Helios, Acme, Alibaba pods), per-machine state is unknown: fragmentation is not split
(NULL) and the cluster's size is its node list's, or else the most GPUs ever held at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import duckdb
import numpy as np
import polars as pl

from gpucluster_analysis import wait_causes
from gpucluster_analysis.db.queries import create_temp_tables, run_query, temp_table_exists
from gpucluster_analysis.replay import split
from gpucluster_analysis.replay.caps import UserCaps, build_user_caps
from gpucluster_analysis.replay.outputs import cluster_row, epoch_bounds, quota_rows, timeline_bins
from gpucluster_analysis.replay.pending import pending_vs_causes
from gpucluster_analysis.replay.rules import DEFAULT_LOCALITY, LocalityRule, Quotas, load_quotas, parse_locality
from gpucluster_analysis.replay.split import CAUSES, RELAX_ABOVE_GPUS, RELAX_AFTER_MIN, WaitJobs
from gpucluster_analysis.replay.timeline import (
    QUOTA_QUANTILE,
    Holdings,
    Steps,
    Timeline,
    build_timeline,
    event_grid,
    grid_index,
    vc_usage,
    weighted_quantile,
)

__all__ = [
    "CAUSES",
    "LocalityRule",
    "Quotas",
    "Replay",
    "ReplayInputs",
    "load_quotas",
    "parse_locality",
    "read_inputs",
    "replay_inputs",
    "replay_store",
]

# Tables the replay's queries join; the report builds them too (the same named queries).
_NEEDED = (
    ("gpu_samples_by_machine", "gpu_samples_by_machine"),
    ("attempt_sizes", "attempt_sizes"),
    ("job_keys", "job_keys"),
    ("attempt_attribution", "attempt_attribution"),
)


@dataclass
class Replay:
    """What the replay found, as tables (polars), one set for the whole store."""

    jobs: pl.DataFrame  # per job: waits by cause, retry wait, what-if savings
    clusters: pl.DataFrame  # per source: machines, capacity, how it was known, load, idle machines
    quotas: pl.DataFrame  # per (source, VC), then per-user cap: the limit used and where it came from
    timeline: pl.DataFrame  # per (source, time bin): free GPUs, idle machines, held GPUs
    pending: pl.DataFrame  # the scheduler's pending reasons vs the replay's causes
    locality: LocalityRule
    quotas_origin: str  # "file <path>", sacctmgr's files, or the inference method


@dataclass
class ReplayInputs:
    """What the replay reads of the store (its replay_* queries), before any computing."""

    holdings: pl.DataFrame
    machines: pl.DataFrame
    jobs: pl.DataFrame
    pending: pl.DataFrame
    limits: pl.DataFrame


def replay_store(
    con: duckdb.DuckDBPyConnection,
    quotas: Quotas | None = None,
    locality: LocalityRule = DEFAULT_LOCALITY,
    log: Callable[[str], None] = lambda _msg: None,
    period: tuple[datetime | None, datetime | None] = (None, None),
) -> Replay:
    """Replay every source of the store (read-only: temp tables only).

    `period` (naive UTC [since, until)) bounds only what the replay says of the cluster
    (load, idle machines: `clusters`, `timeline`); every job still takes part, and the
    quotas are those of the whole store."""
    return replay_inputs(read_inputs(con), quotas, locality, log, period)


def read_inputs(con: duckdb.DuckDBPyConnection) -> ReplayInputs:
    """The store's rows the replay needs (DuckDB reads and joins them; temp tables only)."""
    _prepare(con)
    return ReplayInputs(
        holdings=run_query(con, "replay_holdings"),
        machines=run_query(con, "replay_machines"),
        jobs=run_query(con, "replay_jobs"),
        pending=run_query(con, "replay_pending"),
        limits=run_query(con, "replay_quotas"),
    )


def replay_inputs(
    inputs: ReplayInputs,
    quotas: Quotas | None = None,
    locality: LocalityRule = DEFAULT_LOCALITY,
    log: Callable[[str], None] = lambda _msg: None,
    period: tuple[datetime | None, datetime | None] = (None, None),
) -> Replay:
    """The replay of what read_inputs read: numpy and polars only, no store (so it may run
    in a thread of its own while the store's connection does other work)."""
    holdings, machines, jobs, pending, limits = (
        inputs.holdings,
        inputs.machines,
        inputs.jobs,
        inputs.pending,
        inputs.limits,
    )
    sources = sorted(set(jobs.get_column("source").to_list()))
    origins = {source: _origin(quotas, limits.filter(pl.col("source") == source)) for source in sources}
    parts = [
        _replay_source(
            source,
            holdings.filter(pl.col("source") == source),
            machines.filter(pl.col("source") == source),
            jobs.filter(pl.col("source") == source),
            pending.filter(pl.col("source") == source),
            quotas,
            limits.filter(pl.col("source") == source),
            locality,
            log,
            epoch_bounds(period),
        )
        for source in sources
    ]
    origin = "; ".join(dict.fromkeys(origins.values())) if origins else _origin(quotas, limits.head(0))
    unattributed = machines.filter(pl.col("source").is_null()).height
    clusters = pl.concat([p[1] for p in parts], how="vertical_relaxed") if parts else _empty_clusters()
    clusters = clusters.with_columns(pl.lit(unattributed).alias("machines_unattributed"))
    clusters = clusters.with_columns(
        pl.col("source").replace_strict(origins, default=origin, return_dtype=pl.Utf8).alias("quotas_origin")
        if parts
        else pl.lit(origin).alias("quotas_origin")
    )
    return Replay(
        jobs=pl.concat([p[0] for p in parts], how="vertical_relaxed").sort("source", "job_id")
        if parts
        else _empty_jobs(),
        clusters=clusters,
        quotas=pl.concat([p[2] for p in parts], how="vertical_relaxed") if parts else pl.DataFrame(),
        timeline=pl.concat([p[3] for p in parts], how="vertical_relaxed") if parts else pl.DataFrame(),
        pending=pl.concat([p[4] for p in parts], how="vertical_relaxed") if parts else pl.DataFrame(),
        locality=locality,
        quotas_origin=origin,
    )


def _origin(quotas: Quotas | None, limits: pl.DataFrame) -> str:
    """Where one source's VC quotas come from, in words."""
    if quotas is not None:
        return f"file {quotas.path}"
    accounts = _account_limits(limits)
    if accounts is not None:
        files = ", ".join(sorted(set(limits.filter(pl.col("kind") == "account").get_column("path").to_list())))
        return f"sacctmgr: the accounts' GrpTRES gres/gpu ({files})"
    return (
        f"inferred: each VC's time-weighted {round(QUOTA_QUANTILE * 100)}th percentile of the GPUs it held,"
        " at least its largest started job"
    )


def _account_limits(limits: pl.DataFrame) -> dict[str, float | None] | None:
    """Account -> GPU limit (None: listed without one) from sacctmgr, where it gave any GPU limit."""
    accounts = limits.filter(pl.col("kind") == "account")
    if accounts.filter(pl.col("gpus").is_not_null()).is_empty():
        return None
    return {r["vc"]: r["gpus"] for r in accounts.iter_rows(named=True)}


def _prepare(con: duckdb.DuckDBPyConnection) -> None:
    create_temp_tables(con, [t for t in _NEEDED if not temp_table_exists(con, t[0])])
    if not temp_table_exists(con, "machine_capacity_snapshot"):
        con.execute("CREATE TEMP TABLE machine_capacity_snapshot AS SELECT * FROM machine_capacity")
    create_temp_tables(con, [("replay_bounds", "replay_bounds")])


def _empty_clusters() -> pl.DataFrame:
    return pl.DataFrame(schema={"source": pl.Utf8})


JOB_COLUMNS = {
    "source": pl.Utf8,
    "job_id": pl.Utf8,
    "started": pl.Boolean,
    "gpus": pl.Float64,
    "wait_s": pl.Float64,
    **{column: pl.Float64 for column in wait_causes.COLUMNS},
    "wait_retry_s": pl.Float64,
    "source_has_user_caps": pl.Boolean,
    **{f"saved_relaxed_after_{t}min_s": pl.Float64 for t in RELAX_AFTER_MIN},
    "saved_borrowing_s": pl.Float64,
}


def _empty_jobs() -> pl.DataFrame:
    return pl.DataFrame(schema=JOB_COLUMNS)


def _replay_source(
    source: str,
    hold_df: pl.DataFrame,
    mach_df: pl.DataFrame,
    job_df: pl.DataFrame,
    pend_df: pl.DataFrame,
    quotas: Quotas | None,
    limits: pl.DataFrame,
    rule: LocalityRule,
    log: Callable[[str], None],
    period: tuple[float | None, float | None] = (None, None),
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    vcs = sorted(pl.concat([hold_df.get_column("vc"), job_df.get_column("vc")]).drop_nulls().unique().to_list())
    vc_code = {v: i for i, v in enumerate(vcs)}
    machine_ids = mach_df.get_column("machine_id").to_list()
    machine_code = {m: i for i, m in enumerate(machine_ids)}
    known = hold_df.filter(pl.col("gpus").is_not_null())
    holdings = Holdings(
        start=known.get_column("start_s").to_numpy().astype(float),
        end=known.get_column("end_s").to_numpy().astype(float),
        machine=_codes(known.get_column("machine_id"), machine_code),
        vc=_codes(known.get_column("vc"), vc_code),
        gpus=known.get_column("gpus").to_numpy().astype(float),
    )
    capacities = mach_df.get_column("gpus").to_numpy().astype(float)
    wait_from = job_df.get_column("wait_from_s").to_numpy().astype(float)
    wait_until = job_df.get_column("wait_until_s").to_numpy().astype(float)
    gpus = job_df.get_column("gpus").to_numpy().astype(float)
    job_vc = _codes(job_df.get_column("vc"), vc_code)
    has_wait = np.isfinite(wait_from) & np.isfinite(wait_until) & (wait_until >= wait_from)
    T = event_grid(holdings, wait_from[has_wait])
    grid = grid_index(T, holdings)  # once, for the timeline and every VC's usage
    tl = build_timeline(T, holdings, capacities, None, grid)
    log(f"replay {source}: {len(T):,} event times, {tl.machines:,} machines, {tl.capacity:,.0f} GPUs")

    weights = tl.durations()
    weights[0] = 0.0  # the lead interval before the first event is no part of the trace
    usage = {c: vc_usage(T, holdings, c, grid) for c in range(len(vcs))}
    quota, quota_origin = _quotas(vcs, usage, weights, quotas, _account_limits(limits), job_vc, gpus, job_df)
    caps = build_user_caps(T, limits, known, job_df)
    idle_quota = None
    if any(q is not None for q in quota.values()):
        idle_quota = np.zeros(len(T))
        for c, q in quota.items():
            if q is not None:
                idle_quota += np.maximum(q - usage[c].dense(), 0.0)

    splittable = has_wait & np.isfinite(gpus) & (gpus > 0)
    waits = WaitJobs(job_vc, gpus, wait_from, wait_until)
    result = _split_classes(tl, waits, splittable, usage, quota, idle_quota, rule, caps)
    pending = pending_vs_causes(source, pend_df, job_df, tl, waits, splittable, usage, quota, rule, caps)

    by_cause = result["seconds"]
    frag_known = tl.placement_known
    jobs_out = pl.DataFrame(
        {
            "source": job_df.get_column("source"),
            "job_id": job_df.get_column("job_id"),
            "started": job_df.get_column("started"),
            "gpus": job_df.get_column("gpus").cast(pl.Float64),
            "wait_s": pl.Series(np.where(has_wait, wait_until - wait_from, np.nan)).fill_nan(None),
            # each cause's seconds; fragmentation's unknown where the source names no machines
            **{
                column: _col(by_cause[:, i], splittable & frag_known if i == split.FRAGMENTATION else splittable)
                for i, column in enumerate(wait_causes.COLUMNS)
            },
            "wait_retry_s": job_df.get_column("wait_retry_s"),
            "source_has_user_caps": np.full(job_df.height, caps.any),
            **{
                f"saved_relaxed_after_{t}min_s": _col(
                    result["relax"][:, i], splittable & (gpus > RELAX_ABOVE_GPUS) & frag_known
                )
                for i, t in enumerate(RELAX_AFTER_MIN)
            },
            "saved_borrowing_s": _col(result["borrow"], splittable & (idle_quota is not None)),
        }
    )
    jobs_out = jobs_out.cast(JOB_COLUMNS)  # type: ignore[arg-type]  # polars' stubs: cast()'s keys wider than str
    in_period = tl.durations_within(*period)
    in_period[0] = 0.0  # as weights[0]
    return (
        jobs_out,
        cluster_row(source, tl, in_period, rule, mach_df, hold_df),
        quota_rows(source, vcs, quota, quota_origin, usage, weights, limits),
        timeline_bins(source, tl, period),
        pending,
    )


def _codes(names: pl.Series, code: dict[str, int]) -> np.ndarray:
    """Each name's code (int64), -1 for a name not in `code` or none (vectorized: a million rows)."""
    if not code:
        return np.full(len(names), -1, dtype=np.int64)
    return (
        names.cast(pl.Utf8)
        .replace_strict(code, default=-1, return_dtype=pl.Int64)
        .fill_null(-1)
        .to_numpy()
        .astype(np.int64)
    )


def _col(values: np.ndarray, mask: np.ndarray) -> pl.Series:
    return pl.Series(np.where(mask, np.round(values, 3), np.nan)).fill_nan(None)


def _quotas(
    vcs: list[str],
    usage: dict[int, Steps],
    weights: np.ndarray,
    quotas: Quotas | None,
    accounts: dict[str, float | None] | None,
    job_vc: np.ndarray,
    gpus: np.ndarray,
    job_df: pl.DataFrame,
) -> tuple[dict[int, float | None], dict[int, str]]:
    """Each VC's quota and where it came from: the file, else sacctmgr's accounts, else inferred."""
    if quotas is not None:
        quota = {c: quotas.gpus.get(v) for c, v in enumerate(vcs)}
        return quota, {c: "file" if q is not None else "not in the file" for c, q in quota.items()}
    if accounts is not None:
        quota = {c: accounts.get(v) for c, v in enumerate(vcs)}
        return quota, {c: "sacctmgr" if q is not None else "sacctmgr: no GPU limit" for c, q in quota.items()}
    started = job_df.get_column("started").to_numpy()
    out: dict[int, float | None] = {}
    for c in range(len(vcs)):
        p = weighted_quantile(usage[c].values, usage[c].weights(weights), QUOTA_QUANTILE)
        ran = gpus[(job_vc == c) & started & np.isfinite(gpus)]
        largest = float(ran.max()) if ran.size else 0.0
        out[c] = None if p is None else max(p, largest)
    return out, {c: "inferred" for c in out}


def _split_classes(
    tl: Timeline,
    jobs: WaitJobs,
    splittable: np.ndarray,
    usage: dict[int, Steps],
    quota: dict[int, float | None],
    idle_quota: np.ndarray | None,
    rule: LocalityRule,
    caps: UserCaps,
) -> dict[str, np.ndarray]:
    n_jobs = len(jobs.gpus)
    seconds = np.zeros((n_jobs, len(CAUSES)))
    relax = np.zeros((n_jobs, len(RELAX_AFTER_MIN)))
    borrow = np.zeros(n_jobs)
    rows = np.flatnonzero(splittable)
    if not rows.size:
        return {"seconds": seconds, "relax": relax, "borrow": borrow}
    # a class: jobs of one VC, size and per-user cap groups (both -1 where the store has no caps)
    order = rows[np.lexsort((caps.job_qos[rows], caps.job_assoc[rows], jobs.gpus[rows], jobs.vc[rows]))]
    keys = np.stack([jobs.vc[order], jobs.gpus[order], caps.job_assoc[order], caps.job_qos[order]], axis=1)
    breaks = np.flatnonzero(np.any(keys[1:] != keys[:-1], axis=1)) + 1
    for members in np.split(order, breaks):
        first = members[0]
        vc, g = int(jobs.vc[first]), float(jobs.gpus[first])
        a, b = jobs.wait_from[members], jobs.wait_until[members]
        part = split.covered_intervals(tl.index(a), tl.index(b))
        q = quota.get(vc) if vc >= 0 else None
        user_over = caps.over(part, g, (int(caps.job_assoc[first]), int(caps.job_qos[first])))
        state = split.class_state(
            tl,
            part,
            g,
            usage.get(vc) if q is not None else None,
            q,
            idle_quota if q is not None else None,
            rule,
            user_over,
        )
        seconds[members] = split.seconds_by_cause(state, a, b)
        if g > RELAX_ABOVE_GPUS and tl.placement_known:
            fragmented = state.cause == split.FRAGMENTATION
            for i, minutes in enumerate(RELAX_AFTER_MIN):
                relax[members, i] = split.saved_by_first(state, fragmented, np.minimum(a + 60.0 * minutes, b), b)
        if state.borrowable is not None:
            borrow[members] = split.saved_by_first(state, state.borrowable, a, b)
    return {"seconds": seconds, "relax": relax, "borrow": borrow}
