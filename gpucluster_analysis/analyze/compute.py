"""What a report shows of one selection of jobs, computed: jobs.csv, every named query's result,
the training-speed analysis and the significance tests (`compute`).

The temp tables come first (analyze/prepare.py, with the replay of the queue beside them), then
the results of analyze/catalog.py's `result` stage, each bound to the parameters it names
(analyze/parameters.py); those that read nothing of the replay run while it computes. The
heaviest come from what ingest kept (analyze/kept.py) where still current, or from another
engine (spark/engine.py) where the report runs one. Nothing here draws or writes a file:
report/ presents what `compute` returns.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import duckdb
import polars as pl

from gpucluster_analysis.analyze import catalog, parameters, statistics
from gpucluster_analysis.analyze.kept import read_kept
from gpucluster_analysis.analyze.kept import usable as usable_kept
from gpucluster_analysis.analyze.prepare import Engine, format_for_csv, jobs_table, prepare, prepare_report, run_named
from gpucluster_analysis.analyze.selection import Selection
from gpucluster_analysis.db import open_store, upgrade_older_store
from gpucluster_analysis.db.queries import run_query
from gpucluster_analysis.errors import StoreError
from gpucluster_analysis.replay.rules import LocalityRule, Quotas
from gpucluster_analysis.speed import variability


@dataclass
class Period:
    """What the report computed for one selection."""

    selection: Selection
    jobs: pl.DataFrame  # jobs.csv
    sizes: pl.DataFrame  # source, job_id, size_bucket, size_order (job_keys)
    results: dict[str, pl.DataFrame]
    tests: list[statistics.TestResult]


@contextmanager
def open_input(db: Path, dataset: Path | None, log: Callable[[str], None]) -> Iterator[duckdb.DuckDBPyConnection]:
    """The store, read-only (upgraded first when an older gca wrote it), or a Parquet dataset's views."""
    if dataset is not None:
        from gpucluster_analysis.dataset import open_dataset

        with open_dataset(dataset) as con:
            yield con
        return
    if upgrade_older_store(db):
        log(f"upgraded {db} to the current schema (it came from an older gca)")
    with open_store(db, read_only=True) as con:
        yield con


def compute(
    con: duckdb.DuckDBPyConnection,
    log: Callable[[str], None],
    quotas: Quotas | None,
    locality: LocalityRule,
    selection: Selection,
    heavy: Engine | None,
) -> Period:
    """Everything the report shows of one selection: jobs.csv, the query results, the tests."""
    timed = timed_tables(log)
    # what ingest kept of the heaviest queries' results, where still current (analyze/kept.py)
    kept = frozenset() if heavy is not None else usable_kept(con, selection)
    if kept:
        log(f"kept from ingest, not computed again: {', '.join(sorted(kept))}")
    early: dict[str, pl.DataFrame] = {}
    with step(log, "preparing: attempt windows, GPU-sample attribution, queueing replay, job tables"):
        replay = prepare(
            con,
            on_table=timed,
            quotas=quotas,
            locality=locality,
            selection=selection,
            heavy=heavy,
            kept=kept,
            beside_replay=lambda: early.update(run_queries(con, log, heavy, kept, catalog.beside_replay_queries())),
        )
        prepare_report(con, on_table=timed)
    with step(log, "jobs table"):
        jobs = format_for_csv(jobs_table(con, prepared=True))
        sizes = con.sql("SELECT source, job_id, size_bucket, size_order FROM job_keys").pl()
    with step(log, f"{len(catalog.result_queries())} report queries"):
        results = run_queries(con, log, heavy, kept, catalog.result_queries(), early)
        results.update(
            quotas=replay.quotas,
            wait_clusters=replay.clusters,
            wait_timeline=replay.timeline,
            pending_reasons_vs_replay=replay.pending,
        )
        results.update(speed_results(con, heavy))
        per_job = run_query(con, "job_gpu_util_by_attributes")
    results = {name: whole_counts(df) for name, df in results.items()}
    tests = statistics.locality_tests(whole_counts(per_job))
    results["gpu_util_locality_tests"] = statistics.tests_frame(tests)
    return Period(selection=selection, jobs=jobs, sizes=sizes, results=results, tests=tests)


# Columns that count things (GPUs, servers, jobs): floats only because a source can have
# fractions (Alibaba's shared GPUs) or because SQL summed them.
_COUNT_COLUMN = re.compile(
    r"^(?:num_)?(?:gpus|servers|nodes|machines|jobs|attempts|samples|files|families|trials|retries)$"
    r"|_(?:gpus|servers|jobs|attempts|samples|count)$|^(?:gpu|size)_?(?:count|gpus)?$"
)


def whole_counts(df: pl.DataFrame) -> pl.DataFrame:
    """Count columns whose values are all whole numbers as integers, so that the page says
    `8-GPU jobs`, not `8.0-GPU jobs` (a fraction, where a source has one, stays)."""
    casts = []
    for column, dtype in df.schema.items():
        if dtype.is_float() and _COUNT_COLUMN.search(column):
            values = df.get_column(column).drop_nulls()
            if values.is_nan().any():
                continue
            if values.is_empty() or ((values == values.floor()).all() and cast(float, values.abs().max()) < 2**53):
                casts.append(pl.col(column).cast(pl.Int64))
    return df.with_columns(casts) if casts else df


def timed_tables(log: Callable[[str], None]) -> Callable[[str, float], None]:
    def on_table(name: str, seconds: float) -> None:
        if seconds >= 1.0:  # only the ones worth knowing about at scale
            log(f"  {name}: {seconds:.1f} s")

    return on_table


@contextmanager
def step(log: Callable[[str], None], what: str) -> Iterator[None]:
    t = time.perf_counter()
    yield
    log(f"{what}: {time.perf_counter() - t:.1f} s")


def check_store(con: duckdb.DuckDBPyConnection, db: Path) -> None:
    hint = f"run `gca ingest PATH... --db {db}` first"
    # information_schema lists views too: a dataset's tables are views over its Parquet files
    tables = {
        r[0]
        for r in con.sql(
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_catalog = current_database() AND table_schema = 'main'"
        ).fetchall()
    }
    if "jobs" not in tables:
        raise StoreError(f"{db}: not a gca store (it has no jobs table)", hint=hint)
    if not con.sql("SELECT count(*) FROM jobs").fetchall()[0][0]:
        raise StoreError(f"{db}: the store holds no jobs, so there is nothing to report", hint=hint)


def run_queries(
    con: duckdb.DuckDBPyConnection,
    log: Callable[[str], None],
    heavy: Engine | None = None,
    kept: frozenset[str] = frozenset(),
    names: tuple[str, ...] | None = None,
    done: dict[str, pl.DataFrame] | None = None,
) -> dict[str, pl.DataFrame]:
    """The named queries `names` (default: the report's results; gpu_sample_interval first: the
    others take its interval), in that order; those in `done` are taken from it, not run again."""
    done = done or {}
    names = catalog.result_queries() if names is None else names
    interval = done["gpu_sample_interval"] if "gpu_sample_interval" in done else run_query(con, "gpu_sample_interval")
    interval_s = interval.get_column("interval_s")[0] if interval.height else None
    params = parameters.query_parameters(interval_s)
    results = {"gpu_sample_interval": interval}
    for name in names:
        if name in done:
            results[name] = done[name]
        elif name not in results:
            started = time.perf_counter()
            if name in kept:
                results[name] = con.sql(read_kept(con, name)).pl()
            else:
                results[name] = run_named(con, name, heavy, **params)
            if (seconds := time.perf_counter() - started) >= 1.0:
                log(f"  {name}: {seconds:.1f} s")
    return results


def speed_results(con: duckdb.DuckDBPyConnection, heavy: Engine | None = None) -> dict[str, pl.DataFrame]:
    """Training speed by machine and GPU relative to the same families elsewhere, and locality's cost in speed."""
    attempts = con.sql("SELECT * FROM attempt_speeds ORDER BY source, job_id, attempt_no").pl()
    placed = run_query(con, "attempt_machines")
    ratios = variability.attempt_ratios(attempts, placed)
    machines = variability.relative_speed(ratios, ["machine_id"])
    by_gpu = ratios.join(
        placed.filter(pl.col("gpu_index").is_not_null()), on=["source", "job_id", "attempt_no", "machine_id"]
    )
    gpus = variability.relative_speed(by_gpu, ["machine_id", "gpu_index"])
    loc = variability.locality_cost(attempts)
    health = run_named(con, "machine_telemetry_health", heavy)
    flagged = health.join(machines.select("machine_id", "flag"), on="machine_id", how="inner")
    telemetry = (
        flagged.group_by("flag")
        .agg(
            pl.len().alias("machines"),
            pl.col("detail_samples").sum(),
            pl.col("throttled_pct").mean(),
            pl.col("mean_sm_clock_mhz").mean(),
            pl.col("mean_temp_c").mean(),
        )
        .sort("flag")
        if not flagged.is_empty()
        else flagged
    )
    summary = pl.DataFrame(
        [
            {
                "attempts": attempts.height,
                "jobs": attempts.select("source", "job_id").n_unique() if attempts.height else 0,
                "families": attempts.get_column("family").n_unique() if attempts.height else 0,
                "machines": machines.height,
                "slow_machines": machines.filter(pl.col("flag") == "slow").height,
                "locality_families": loc.families,
                "locality_median_ratio": loc.median_ratio,
                "locality_p_value": loc.p_value,
            }
        ],
        schema_overrides={"locality_median_ratio": pl.Float64, "locality_p_value": pl.Float64},
    )
    return {
        "speed_summary": summary,
        "machine_speed": machines.select(list(variability.MACHINE_COLUMNS)),
        "gpu_speed": gpus,
        "speed_locality": loc.per_family,
        "slow_machine_telemetry": telemetry,
    }
