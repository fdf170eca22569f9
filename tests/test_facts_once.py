"""Each fact defined once (issue #27, part 3): the wait causes, the failure categories, the
missing-value spellings, the GPU measures' ranges and the schema version.

Per fact, two kinds of test: no second copy of it in gca's Python or SQL (a list of the
causes, a range written as a literal, a version number in a migration), and its consumers
agree with the one definition (jobs.csv's columns and the figure's legend in the causes'
order, the SQL macros and parameters, both ways of reading telemetry).
"""

from __future__ import annotations

import ast
import csv
import json
import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pytest
from store_helpers import ingest

from gpucluster_analysis import bounds, failure_categories, missing_values, wait_causes
from gpucluster_analysis.db.fact_macros import create_fact_macros
from gpucluster_analysis.db.queries import run_query
from gpucluster_analysis.db.schema import SCHEMA_VERSION, apply_schema, migration_versions
from gpucluster_analysis.sqlfiles import load_sql, run_script

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gpucluster_analysis"
SQL = ROOT / "sql"
LIVE = Path(__file__).parent / "data" / "slurm" / "live"  # per-user caps: all five causes occur


def python_files(*, but: str) -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p.name != but]


def sql_files() -> list[Path]:
    return sorted(SQL.rglob("*.sql"))


def sql_code(path: Path) -> str:
    """The SQL of a file without its comments (our files put no `--` inside a string)."""
    return "\n".join(line.split("--", 1)[0] for line in path.read_text(encoding="utf-8").splitlines())


def literal_collections(path: Path) -> Iterator[tuple[int, set[str]]]:
    """(line, the str constants in it) of every tuple, list or set literal and dict's keys."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = node.elts
        elif isinstance(node, ast.Dict):
            items = [k for k in node.keys if k is not None]
        else:
            continue
        strings = {e.value for e in items if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        if strings:
            yield node.lineno, strings


def str_constants(path: Path) -> Iterator[tuple[int, str]]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def connection() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    create_fact_macros(con)
    return con


# --- wait causes ---------------------------------------------------------------------------


def test_wait_causes_are_listed_nowhere_else_in_python() -> None:
    names, columns = set(wait_causes.NAMES), set(wait_causes.COLUMNS)
    copies = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in python_files(but="wait_causes.py")
        for line, strings in literal_collections(path)
        # a rule may name the causes it is about (a Slurm reason's two); a list of them is a copy
        if len(strings & names) >= 3 or len(strings & columns) >= 2
    ]
    assert not copies, f"wait causes listed outside gpucluster_analysis/wait_causes.py: {copies}"


def test_wait_causes_are_listed_nowhere_in_sql() -> None:
    spelled = re.compile(r"'(" + "|".join(wait_causes.NAMES) + r")'|\bwait_(" + "|".join(wait_causes.NAMES) + r")_s\b")
    copies = {}
    for path in sql_files():
        found = {a or b for a, b in spelled.findall(sql_code(path))}
        if len(found) > 1:  # a query may test one cause's column (wait_other_s: the job was split)
            copies[str(path.relative_to(ROOT))] = sorted(found)
    assert not copies, f"SQL naming several wait causes instead of wait_causes() / wait_cause_columns(): {copies}"


def contiguous(sequence: list[str], part: tuple[str, ...]) -> bool:
    start = sequence.index(part[0])
    return tuple(sequence[start : start + len(part)]) == part


def test_wait_cause_consumers_take_the_definition() -> None:
    from gpucluster_analysis.analyze import prepare
    from gpucluster_analysis.replay import JOB_COLUMNS, split
    from gpucluster_analysis.report import figure_style, summary
    from gpucluster_analysis.report.sections import wait_causes as section
    from gpucluster_analysis.synth import waits as synth_waits

    assert contiguous(list(JOB_COLUMNS), wait_causes.COLUMNS)
    assert contiguous(list(prepare.JOBS_COLUMNS), wait_causes.COLUMNS)
    assert split.CAUSES == wait_causes.NAMES
    codes = {split.USER_LIMIT, split.FAIR_SHARE, split.CAPACITY, split.FRAGMENTATION, split.OTHER}
    assert codes == set(range(len(wait_causes.NAMES)))
    assert wait_causes.NAMES[split.FRAGMENTATION] == "fragmentation" and wait_causes.NAMES[split.OTHER] == "other"
    assert tuple(figure_style.CAUSE_COLORS) == tuple(section.CAUSE_WORDS) == summary.CAUSES == wait_causes.NAMES
    assert len(set(figure_style.CAUSE_COLORS.values())) == len(wait_causes.NAMES)  # one colour each
    # the generator writes no per-user caps: every cause but user_limit, in the same order
    assert synth_waits.CAUSES == tuple(c for c in wait_causes.NAMES if c != "user_limit")
    assert synth_waits.CAUSE_COLUMNS == tuple(f"wait_{c}_s" for c in synth_waits.CAUSES)


def test_wait_cause_macros_are_the_definition() -> None:
    con = connection()
    rows = con.sql("SELECT cause, cause_order, column_name, needs_user_caps FROM wait_causes()").fetchall()
    assert rows == [(c.name, i, f"wait_{c.name}_s", c.name == "user_limit") for i, c in enumerate(wait_causes.CAUSES)]
    assert con.sql("SELECT wait_cause_columns()").fetchall() == [(list(wait_causes.COLUMNS),)]


@pytest.fixture(scope="module")
def live_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from gpucluster_analysis.report.build import build_report

    d = tmp_path_factory.mktemp("facts")
    db = d / "live.duckdb"
    ingest(db, *(LIVE / name for name in ("sacct.txt", "nodes.txt", "assoc.txt", "qos.txt", "squeue.log")))
    build_report(db, d / "report")
    return d / "report"


def plotted(html: str, div: str) -> list[dict[str, object]]:
    """The traces of one figure of the report's HTML, as Plotly.newPlot gets them."""
    at = html.index(f'Plotly.newPlot(                        "{div}",')
    start = html.index("[", at)
    return json.JSONDecoder().raw_decode(html[start:])[0]


def test_jobs_csv_tables_and_legend_follow_the_causes_order(live_report: Path) -> None:
    with (live_report / "jobs.csv").open() as f:
        header = next(csv.reader(f))
    assert contiguous(header, wait_causes.COLUMNS)
    with (live_report / "wait_causes_by_size.csv").open() as f:
        every = [r for r in csv.DictReader(f) if r["size_bucket"] == "all"]
    assert [r["cause"] for r in every] == list(wait_causes.NAMES)  # all five occur in this capture
    assert [int(r["cause_order"]) for r in every] == list(range(len(wait_causes.NAMES)))
    html = (live_report / "index.html").read_text(encoding="utf-8")
    for div in ("fig-wait-causes-by-size", "fig-wait-causes-by-vc"):
        traces = plotted(html, div)
        names = [t["name"] for t in traces]
        assert names == [c for c in wait_causes.NAMES if c in names] and len(names) >= 4, (div, names)
        assert [t["marker"]["color"] for t in traces] == [wait_causes.COLORS[n] for n in names]


# --- failure categories --------------------------------------------------------------------

CATEGORY_NAMES = set(failure_categories.REPORT_ORDER)


def test_failure_categories_are_listed_nowhere_else() -> None:
    copies = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in python_files(but="failure_categories.py")
        for line, strings in literal_collections(path)
        if len(strings & CATEGORY_NAMES) >= 3
    ]
    # the report's own two categories are the macro failure_label's, nowhere else
    copies += [
        f"{path.relative_to(ROOT)}:{line}"
        for path in python_files(but="failure_categories.py")
        for line, text in str_constants(path)
        if text in (failure_categories.NO_CAUSE, failure_categories.NO_LOG)
    ]
    for path in sql_files():
        code = sql_code(path)
        quoted = {m for m in re.findall(r"'([^']*)'", code) if m in CATEGORY_NAMES}
        if len(quoted) >= 3 or {failure_categories.NO_CAUSE, failure_categories.NO_LOG} & quoted:
            copies.append(f"{path.relative_to(ROOT)}: {sorted(quoted)}")
    assert not copies, f"failure categories listed outside gpucluster_analysis/failure_categories.py: {copies}"


def test_failure_category_consumers_agree() -> None:
    from gpucluster_analysis.classify import load_signatures
    from gpucluster_analysis.classify.rules import CATEGORIES
    from gpucluster_analysis.report import figure_style
    from gpucluster_analysis.synth.model import REASON_CATEGORY

    assert CATEGORIES is failure_categories.CATEGORIES
    assert failure_categories.TAXONOMY == ("infrastructure", "framework", "user", "unknown")  # docs/domain.md
    assert tuple(figure_style.CATEGORY_COLORS) == failure_categories.REPORT_ORDER
    assert {s.category for s in load_signatures() if s.reason} <= set(failure_categories.TAXONOMY)
    assert all(CATEGORIES[reason] == category for reason, category in REASON_CATEGORY.items())
    con = connection()
    assert con.sql("SELECT failure_category_order()").fetchall() == [(list(failure_categories.REPORT_ORDER),)]
    labels = con.sql(
        "SELECT failure_label(h, r, c) FROM (VALUES (false, 'cuda_oom', 'framework'), (true, 'none', 'none'),"
        " (true, 'cuda_oom', 'framework')) t(h, r, c)"
    ).fetchall()
    assert labels == [("no log",), ("no cause in the log",), ("framework",)]


def test_failure_categories_query_orders_by_the_definition() -> None:
    con = connection()
    # one failed attempt per report category, in no particular order
    con.execute(
        "CREATE TEMP TABLE failure_trials AS SELECT * FROM (VALUES"
        " ('s', 'j1', 10.0, 5.0, false, 'none', 'none'),"
        " ('s', 'j2', 10.0, 5.0, true, 'key_error', 'user'),"
        " ('s', 'j3', 10.0, 5.0, true, 'none', 'none'),"
        " ('s', 'j4', 10.0, 5.0, true, 'unknown', 'unknown'),"
        " ('s', 'j5', 10.0, 5.0, true, 'nccl_error', 'infrastructure'),"
        " ('s', 'j6', 10.0, 5.0, true, 'cuda_oom', 'framework'))"
        " t(source, job_id, gpu_time_lost_s, runtime_to_failure_s, has_evidence, reason, category)"
    )
    for query in ("failure_categories", "failure_rtf_cdf"):
        got = run_query(con, query).get_column("category").to_list()
        assert got == list(failure_categories.REPORT_ORDER), query


# --- missing-value spellings ---------------------------------------------------------------


def test_missing_words_are_listed_nowhere_else() -> None:
    distinctive = {"not supported", "not available"}  # the words no other reader's nulls share
    copies = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in python_files(but="missing_values.py")
        for line, text in str_constants(path)
        if text.lower() in distinctive or "not supported|not available" in text.lower()
    ]
    copies += [
        str(path.relative_to(ROOT))
        for path in sql_files()
        if {m.lower() for m in re.findall(r"'([^']*)'", sql_code(path))} & distinctive
    ]
    assert not copies, f"missing-value spellings outside gpucluster_analysis/missing_values.py: {copies}"


SPELLINGS = ["", "  ", "N/A", " n/a ", "[N/A]", "[Not Supported]", "[Unknown Error]", "[Insufficient Permissions]"]
SPELLINGS += [
    "-",
    "Unknown",
    "NONE",
    "Not Supported",
    "not available",
    " [Requested functionality has been deprecated] ",
]
VALUES = ["26 %", "0", "81559 MiB", "nan", "n/a%", "--", "unknownx", "1"]


def test_sql_and_fast_readers_call_the_same_text_missing() -> None:
    con = duckdb.connect()
    run_script(con, "ingest", "nvsmi_macros", missing_values.sql_params())
    texts = SPELLINGS + VALUES + [None]
    sql = [r[0] for r in con.execute("SELECT gpu_missing(v) FROM unnest(?) t(v)", [texts]).fetchall()]
    fast = pl.DataFrame({"v": texts}, schema={"v": pl.String}).select(missing_values.is_missing(pl.col("v")))["v"]
    expected = [True] * len(SPELLINGS) + [False] * len(VALUES) + [True]
    assert sql == expected
    assert fast.to_list() == expected
    # the fast nvidia-smi reader's line pattern takes the spellings as a field's whole text
    pattern = re.compile(missing_values.MISSING_PATTERN)
    assert [bool(pattern.fullmatch(t.strip())) for t in SPELLINGS] == [True] * len(SPELLINGS)
    assert not any(pattern.fullmatch(t) for t in VALUES)


# --- value ranges --------------------------------------------------------------------------


def test_measure_ranges_are_written_nowhere_else() -> None:
    literal_range = re.compile(r"BETWEEN\s+-?\d+(\.\d+)?\s+AND\s+\d+|outside\s+\d+-\d+|_(?:util|pct)\s*[<>]=?\s*100\b")
    copies = [str(p.relative_to(ROOT)) for p in sql_files() if literal_range.search(sql_code(p))]
    every = bounds.MEASURE_RANGES | bounds.HOST_MEASURE_RANGES
    ranges = {(low, high) for low, high in every.values() if low is not None and high is not None}
    for path in python_files(but="bounds.py"):
        if "synth" in path.parts:
            continue  # the generator draws values, it checks none
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Tuple) and all(isinstance(e, ast.Constant) for e in node.elts):
                if tuple(e.value for e in node.elts) in ranges:
                    copies.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not copies, f"GPU measure ranges written outside gpucluster_analysis/bounds.py: {copies}"


def test_range_consumers_agree() -> None:
    from gpucluster_analysis.ingest.gpu import dcgm_fast, nvsmi_fast

    assert dcgm_fast.RANGES is bounds.MEASURE_RANGES
    assert {m for _, _, m in nvsmi_fast._MEASURES.values()} <= set(bounds.MEASURE_RANGES)
    params = bounds.sql_params()
    for script in ("nvsmi_check", "philly_gpu_util", "philly_cpu_util"):
        named = set(re.findall(r"\$(\w+?)_(min|max|range)\b", sql_code(SQL / "ingest" / f"{script}.sql")))
        assert named, script
        for measure, part in named:
            low, high = (bounds.MEASURE_RANGES | bounds.HOST_MEASURE_RANGES)[measure]
            assert params[f"{measure}_{part}"] == {"min": low, "max": high, "range": f"{low:g}-{high:g}"}[part]


@pytest.mark.parametrize(("value", "reason"), [("100 %", None), ("0 %", None), ("100.5 %", "outside 0-100: 100.5 %")])
def test_utilization_range_is_held_by_both_ways(tmp_path: Path, value: str, reason: str | None) -> None:
    """One nvidia-smi CSV row through the fast way and the exact way (a row the fast way
    leaves to SQL): the same rows and rejects at the bounds of bounds.MEASURE_RANGES."""
    header = "timestamp, index, utilization.gpu [%], memory.used [MiB]\n"
    path = tmp_path / "node01.csv"
    # (a second, plain row: a file whose every row is rejected fails whole)
    rows = f"2026/07/14 08:12:38.696, 0, {value}, 1000 MiB\n2026/07/14 08:12:39.696, 0, 5 %, 1000 MiB\n"
    path.write_text(header + rows)
    db = tmp_path / "s.duckdb"
    ingest(db, path)
    with duckdb.connect(str(db), read_only=True) as con:
        stored = con.sql("SELECT util_pct FROM gpu_samples WHERE util_pct <> 5").fetchall()
        rejected = [r[0] for r in con.sql("SELECT reason FROM rejects").fetchall()]
    if reason is None:
        assert stored == [(float(value.split()[0]),)] and rejected == []
    else:
        assert stored == [] and len(rejected) == 1 and rejected[0].endswith(reason)


# --- schema version ------------------------------------------------------------------------


def test_schema_version_is_written_once_per_migration() -> None:
    numbered = re.compile(r"version\s*(=|<|>|<=|>=)\s*\d")
    copies = [str(p.relative_to(ROOT)) for p in sorted((SQL / "schema").glob("*.sql")) if numbered.search(sql_code(p))]
    for path in python_files(but="__nothing__"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "SCHEMA_VERSION" for t in node.targets):
                if isinstance(node.value, ast.Constant):
                    copies.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not copies, f"schema version numbers outside the migrations' first lines: {copies}"


def test_schema_versions_count_up_and_every_migration_records_its_own() -> None:
    versions = [v for v in migration_versions().values() if v is not None]
    assert versions == list(range(1, len(versions) + 1))
    assert SCHEMA_VERSION == versions[-1]
    for name, version in migration_versions().items():
        if version is not None and version > 1:
            assert "SET version = getvariable('migration_version')" in load_sql("schema", name), name
    con = duckdb.connect()
    apply_schema(con)
    assert con.sql("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    con.execute("UPDATE schema_version SET version = 2")
    apply_schema(con)  # an older store climbs every step after its own
    assert con.sql("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
