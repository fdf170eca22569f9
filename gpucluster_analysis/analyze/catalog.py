"""The named queries of `sql/queries/`, read once, and the report's pipeline derived from them.

Each file's header names its stage on a line `-- Stage: <stage>[, heavy][, kept][, as <table>]`:

  every_job     a temp table over every job, made before the selection narrows them (those the
                replay reads first, the others while it computes)
  selected      a temp table over the selected jobs, made while the replay computes
  after_replay  a temp table that reads the replay's per-job waits (replay_job_waits)
  result        a result of the report, written as <name>.csv
  input         a result a computation in Python reads (analyze/compute.py: speed, statistics)
  replay        read by the replay of queueing (gpucluster_analysis/replay)
  selection     the selected jobs (analyze/selection.py)

`heavy`: it scans a sample table, and runs in Spark under `--engine spark` (spark/engine.py);
`kept`: ingest keeps its result in the store (analyze/kept.py); `as <table>`: the temp table's
name, where it is not the query's. What a query reads is found in its SQL: the temp tables of
the pipeline its text names (comments left out), and the sample tables it reads through the
selection's `period_<table>` views. Its parameters are the `$name`s of its text. Within a
stage the queries are ordered by what they read, then by name.

A new query is a new file with its header: the tuples below are derived, never written out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from gpucluster_analysis.errors import QueryError
from gpucluster_analysis.sqlfiles import list_sql, load_sql, parameter_names, strip_comments

# The stages in the order a report runs them.
STAGES = ("every_job", "replay", "selection", "selected", "after_replay", "input", "result")
# Stages whose queries are stored as temp tables that later queries read by name.
TABLE_STAGES = frozenset({"every_job", "selected", "after_replay"})
# The replay's per-job waits: a temp table made from the replay's result, not by a query.
REPLAY_JOBS_TABLE = "replay_job_waits"

_STAGE_LINE = re.compile(r"^-- Stage: (.+)$", re.MULTILINE)
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Query:
    """One named query, as its file says."""

    name: str
    stage: str
    words: frozenset[str]  # the names its SQL text holds, comments left out
    table: str | None  # the temp table it is stored as (table stages only)
    parameters: frozenset[str]
    reads: frozenset[str]  # the pipeline's temp tables it reads (REPLAY_JOBS_TABLE included)
    period_tables: frozenset[str]  # sample tables it reads through period_<table>
    heavy: bool
    kept: bool


def read_header(name: str, sql: str) -> tuple[str, str | None, bool, bool]:
    """(stage, temp table, heavy, kept) from a file's `-- Stage:` line."""
    found = _STAGE_LINE.findall(sql)
    if len(found) != 1:
        raise QueryError(f"sql/queries/{name}.sql: its header needs one line '-- Stage: <stage>'")
    stage, *flags = [part.strip() for part in found[0].split(",")]
    if stage not in STAGES:
        raise QueryError(f"sql/queries/{name}.sql: stage {stage!r} is not one of {', '.join(STAGES)}")
    tables = [flag.removeprefix("as ") for flag in flags if flag.startswith("as ")]
    unknown = [flag for flag in flags if flag not in ("heavy", "kept") and not flag.startswith("as ")]
    if unknown:
        raise QueryError(f"sql/queries/{name}.sql: unknown flags {unknown} on its Stage line")
    table = tables[0] if tables else (name if stage in TABLE_STAGES else None)
    return stage, table, "heavy" in flags, "kept" in flags


@cache
def catalog() -> dict[str, Query]:
    """Every named query by name, in pipeline order (stage, then what it reads, then name)."""
    headers = {
        name: (sql, read_header(name, sql)) for name in list_sql("queries") for sql in [load_sql("queries", name)]
    }
    tables = {table for _sql, (_stage, table, _h, _k) in headers.values() if table} | {REPLAY_JOBS_TABLE}
    found: dict[str, Query] = {}
    for name, (sql, (stage, table, heavy, kept)) in headers.items():
        words = frozenset(_WORD.findall(strip_comments(sql)))
        reads = frozenset(t for t in tables & words if t != table)
        found[name] = Query(
            name=name,
            stage=stage,
            words=words,
            table=table,
            parameters=frozenset(parameter_names(sql)),
            reads=reads,
            period_tables=frozenset(w.removeprefix("period_") for w in words - tables if w.startswith("period_")),
            heavy=heavy,
            kept=kept,
        )
    return {q.name: q for q in _ordered(found)}


def _ordered(queries: dict[str, Query]) -> list[Query]:
    """Stage by stage, each query after the temp tables it reads (ties by name); a query that
    reads a table of a later stage, or a circle of reads, is a QueryError."""
    maker = {q.table: q for q in queries.values() if q.table}
    rank = {stage: i for i, stage in enumerate(STAGES)}
    done: list[Query] = []
    made: set[str] = set()
    for stage in STAGES:
        waiting = sorted((q for q in queries.values() if q.stage == stage), key=lambda q: q.name)
        for q in waiting:
            for table in q.reads:
                if table in maker and rank[maker[table].stage] > rank[stage]:
                    raise QueryError(f"query {q.name} ({stage}) reads {table}, made later ({maker[table].stage})")
        while waiting:
            ready = [q for q in waiting if all(t in made or t not in maker for t in q.reads)]
            if not ready:
                raise QueryError(f"queries {', '.join(q.name for q in waiting)} read each other's tables in a circle")
            first = ready[0]
            done.append(first)
            waiting.remove(first)
            if first.table:
                made.add(first.table)
    return done


def in_stage(stage: str) -> tuple[Query, ...]:
    """The queries of `stage`, in pipeline order."""
    return tuple(q for q in catalog().values() if q.stage == stage)


def _needed(names: set[str]) -> set[str]:
    """The temp tables `names` read, and those they read, and so on."""
    maker = {q.table: q for q in catalog().values() if q.table}
    needed: set[str] = set()
    todo = [t for name in names for t in catalog()[name].reads]
    while todo:
        table = todo.pop()
        if table not in needed:
            needed.add(table)
            if table in maker:
                todo.extend(maker[table].reads)
    return needed


@cache
def replay_tables() -> tuple[str, ...]:
    """The temp tables over every job that the replay reads: made before it starts."""
    needed = _needed({q.name for q in in_stage("replay")})
    return tuple(q.name for q in in_stage("every_job") if q.table in needed)


@cache
def beside_replay_tables() -> tuple[str, ...]:
    """The temp tables over every job that the replay does not read: made while it computes."""
    return tuple(q.name for q in in_stage("every_job") if q.name not in replay_tables())


def before_selection_tables() -> tuple[str, ...]:
    """Every temp table made over every job before the selection narrows them."""
    return replay_tables() + beside_replay_tables()


@cache
def selected_tables() -> tuple[str, ...]:
    """The temp tables over the selected jobs, made while the replay computes."""
    return tuple(q.name for q in in_stage("selected"))


@cache
def after_replay_tables() -> tuple[tuple[str, str], ...]:
    """(temp table, query) of the tables that read the replay's per-job waits."""
    return tuple((q.table or q.name, q.name) for q in in_stage("after_replay"))


@cache
def result_queries() -> tuple[str, ...]:
    """The report's results, each written as <name>.csv."""
    return tuple(q.name for q in in_stage("result"))


@cache
def beside_replay_queries() -> tuple[str, ...]:
    """The results that read nothing the replay makes (its per-job waits and the tables made
    from them): they run while it computes."""
    after = {REPLAY_JOBS_TABLE, *(table for table, _query in after_replay_tables())}
    return tuple(name for name in result_queries() if not _needed({name}) & after)


@cache
def kept_queries() -> tuple[str, ...]:
    """The queries whose results ingest keeps in the store, in the order they are computed."""
    return tuple(q.name for q in catalog().values() if q.kept)


@cache
def kept_for_every_selection() -> frozenset[str]:
    """The kept results that do not depend on which jobs a report selects: made before the selection."""
    return frozenset(name for name in kept_queries() if catalog()[name].stage == "every_job")


@cache
def heavy_queries() -> frozenset[str]:
    """The queries that scan a sample table (run in Spark under --engine spark)."""
    return frozenset(q.name for q in catalog().values() if q.heavy)


@cache
def period_tables() -> tuple[str, ...]:
    """The sample tables queries read through the selection's period_<table> views."""
    return tuple(sorted({t for q in catalog().values() for t in q.period_tables}))


# Stages whose queries run after the selection narrowed the store's per-job rows.
AFTER_SELECTION = frozenset({"selected", "after_replay", "input", "result"})


@cache
def _words_after_selection() -> frozenset[str]:
    return frozenset().union(*(q.words for q in catalog().values() if q.stage in AFTER_SELECTION))


def read_after_selection(table: str) -> bool:
    """Whether a query that runs after the selection names the table `table` (comments left out)."""
    return table in _words_after_selection()


def temp_tables_for(names: tuple[str, ...]) -> tuple[str, ...]:
    """The selected-stage temp tables `names` need (with those among them), in pipeline order."""
    needed = _needed(set(names)) | set(names)
    return tuple(name for name in selected_tables() if catalog()[name].table in needed or name in needed)
