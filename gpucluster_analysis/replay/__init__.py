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
from datetime import UTC, datetime

import duckdb
import numpy as np
import polars as pl
from polars.datatypes import DataTypeClass

from gpucluster_analysis import wait_causes
from gpucluster_analysis.db.queries import create_temp_tables, run_query, temp_table_exists
from gpucluster_analysis.replay import split
from gpucluster_analysis.replay.caps import UserCaps, build_user_caps
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
    integral_at,
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

TIMELINE_MAX_BINS = 1500
_BIN_WIDTHS_S = (60, 300, 600, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400, 28 * 86400)
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
            _epoch_bounds(period),
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
    pending = _pending(source, pend_df, job_df, tl, waits, splittable, usage, quota, rule, caps)

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
        _cluster_row(source, tl, in_period, rule, mach_df, hold_df),
        _quota_rows(source, vcs, quota, quota_origin, usage, weights, limits),
        _timeline(source, tl, period),
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


def _pending(
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


def _cluster_row(
    source: str, tl: Timeline, weights: np.ndarray, rule: LocalityRule, mach_df: pl.DataFrame, hold_df: pl.DataFrame
) -> pl.DataFrame:
    span = float(weights.sum())

    def mean(values: np.ndarray) -> float | None:  # time-weighted over the trace
        return float((values * weights).sum() / span) if span > 0 else None

    idle_any = float(weights[tl.idle_machines > 0].sum() / span * 100) if span > 0 and tl.placement_known else None
    known = hold_df.filter(pl.col("gpus").is_not_null())
    gpu_s = (known.get_column("end_s") - known.get_column("start_s")) * known.get_column("gpus")
    placed_s = float(gpu_s.filter(known.get_column("machine_id").is_not_null()).sum() or 0.0)
    total_s = float(gpu_s.sum() or 0.0)
    return pl.DataFrame(
        [
            {
                "source": source,
                "machines": tl.machines,
                "capacity_gpus": tl.capacity,
                "capacity_basis": tl.capacity_basis,
                "largest_machine_gpus": tl.largest_machine if tl.placement_known else None,
                "placement_known": tl.placement_known,
                "placed_gpu_time_pct": placed_s / total_s * 100 if total_s > 0 else None,
                "attempts_unknown_gpus": hold_df.filter(pl.col("gpus").is_null())
                .select("job_id", "attempt_no")
                .unique()
                .height,
                "locality_rule": rule.describe(),
                "mean_held_gpus": mean(tl.held),
                "mean_load_pct": (mean(tl.held) or 0.0) / tl.capacity * 100 if tl.capacity > 0 and span > 0 else None,
                "mean_free_gpus": mean(tl.free),
                "mean_idle_machines": mean(tl.idle_machines) if tl.placement_known else None,
                "time_with_idle_machine_pct": idle_any,
                "listed_machines": int(mach_df.get_column("listed_gpus").is_not_null().sum()),
            }
        ]
    )


def _quota_rows(
    source: str,
    vcs: list[str],
    quota: dict[int, float | None],
    origin: dict[int, str],
    usage: dict[int, Steps],
    weights: np.ndarray,
    limits: pl.DataFrame,
) -> pl.DataFrame:
    """One row per VC (kind vc: its quota, held GPUs beside it), then one per per-user cap
    sacctmgr gave (kind user: a user in an account; qos_user: each user in a QOS)."""
    span = float(weights.sum())
    rows = [
        {
            "source": source,
            "vc": vc,
            "quota_gpus": quota[c],
            "origin": origin[c],
            "peak_held_gpus": float(usage[c].values.max()) if usage[c].values.size else 0.0,
            # the dense product, summed as before (one VC's grid at a time: memory of one grid)
            "mean_held_gpus": float((usage[c].dense() * weights).sum() / span) if span > 0 else None,
            "p95_held_gpus": weighted_quantile(usage[c].values, usage[c].weights(weights), QUOTA_QUANTILE),
            "kind": "vc",
            "user": None,
            "qos": None,
        }
        for c, vc in enumerate(vcs)
    ]
    caps = limits.filter(pl.col("kind").is_in(["user", "qos_user"]) & pl.col("gpus").is_not_null())
    rows += [
        {
            "source": source,
            "vc": x["vc"],
            "quota_gpus": x["gpus"],
            "origin": "sacctmgr",
            "peak_held_gpus": None,
            "mean_held_gpus": None,
            "p95_held_gpus": None,
            "kind": x["kind"],
            "user": x["user_name"],
            "qos": x["qos"],
        }
        for x in caps.iter_rows(named=True)
    ]
    schema = {
        "source": pl.Utf8,
        "vc": pl.Utf8,
        "quota_gpus": pl.Float64,
        "origin": pl.Utf8,
        "peak_held_gpus": pl.Float64,
        "mean_held_gpus": pl.Float64,
        "p95_held_gpus": pl.Float64,
        "kind": pl.Utf8,
        "user": pl.Utf8,
        "qos": pl.Utf8,
    }
    return pl.DataFrame(rows, schema=schema)


def _epoch_bounds(period: tuple[datetime | None, datetime | None]) -> tuple[float | None, float | None]:
    return tuple(None if t is None else t.replace(tzinfo=UTC).timestamp() for t in period)  # type: ignore[return-value]  # two in, two out


def _timeline(source: str, tl: Timeline, period: tuple[float | None, float | None] = (None, None)) -> pl.DataFrame:
    """Time-weighted means per bin of at most TIMELINE_MAX_BINS bins over the trace (or the period)."""
    first, last = (tl.T[1], tl.T[-1]) if tl.n > 1 else (tl.T[0], tl.T[0])
    first = first if period[0] is None else max(first, period[0])
    last = last if period[1] is None else min(last, period[1])
    span = last - first
    schema: dict[str, pl.DataType | DataTypeClass] = {
        "source": pl.Utf8,
        "bin_start": pl.Datetime("us"),
        "bin_s": pl.Int64,
        "free_gpus": pl.Float64,
        "held_gpus": pl.Float64,
        "idle_machines": pl.Float64,
        "capacity_gpus": pl.Float64,
    }
    if span <= 0:
        return pl.DataFrame(schema=schema)
    width = next((w for w in _BIN_WIDTHS_S if span / w <= TIMELINE_MAX_BINS), _BIN_WIDTHS_S[-1])
    edges = np.arange(np.floor(first / width) * width, last + width, width)
    edges = np.clip(edges, first, last)
    lengths = np.diff(edges)
    keep = lengths > 0

    def means(values: np.ndarray) -> np.ndarray:
        total = integral_at(tl.T, values, edges)
        return np.diff(total)[keep] / lengths[keep]

    starts = edges[:-1][keep]
    return pl.DataFrame(
        {
            "source": [source] * int(keep.sum()),
            "bin_start": [datetime.fromtimestamp(float(s), UTC).replace(tzinfo=None) for s in starts],
            "bin_s": np.full(int(keep.sum()), width, dtype=np.int64),
            "free_gpus": means(tl.free),
            "held_gpus": means(tl.held),
            "idle_machines": means(tl.idle_machines) if tl.placement_known else np.full(int(keep.sum()), np.nan),
            "capacity_gpus": np.full(int(keep.sum()), tl.capacity),
        },
        schema=schema,
    ).with_columns(pl.col("idle_machines").fill_nan(None))
