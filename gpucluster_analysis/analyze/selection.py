"""Which jobs a report covers: a period, VCs, users, sources (`gca report --since ... --vc ...`).

A job is selected when its queue start (where `queue_delay_s` counts from: eligible time,
else submit time) falls in [since, until) and its VC, user and source are among those
given (each list empty: any). The replay of the queue still sees every job (the GPUs that
other VCs' jobs held are why selected jobs waited); everything else the report computes
covers the selected jobs only: `apply` leaves the job-level temp tables with those jobs alone
and puts, in front of the store's own tables of per-job rows that the queries after it read
(`jobs`, `attempts`, `allocations`, `attempt_hosts`, ...) and `job_logs`, temp views of the
selected jobs' rows, so every named query reads the selection without knowing of it.
Machine-level figures cover the period: samples counted, host utilization and telemetry
health through the views `period_<sample table>` (`period_gpu_samples`, ...: those the
queries name, analyze/catalog.py), and the replay's load, idle machines and timeline through
replay_store's `period`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb

from gpucluster_analysis.analyze import catalog
from gpucluster_analysis.db.queries import query_errors
from gpucluster_analysis.errors import InputError
from gpucluster_analysis.sqlfiles import bind, load_sql

# Columns that make a row a job's: a table with both holds rows per job.
JOB_COLUMNS = ("source", "job_id")


@dataclass(frozen=True)
class Selection:
    since: datetime | None = None  # naive UTC, inclusive
    until: datetime | None = None  # naive UTC, exclusive
    vcs: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()

    @property
    def everything(self) -> bool:
        return self.since is None and self.until is None and not (self.vcs or self.users or self.sources)

    def describe(self) -> str:
        """The selection in words, for the report's header and the summary ("all jobs" if none)."""
        if self.everything:
            return "all jobs"
        parts = []
        if self.since is not None or self.until is not None:
            since = _show(self.since) if self.since else "the start"
            until = _show(self.until) if self.until else "the end"
            parts.append(f"queued from {since} to {until} (UTC, end excluded)")
        for name, values in (("VC", self.vcs), ("user", self.users), ("source", self.sources)):
            if values:
                parts.append(f"{name} {' or '.join(values)}")
        return "jobs " + ", ".join(parts)


EVERY_JOB = Selection()


def _show(at: datetime) -> str:
    return at.strftime("%Y-%m-%d") if at == at.replace(hour=0, minute=0, second=0, microsecond=0) else at.isoformat(" ")


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_instant(text: str, option: str) -> datetime:
    """An ISO 8601 date or time as naive UTC: UTC unless it names a zone (Z, +02:00)."""
    value = text.strip()
    try:
        if _DATE.fullmatch(value):
            return datetime.fromisoformat(value)
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace(" ", "T", 1))
    except ValueError as e:
        raise InputError(
            f"{option} {text!r}: not a date or time",
            hint="give ISO 8601: 2024-05-01, 2024-05-01T08:00 (UTC) or 2024-05-01T08:00+02:00",
        ) from e
    return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo else parsed


def parse_period(
    since: str | None, until: str | None, *, baseline: bool = False
) -> tuple[datetime | None, datetime | None]:
    """--since/--until (or --baseline-since/--baseline-until) as naive UTC; since must come first."""
    prefix = "--baseline-" if baseline else "--"
    start = parse_instant(since, f"{prefix}since") if since else None
    end = parse_instant(until, f"{prefix}until") if until else None
    if start and end and start >= end:
        raise InputError(
            f"{prefix}since {since} is not before {prefix}until {until}",
            hint=f"the {'baseline ' if baseline else ''}period is [since, until)",
        )
    return start, end


def apply(con: duckdb.DuckDBPyConnection, selection: Selection) -> int:
    """Narrow the report to `selection` (after the replay, before the job-level tables that
    follow it); returns how many jobs it holds. Without a selection it only makes the
    period views, over whole tables. A store that lacks a table is a QueryError."""
    with query_errors("selected_jobs"):
        return _apply(con, selection)


def _apply(con: duckdb.DuckDBPyConnection, selection: Selection) -> int:
    for table in catalog.period_tables():
        period = (
            " WHERE sample_at >= $since AND sample_at < $until"
            if not selection.everything and (selection.since or selection.until)
            else ""
        )
        sql = f"CREATE OR REPLACE TEMP VIEW period_{table} AS SELECT * FROM {_stored(con, table)}{period}"
        # views take no parameters: the bounds are written in as literals (validated datetimes)
        sql = sql.replace("$since", _literal(selection.since or datetime(1, 1, 1))).replace(
            "$until", _literal(selection.until or datetime(9999, 12, 31))
        )
        con.execute(sql)
    if selection.everything:
        return int(con.execute("SELECT count(*) FROM jobs").fetchall()[0][0])
    query = load_sql("queries", "selected_jobs")
    params = {
        "since": selection.since,
        "until": selection.until,
        "vcs": list(selection.vcs),
        "users": list(selection.users),
        "sources": list(selection.sources),
    }
    con.execute(f"CREATE OR REPLACE TEMP TABLE selected_jobs AS {query}", bind(query, params))
    selected = int(con.execute("SELECT count(*) FROM selected_jobs").fetchall()[0][0])
    # the replay's per-job waits, replay_job_waits, come later: `narrow` them
    for table in _per_job(con, catalog.before_selection_tables(), temporary=True):
        _delete_unselected(con, table)
    for table in _job_tables(con):
        con.execute(
            f"CREATE OR REPLACE TEMP VIEW {table} AS SELECT t.* FROM {_stored(con, table)} t "
            "SEMI JOIN selected_jobs s ON s.source = t.source AND s.job_id = t.job_id"
        )
    # job logs name their job by id alone (log_attempts matches them to a source)
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW job_logs AS SELECT t.* FROM {_stored(con, 'job_logs')} t "
        "SEMI JOIN selected_jobs s ON s.job_id = t.job_id"
    )
    return selected


def narrow(con: duckdb.DuckDBPyConnection, selection: Selection, table: str) -> None:
    """Keep the selected jobs' rows of a temp table made after `apply` (per-job rows)."""
    if not selection.everything:
        with query_errors("selected_jobs"):
            _delete_unselected(con, table)


def _delete_unselected(con: duckdb.DuckDBPyConnection, table: str) -> None:
    con.execute(
        f"DELETE FROM {table} t WHERE NOT EXISTS "
        "(SELECT 1 FROM selected_jobs s WHERE s.source = t.source AND s.job_id = t.job_id)"
    )


def _job_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The store's tables (or a dataset's views) of per-job rows that a query after the selection
    reads: the selection stands in front of those."""
    made = {q.table for q in catalog.catalog().values() if q.table}
    stored = _per_job(con, None, temporary=False)
    return [t for t in stored if t not in made and catalog.read_after_selection(t)]


def _per_job(con: duckdb.DuckDBPyConnection, names: tuple[str, ...] | None, temporary: bool) -> list[str]:
    """Of the tables and views `names` (None: all) of the store (or the temp ones), those with rows per job."""
    rows = con.execute(
        "SELECT table_name FROM duckdb_columns() WHERE database_name = ? AND schema_name = 'main'"
        " AND list_contains(?::VARCHAR[], column_name)"
        " GROUP BY table_name HAVING count(DISTINCT column_name) = ? ORDER BY table_name",
        ["temp" if temporary else _database(con), list(JOB_COLUMNS), len(JOB_COLUMNS)],
    ).fetchall()
    found = {r[0] for r in rows}
    return [t for t in (names or sorted(found)) if t in found]


def reset(con: duckdb.DuckDBPyConnection) -> None:
    """Take away a selection's views and table (before another report on the same connection)."""
    for table in (*_job_tables(con), "job_logs"):
        con.execute(f"DROP VIEW IF EXISTS temp.main.{table}")
    con.execute("DROP TABLE IF EXISTS temp.main.selected_jobs")


def _stored(con: duckdb.DuckDBPyConnection, table: str) -> str:
    """The store's own table, by its full name (a temp view of the same name stands in front)."""
    return f'"{_database(con)}".main.{table}'


def _database(con: duckdb.DuckDBPyConnection) -> str:
    return str(con.execute("SELECT current_database()").fetchall()[0][0])


def _literal(at: datetime) -> str:
    return f"TIMESTAMP '{at.isoformat(' ')}'"
