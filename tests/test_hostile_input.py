"""Every sniffer and every parser on random and mutated real inputs (issue #26, Hypothesis).

Whatever a site's files hold, gca answers in bounded time, with a stored row, a counted reject or a
one-line refusal of the whole file; never a traceback. For each input format, a small real file
(tests/data, examples/) is mutated the ways careless and hostile files differ from the real ones
(lines dropped, doubled or swapped, the file cut anywhere, fields replaced by values a parser
chokes on, bytes that are not text, a very long line) and ingested into a store:

* nothing but a GcaError (a one-line message) may come out of the ingest;
* each file within BOUND_S;
* a file that failed left the store exactly as it was;
* a file that loaded is in `ingested_files` with the rows and rejects its report gives, and
  each of its rejects is in the `rejects` table;
* for the formats with one job per line (Helios, Acme, Alibaba), every data line is a stored job,
  a job met again or a counted reject.

Sniffers get random text and mutated heads: a bool, quickly, never an exception.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucluster_analysis.db.connect import configure_session
from gpucluster_analysis.db.schema import apply_schema
from gpucluster_analysis.errors import GcaError
from gpucluster_analysis.ingest import IngestOptions, ingest_paths
from gpucluster_analysis.ingest.registry import FORMATS, detect_format
from tests.marks import keep_by_default

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
BOUND_S = 20.0  # one small file, whatever it holds (shared 2-core machine)
# (Hypothesis' own deadline is off: it measures the first run of an example, which includes
# DuckDB's warm-up; BOUND_S is checked on every file instead.)
# Examples per format: a fixed few in the default run (derandomized: the same every run);
# GCA_HOSTILE_EXAMPLES=500 explores, with fresh random examples each time.
EXAMPLES = int(os.environ.get("GCA_HOSTILE_EXAMPLES", "12"))
EXPLORE = "GCA_HOSTILE_EXAMPLES" in os.environ

# format -> a small real file of it (its name kept: some formats are known by it)
SEEDS: dict[str, Path] = {
    "philly_job_log": DATA / "traces" / "philly_in_helios_layout.csv",
    "helios": DATA / "traces" / "cluster_log.csv",
    "acme": DATA / "traces" / "trace_seren.csv",
    "alibaba_gpu2023": DATA / "traces" / "openb_pod_list_sample.csv",
    "stepfun_faults": DATA / "traces" / "fault_trace_sample.json",
    "nvsmi_csv": DATA / "gpu" / "nvidia-smi-node01.csv",
    "nvsmi_dmon": DATA / "gpu" / "node04.dmon.log",
    "nvsmi_xml": DATA / "gpu" / "node06.xml",
    "dcgm_prom": DATA / "gpu" / "r6i3n0.prom",
    "dcgm_query_range": DATA / "gpu" / "dcgm_query_range.json",
    "dcgmi_dmon": DATA / "gpu" / "real" / "dcgm-host-engine.dmon",
    "slurm_sacct": DATA / "slurm" / "parsable2.txt",
    "slurm_scontrol": DATA / "slurm" / "scontrol.txt",
    "slurm_squeue": DATA / "slurm" / "live" / "squeue.log",
    "slurm_nodes": DATA / "slurm" / "live" / "nodes.txt",
    "slurm_assoc": DATA / "slurm" / "live" / "assoc.txt",
    "slurm_qos": DATA / "slurm" / "live" / "qos.txt",
    "job_log": REPO / "examples" / "slurm" / "logs" / "slurm-4812018.out",
}
# The Philly formats are read from files named as the trace names them; a few lines of each.
PHILLY = {
    "philly_gpu_util": REPO / "examples" / "synthetic" / "cluster_gpu_util",
    "philly_cpu_util": REPO / "examples" / "synthetic" / "cluster_cpu_util",
    "philly_mem_util": REPO / "examples" / "synthetic" / "cluster_mem_util",
    "philly_machine_list": REPO / "examples" / "synthetic" / "cluster_machine_list",
    "philly_job_log": REPO / "examples" / "synthetic" / "cluster_job_log",
    "alibaba_node_list": DATA / "traces" / "openb_pod_list_gpuspec33_head.csv",
}
SEED_LINES = 40
ONE_JOB_PER_LINE = {"helios", "acme", "alibaba_gpu2023"}

HOSTILE = [
    "",
    "-1",
    "0",
    "1e309",
    "NaN",
    "inf",
    "-9223372036854775809",
    "99999999999999999999",
    "1000000000",
    "2999-01-01 00:00:00",
    "0000-00-00",
    "1969-12-31T23:59:59",
    "9999-12-31T23:59:59Z",
    "\x00",
    "\ufeff",
    '"',
    "'",
    ",",
    "|",
    "\t",
    "\r",
    "=cmd|' /C calc'!A0",
    "<a href='x'>v</a>",
    "\x1b[31m",
    "\u202e",
    "Unknown",
    "N/A",
    "[N/A]",
    "gpu[1-100000000]",
    "gres/gpu=1000000000",
    "a" * 100_000,
]


def _seed(fmt: str) -> tuple[str, bytes]:
    path = SEEDS.get(fmt) or PHILLY[fmt]
    data = path.read_bytes()
    if fmt == "philly_job_log" and path.name == "cluster_job_log":
        return path.name, data[:20_000]  # a JSON array: cut, which is itself a mutation
    lines = data.split(b"\n")
    return path.name, b"\n".join(lines[:SEED_LINES]) + (b"\n" if len(lines) > SEED_LINES else b"")


@st.composite
def _mutations(draw: st.DrawFn, data: bytes) -> bytes:
    lines = data.split(b"\n")
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["drop", "double", "swap", "cut", "field", "bytes", "long", "crlf"]))
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        if kind == "drop":
            del lines[i]
        elif kind == "double":
            lines.insert(i, lines[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "cut":
            text = b"\n".join(lines)
            lines = text[: draw(st.integers(0, len(text)))].split(b"\n")
        elif kind == "field":
            line = lines[i]
            sep = next((s for s in (b"|", b",", b"\t", b" ") if s in line), b" ")
            fields = line.split(sep)
            k = draw(st.integers(0, len(fields) - 1))
            fields[k] = draw(st.sampled_from(HOSTILE)).encode("utf-8")
            lines[i] = sep.join(fields)
        elif kind == "bytes":
            lines[i] = lines[i] + draw(st.binary(min_size=1, max_size=40))
        elif kind == "long":
            lines.insert(i, draw(st.sampled_from(HOSTILE[-1:] + ["x" * 300_000])).encode())
        elif kind == "crlf":
            lines = [line + b"\r" for line in lines]
    return b"\n".join(lines)


def _store() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    configure_session(con)
    apply_schema(con)
    return con


def _counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT internal").fetchall()]
    # one statement for all tables: a statement per table cost more than the ingest it checks
    union = " UNION ALL ".join(f"SELECT '{t}', count(*) FROM \"{t}\"" for t in tables)
    return dict(con.execute(union).fetchall()) if tables else {}


def _check_one(con: duckdb.DuckDBPyConnection, path: Path, content: bytes, fmt: str | None) -> None:
    path.write_bytes(content)
    before = _counts(con)
    started = time.perf_counter()
    try:
        (report,) = ingest_paths(con, [path], IngestOptions(), format_name=fmt)
    except GcaError:  # the whole input refused, before any file was read
        assert _counts(con) == before
        return
    took = time.perf_counter() - started
    assert took < BOUND_S, f"{fmt}: {took:.1f} s for {len(content):,} bytes"
    if report.status == "failed":
        assert isinstance(report.error, GcaError) and "\n" not in report.message, report.message
        assert _counts(con) == before, f"{fmt}: a failed file changed the store: {report.message}"
        return
    if report.status in ("unchanged", "skipped"):
        return
    assert report.status in ("loaded", "replaced"), report.status
    file_id, rows, rejects = con.execute(
        "SELECT file_id, rows_loaded, rejects FROM ingested_files WHERE path = ? ORDER BY file_id DESC LIMIT 1",
        [str(path.resolve())],
    ).fetchall()[0]
    assert (rows, rejects) == (report.rows, report.rejects)
    stored_rejects = con.execute("SELECT count(*) FROM rejects WHERE file_id = ?", [file_id]).fetchall()[0][0]
    assert stored_rejects == report.rejects
    if fmt in ONE_JOB_PER_LINE:
        data_lines = sum(1 for line in content.replace(b"\r", b"").split(b"\n")[1:] if line.strip())
        assert report.rows + report.rejects + report.superseded + report.unchanged == data_lines, (
            f"{fmt}: {data_lines} data lines, {report.rows} stored, {report.rejects} rejected, "
            f"{report.superseded + report.unchanged} met again"
        )


FORMAT_NAMES = sorted({f.name for f in FORMATS})


def test_every_format_has_a_seed() -> None:
    assert set(FORMAT_NAMES) <= set(SEEDS) | set(PHILLY)


# Kept by default: a format of each family (the rest mutate the same readers' other formats).
@pytest.mark.parametrize(
    "fmt",
    keep_by_default(FORMAT_NAMES, {"dcgm_query_range", "job_log", "slurm_scontrol", "slurm_qos", "philly_job_log"}),
)
def test_mutated_real_file_is_stored_rejected_or_refused(fmt: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    name, seed = _seed(fmt)
    con = _store()
    folder = tmp_path_factory.mktemp(fmt)
    if fmt == "job_log":
        (folder / "logs").mkdir()
    counter = iter(range(10**9))

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=not EXPLORE,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(content=_mutations(seed), detect=st.booleans())
    def check(content: bytes, detect: bool) -> None:
        sub = folder / f"{next(counter)}"
        sub.mkdir()
        _check_one(con, sub / name, content, None if detect else fmt)

    try:
        check()
    finally:
        con.close()


@settings(max_examples=max(200, EXAMPLES), deadline=None, database=None, derandomize=not EXPLORE)
@given(
    head=st.one_of(st.text(max_size=4000), st.binary(max_size=4000).map(lambda b: b.decode("utf-8", "replace"))),
    name=st.sampled_from(
        ["sacct.txt", "node01.csv", "cluster_job_log", "x.prom", "nodes.txt", "a.json", "trace_seren.csv"]
    ),
)
def test_sniffers_answer_quickly_on_random_text(head: str, name: str) -> None:
    started = time.perf_counter()
    for fmt in FORMATS:
        assert fmt.sniff(head) in (True, False)
    detect_format(Path(name), head)
    assert time.perf_counter() - started < 1.0
