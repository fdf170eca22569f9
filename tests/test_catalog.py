"""The query catalog (analyze/catalog.py): what it derives from sql/queries/ holds for the SQL.

The reads are checked here against each query's text directly, not through the catalog: a
query that runs beside the replay reads none of its results, a temp table exists before every
query that reads it, a heavy query scans a sample table."""

from __future__ import annotations

import re

import pytest

from gpucluster_analysis.analyze import catalog
from gpucluster_analysis.errors import QueryError
from gpucluster_analysis.sqlfiles import list_sql, load_sql

SAMPLE_TABLES = ("gpu_samples", "host_samples", "gpu_sample_details")


def _code(name: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in load_sql("queries", name).splitlines())


def _names(name: str, table: str) -> bool:
    return re.search(rf"\b{table}\b", _code(name)) is not None


def test_every_query_file_is_in_the_catalog_with_its_stage() -> None:
    queries = catalog.catalog()
    assert sorted(queries) == list_sql("queries")
    for name, query in queries.items():
        stage = re.findall(r"^-- Stage: (\w+)", load_sql("queries", name), re.MULTILINE)
        assert stage == [query.stage], name
        assert query.stage in catalog.STAGES


def test_queries_beside_the_replay_read_none_of_its_tables() -> None:
    after_replay = {catalog.REPLAY_JOBS_TABLE, *(table for table, _query in catalog.after_replay_tables())}
    assert "job_facts" in after_replay  # jobs.sql's rows, stored under the name its header gives
    beside = catalog.beside_replay_queries()
    assert set(beside) < set(catalog.result_queries())
    for name in beside:
        read = {t for t in after_replay if _names(name, t)}
        assert not read, f"{name} reads {read}"
    # the others read some of them, or a table made from them (else they could run beside the replay too)
    made_after = after_replay | {q.table for q in catalog.catalog().values() if q.reads & after_replay}
    for name in set(catalog.result_queries()) - set(beside):
        assert any(_names(name, t) for t in made_after), name
    assert "queue_delay_by_vc" not in beside and "gpu_sample_interval" in beside


def test_every_temp_table_is_made_before_a_query_reads_it() -> None:
    made: set[str] = set()
    tables = {q.table for q in catalog.catalog().values() if q.table}
    for name, query in catalog.catalog().items():
        for table in tables - made - {query.table}:
            assert not _names(name, table), f"{name} reads {table} before it is made"
        if query.table:
            made.add(query.table)
    # the replay reads every table made before it starts, the selection narrows them after
    before = catalog.replay_tables()
    assert {"job_keys", "attempt_sizes", "attempt_attribution"} <= set(before)
    assert "attempt_windows" in catalog.beside_replay_tables() and "attempt_windows" not in before


def test_heavy_and_kept_queries_scan_the_samples() -> None:
    heavy = catalog.heavy_queries()
    assert {"attributed_util", "gpu_samples_by_machine"} <= heavy
    for name in heavy:
        assert any(_names(name, t) or _names(name, f"period_{t}") for t in SAMPLE_TABLES), name
    # a probe of the telemetry's first day, not a scan: it stays in DuckDB
    assert "gpu_sample_interval" not in heavy
    assert set(catalog.kept_queries()) <= heavy
    # kept for any selection: only what is made over every job, before the selection
    assert catalog.kept_for_every_selection() == {"gpu_samples_by_machine"}


def test_parameters_and_period_views_are_read_from_the_sql() -> None:
    queries = catalog.catalog()
    assert queries["queue_delay_cdf_by_vc"].parameters == {"top_vcs"}
    assert queries["selected_jobs"].parameters == {"since", "until", "vcs", "users", "sources"}
    assert not queries["jobs"].parameters
    assert set(catalog.period_tables()) == {t for name in queries for t in SAMPLE_TABLES if _names(name, f"period_{t}")}
    assert catalog.read_after_selection("attempts") and not catalog.read_after_selection("pending_reasons")


def test_a_header_without_a_known_stage_is_refused() -> None:
    with pytest.raises(QueryError, match="Stage"):
        catalog.read_header("q", "-- q: a query\nSELECT 1")
    with pytest.raises(QueryError, match="not one of"):
        catalog.read_header("q", "-- Stage: someday\nSELECT 1")
    assert catalog.read_header("jobs", "-- Stage: after_replay, as job_facts\nSELECT 1") == (
        "after_replay",
        "job_facts",
        False,
        False,
    )


def _result_names_read_by_the_report() -> dict[str, set[str]]:
    """Each name the report's modules read from the results by a literal (`r["name"]`,
    `r.get("name")`, where `r` is the results mapping), with the modules that read it."""
    import ast
    from pathlib import Path

    import gpucluster_analysis.report as report

    found: dict[str, set[str]] = {}
    for path in sorted(Path(report.__file__).parent.rglob("*.py")):
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # only where `r` is the results: a parameter `r: dict[str, pl.DataFrame]`
            if not isinstance(function, ast.FunctionDef) or not any(
                a.arg == "r" and a.annotation is not None and "DataFrame" in ast.unparse(a.annotation)
                for a in function.args.args
            ):
                continue
            for node in ast.walk(function):
                name = None
                if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "r":
                    name = node.slice.value if isinstance(node.slice, ast.Constant) else None
                elif (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "get"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "r"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                ):
                    name = node.args[0].value
                if isinstance(name, str):
                    found.setdefault(name, set()).add(path.name)
    return found


def test_every_result_the_report_reads_is_one_the_analysis_computes(sample_report) -> None:
    """The sections read their results by name: a name that is no result (a typo, a query
    renamed) would read nothing. Every name read is one a report of the sample store wrote
    (a CSV per result), or the baseline comparison's, which only a report with a baseline has."""
    read = _result_names_read_by_the_report()
    assert len(read) > 40  # the scan finds the sections' reads
    written = {path.stem for path in sample_report.tables}
    unknown = {name: sorted(modules) for name, modules in read.items() if name not in written | {"comparison"}}
    assert not unknown, unknown
