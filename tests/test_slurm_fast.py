"""The fast way of reading sacct -P rows (ingest/slurm/sacct_fast.py) stores exactly what the exact
way (sacct_exact.parse_fields, line by line) stores, and rejects exactly what it rejects.

Each input is ingested twice into new stores: with the fast way off, and on. Every table of
the store must come out the same, row for row (ingest timings apart), and so must each
file's status and message. Inputs: every sacct capture under tests/ and examples/, hostile
generated dumps (odd values in every field, steps, arrays, het jobs, requeues, missing
times, changes of clocks in New York), overlapping nightly dumps, and the benchmark's dump.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import random
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from gpucluster_analysis.db import open_store
from gpucluster_analysis.errors import ParseError
from gpucluster_analysis.ingest import IngestOptions, detect_format, ingest_paths
from gpucluster_analysis.ingest.files import read_head
from gpucluster_analysis.ingest.slurm import link as slurm_link
from gpucluster_analysis.ingest.slurm import sacct_fast, staging, values
from gpucluster_analysis.ingest.slurm import text as slurm_text
from gpucluster_analysis.synth.slurm import generate_slurm_trace
from tests.marks import keep_by_default

ROOT = Path(__file__).resolve().parent.parent
NEW_YORK = "America/New_York"


def _store(db: Path) -> dict[str, list[tuple]]:
    """Every table of the store, rows sorted; the ingest's own timings left out."""
    with open_store(db, read_only=True) as con:
        tables = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE NOT temporary ORDER BY table_name"
            ).fetchall()
        ]
        out = {}
        for table in tables:
            skip = ["seconds", "ingested_at"] if table == "ingested_files" else []
            columns = [
                r[0]
                for r in con.execute(
                    "SELECT column_name FROM duckdb_columns() WHERE table_name = ? AND NOT internal", [table]
                ).fetchall()
                if r[0] not in skip
            ]
            out[table] = sorted(con.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall(), key=repr)
    return out


def _ingest_each(db: Path, paths: list[Path], **options: object) -> list[tuple]:
    """Ingest the files one after the other (as nightly dumps come); each file's outcome."""
    outcomes = []
    with open_store(db) as con:
        for path in paths:
            for report in ingest_paths(con, [path], IngestOptions(**options)):
                outcomes.append(
                    (
                        report.status,
                        report.rows,
                        report.rejects,
                        report.superseded,
                        report.unchanged,
                        report.message.replace(str(path.parent), "<dir>"),
                    )
                )
    return outcomes


def _both_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paths: list[Path], **options: object):
    """(exact store and outcomes, fast store and outcomes, rows typed fast, plain rows sent back)."""
    counts = [0, 0]
    split = sacct_fast.split_clean

    def counted(*args, **kwargs):
        typed, other = split(*args, **kwargs)
        counts[0] += typed.height
        counts[1] += int(other.sum())
        return typed, other

    tmp_path.mkdir(parents=True, exist_ok=True)
    with monkeypatch.context() as m:
        m.setattr(sacct_fast, "eligible", lambda layout: False)
        exact_outcomes = _ingest_each(tmp_path / "exact.duckdb", paths, **options)
    with monkeypatch.context() as m:
        m.setattr(sacct_fast, "split_clean", counted)
        fast_outcomes = _ingest_each(tmp_path / "fast.duckdb", paths, **options)
    return (
        (_store(tmp_path / "exact.duckdb"), exact_outcomes),
        (_store(tmp_path / "fast.duckdb"), fast_outcomes),
        counts[0],
        counts[1],
    )


def _assert_same(exact: tuple, fast: tuple, what: str) -> None:
    (exact_tables, exact_outcomes), (fast_tables, fast_outcomes) = exact, fast
    assert fast_outcomes == exact_outcomes, what
    assert fast_tables.keys() == exact_tables.keys(), what
    for table in exact_tables:
        assert fast_tables[table] == exact_tables[table], f"{what}: {table}"


def _sacct_captures() -> list[Path]:
    found = []
    for path in sorted((ROOT / "tests" / "data").rglob("*.txt")) + [ROOT / "examples" / "slurm" / "sacct.txt"]:
        fmt = detect_format(path, read_head(path))
        if fmt is not None and fmt.name == "slurm_sacct":
            found.append(path)
    return found


@pytest.mark.slow  # every capture under tests/ and examples/ twice; the hostile dumps stay in the default run
def test_every_sacct_capture_the_same_both_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    captures = _sacct_captures()
    assert len(captures) >= 12, captures
    # one store for all of them (a job id met again is the nightly rule's), in New York, where
    # hostile.txt's 1969-12-31T19:00:00 is Slurm's unset time
    exact, fast, typed, _ = _both_ways(tmp_path / "all", monkeypatch, captures, zone=NEW_YORK)
    _assert_same(exact, fast, "captures")
    # a headerless dump, its columns named
    columns = ("JobID", "User", "Account", "State", "ExitCode", "Submit", "Start", "End", "AllocTRES%40", "NodeList")
    exact, fast, fast_rows, _ = _both_ways(
        tmp_path / "columns",
        monkeypatch,
        [ROOT / "tests" / "data" / "slurm" / "noheader.txt"],
        zone=NEW_YORK,
        columns=columns,
    )
    _assert_same(exact, fast, "noheader.txt with --columns")
    assert typed + fast_rows > 200  # examples/slurm/sacct.txt alone has 166 plain rows


# ------------------------------------------------------------- hostile dumps

COLUMNS = [
    "JobID",
    "JobName",
    "User",
    "Account",
    "Partition",
    "QOS",
    "State",
    "ExitCode",
    "DerivedExitCode",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "Timelimit",
    "NNodes",
    "ReqTRES",
    "AllocTRES",
    "NodeList",
]
# Per field: what real dumps print, and what a reader must not take for it.
ODD = {
    "JobID": [
        "abc",
        "12.",
        "12_",
        "12_[1-3",
        "+1",
        "12+x",
        "\u0661\u0662",
        "12 ",
        "0012",
        "12+1234567890",
        "12.batch.0",
    ],
    "JobName": ["", "a|b", "caf\u00e9", "  spaced  ", "x" * 600, "\u540d\u524d", "tab\tinside", "JobID"],
    "User": ["", " bob ", "u\tx", "Unknown"],
    "Account": ["", "ml ", "N/A", "\tml"],
    "Partition": ["", "gpu,debug"],
    "QOS": ["", "normal", "high prio"],
    "State": [
        "CANCELLED by",
        "CANCELLED  by 12",
        "cancelled by 5",
        "WEIRD_STATE",
        "",
        "COMPLETED+",
        "completed",
        "CANCELLED by 0",
        "RESV_DEL_HOLD",
        "DEADLINE",
        "BOOT_FAIL",
        "REQUEUE_HOLD",
        "SPECIAL_EXIT",
    ],
    "ExitCode": ["", "Unknown", "1", "a:b", "99999999999:0", "0:125", "-1:0", "0:9", " 0:0", "0:0 "],
    "time": [
        "Unknown",
        "None",
        "",
        "2024-02-30T10:00:00",
        "2024-13-01T00:00:00",
        "2024-01-01T24:00:00",
        "2024-01-01T10:00:60",
        "1704103200",
        "0",
        "1969-12-31T19:00:00",
        "1970-01-01T00:00:00",
        "2100-01-01T00:00:00",
        "1989-12-31T23:59:59",
        "2024-01-01 10:00:00",
        "2024-1-1T10:00:00",
        "2024-01-01T10:00",
        "n/a",
        "(null)",
        " 2024-01-01T10:00:00",
        "2059-12-31T23:59:59",
        "2999-01-01T00:00:00",
    ],
    "Timelimit": [
        "UNLIMITED",
        "Partition_Limit",
        "30",
        "1-12",
        "1-12:30",
        "45:00",
        "",
        "01:60:00",
        "abc",
        "-00:05:00",
        "99999999999999999999-00:00:00",
        "INVALID",
        "00:30.5",
    ],
    "NNodes": ["", "x", "01", "99999999999", " 2", "200000", "100000"],
    "TRES": [
        "",
        "cpu=4,mem=1G,node=1",
        "gres/gpu=0",
        "cpu=4,gres/gpu=four",
        "cpu=4,,node=1",
        "cpu = 4,gres/gpu=1",
        "gres/gpu:tesla:2(S:0-1)=2",
        "gres/gpu:=1",
        "node=0",
        "gres/gpumem=100M,gres/gpu=1",
        "energy=1315314,gres/gpu=1,node=1",
        "gres/gpu=1,gres/gpu=2",
        "gres/gpu=99999999999999999999",
        "gres/gpu:a100=2,gres/gpu:v100=1,node=2",
        "gres/gpu:a100=1,gres/gpu:a100=2",
        "billing=4,",
        "N/A",
        "a=b=c,gres/gpu=1",
        "node=99999999999",
        "gres/gpu:a100=2",
        # over the bound of GPUs per node (issue #26), or at it
        "gres/gpu=1000000000",
        "gres/gpu:a100=2000,node=1",
        "gres/gpu=1024,node=1",
        "gres/gpu=2049,node=2",
    ],
    "NodeList": [
        "gpu[01-02]",
        "gpu[01-02],cpu7",
        "None assigned",
        "(null)",
        "",
        "gpu[02-01]",
        "gpu[01-",
        "gpu 01",
        "n[1-3]-x[1-2]",
        "none",
        "gpu[001,003-004]",
    ],
}


def _clock(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S")


class _Dump:
    """A hostile sacct -P dump: jobs of every shape, each field odd with probability `odd`."""

    def __init__(self, seed: int, start: datetime, odd: float, step_minutes: int, columns: list[str] = COLUMNS) -> None:
        self.rng, self.start, self.odd, self.step = random.Random(seed), start, odd, step_minutes
        self.columns = columns
        self.lines = ["|".join(columns)]
        self.next_id = 7000

    def pick(self, key: str, good: str) -> str:
        return self.rng.choice(ODD[key]) if self.rng.random() < self.odd else good

    def row(
        self,
        job_id: str,
        at: datetime,
        *,
        state: str,
        step: bool,
        pending: bool = False,
        started: bool = True,
        nodes: str = "gpu01",
        tres: str = "billing=8,cpu=8,gres/gpu=2,mem=64G,node=1",
    ) -> str:
        rng = self.rng
        submit = at - timedelta(minutes=rng.randrange(0, 90))
        start = at
        end = at + timedelta(minutes=rng.randrange(1, 200))
        times = [
            _clock(submit),
            _clock(submit),
            "Unknown" if pending or not started else _clock(start),
            "Unknown" if pending or state == "RUNNING" else _clock(end),
        ]
        fields = {
            "JobID": self.pick("JobID", job_id),
            "JobName": "batch" if step else self.pick("JobName", rng.choice(["train", "eval", "sweep_7"])),
            "User": "" if step else self.pick("User", rng.choice(["ann", "bob", "cy"])),
            "Account": self.pick("Account", rng.choice(["ml", "vision"])),
            "Partition": "" if step else self.pick("Partition", "gpu"),
            "QOS": "" if step else self.pick("QOS", rng.choice(["normal", "high"])),
            "State": self.pick("State", state),
            "ExitCode": self.pick("ExitCode", rng.choice(["0:0", "1:0", "0:15"])),
            # sacct prints a step's DerivedExitCode empty
            "DerivedExitCode": "" if step else self.pick("ExitCode", rng.choice(["0:0", "0:0", "2:0", "0:9", "0:125"])),
            "Submit": self.pick("time", times[0]),
            "Eligible": self.pick("time", times[1]),
            "Start": self.pick("time", times[2]),
            "End": self.pick("time", times[3]),
            "Timelimit": "" if step else self.pick("Timelimit", rng.choice(["01:00:00", "2-00:00:00", "12:00:00"])),
            "NNodes": self.pick("NNodes", "" if rng.random() < 0.3 else "1"),
            "ReqTRES": self.pick(
                "TRES",
                rng.choice(["billing=8,cpu=8,gres/gpu=2,mem=64G,node=1", "cpu=8,gres/gpu:v100=2,mem=64G,node=1", ""]),
            ),
            "AllocTRES": "" if pending else self.pick("TRES", tres),
            "NodeList": "None assigned" if pending else self.pick("NodeList", nodes),
        }
        return "|".join(fields[c] for c in self.columns)

    def job(self, at: datetime) -> None:
        rng = self.rng
        base = str(self.next_id)
        self.next_id += rng.choice([1, 1, 1, 2])
        shape = rng.random()
        nodes = rng.choice(["gpu01", "gpu02", "gpu[01-02]", "gpu[03,05-06]"])
        tres = rng.choice(
            [
                "billing=8,cpu=8,gres/gpu=2,mem=64G,node=1",
                "billing=16,cpu=16,gres/gpu:a100=4,gres/gpu=4,mem=128G,node=2",
                "cpu=4,gres/gpu:v100=1,mem=8G,node=1",
                "cpu=4,mem=8G,node=1",
                # no node count, or 0: NNodes (when empty) falls back to the hosts
                "cpu=4,gres/gpu=1,mem=8G",
                "cpu=4,gres/gpu=1,node=0",
            ]
        )
        state = rng.choice(
            ["COMPLETED"] * 5
            + [
                "FAILED",
                "CANCELLED",
                "CANCELLED by 20001",
                "TIMEOUT",
                "OUT_OF_MEMORY",
                "NODE_FAIL",
                "RUNNING",
                "PREEMPTED",
            ]
        )
        if shape < 0.08:  # pending, an array's pending tasks among them
            job_id = rng.choice([base, f"{base}_[1-3]", f"{base}_[0-9%2]"])
            self.lines.append(self.row(job_id, at, state="PENDING", step=False, pending=True))
            return
        if shape < 0.16:  # requeued: several allocation rows of one JobID, with their steps
            for k in range(rng.randrange(2, 4)):
                last = k == 2 or rng.random() < 0.4
                run_at = at + timedelta(minutes=40 * k)
                # a run requeued before it started (Start Unknown), on its nodes or none
                started = last or rng.random() < 0.6
                self.lines.append(
                    self.row(
                        base,
                        run_at,
                        state=state if last else "REQUEUED",
                        step=False,
                        started=started,
                        pending=not started and rng.random() < 0.5,
                        nodes=nodes,
                        tres=tres,
                    )
                )
                self.lines.append(
                    self.row(f"{base}.batch", run_at, state="CANCELLED" if not last else state, step=True)
                )
                if last:
                    break
            return
        if shape < 0.24:  # a het job: components with their steps
            for part in range(rng.randrange(2, 4)):
                self.lines.append(self.row(f"{base}+{part}", at, state=state, step=False, nodes=nodes, tres=tres))
                self.lines.append(self.row(f"{base}+{part}.batch", at, state=state, step=True))
            return
        job_id = f"{base}_{rng.randrange(0, 20)}" if shape < 0.4 else base  # an array task
        self.lines.append(self.row(job_id, at, state=state, step=False, nodes=nodes, tres=tres))
        for step in rng.sample(["batch", "extern", "0", "1", "interactive"], rng.randrange(0, 4)):
            self.lines.append(
                self.row(
                    f"{job_id}.{step}",
                    at,
                    state=rng.choice([state, "COMPLETED", "CANCELLED", "FAILED", "OUT_OF_MEMORY"]),
                    step=True,
                )
            )
        if rng.random() < 0.03:  # the same step twice: a duplicate the exact way rejects
            self.lines.append(self.lines[-1])

    def write(self, path: Path, jobs: int, *, trailing: bool = False, line_end: str = "\n") -> Path:
        for k in range(jobs):
            self.job(self.start + timedelta(minutes=self.step * k))
            if k == jobs // 3:
                self.lines.append("sacct: error: slurmdbd: Getting response to message type: DBD_GET_JOBS_COND")
                self.lines.append("")
            if k == jobs // 2:
                self.lines.append(self.lines[0])  # dumps concatenated: the header again
        lines = [line + "|" for line in self.lines] if trailing else self.lines
        path.write_bytes((line_end.join(lines) + line_end).encode("utf-8"))
        return path


@pytest.mark.parametrize(
    ("zone", "start", "step_minutes", "trailing", "line_end"),
    keep_by_default(
        [
            ("UTC", datetime(2024, 5, 1, 8), 7, False, "\n"),
            # across both changes of clocks in New York (2024-03-10 02:00 skipped, 2024-11-03 01:00 twice)
            (NEW_YORK, datetime(2024, 3, 9, 20), 1, False, "\n"),
            (NEW_YORK, datetime(2024, 11, 2, 22), 1, True, "\r\n"),  # sacct -p, with Windows line ends
        ],
        {(NEW_YORK, datetime(2024, 11, 2, 22), 1, True, "\r\n")},
    ),
)
def test_hostile_dumps_the_same_both_ways(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    zone: str,
    start: datetime,
    step_minutes: int,
    trailing: bool,
    line_end: str,
) -> None:
    path = _Dump(seed=start.month + step_minutes, start=start, odd=0.03, step_minutes=step_minutes).write(
        tmp_path / "sacct.txt", 500, trailing=trailing, line_end=line_end
    )
    if trailing:  # TRES with their GPU and node items cut out first, as where most values are distinct
        monkeypatch.setattr(sacct_fast, "_DISTINCT_SHARE", 0)
        monkeypatch.setattr(sacct_fast, "_DISTINCT_MIN", 0)
    exact, fast, fast_rows, sent_back = _both_ways(tmp_path, monkeypatch, [path], zone=zone)
    _assert_same(exact, fast, path.name)
    # both ways were taken, and the exact way rejected rows for many reasons
    assert fast_rows > 800 and sent_back > 100, (fast_rows, sent_back)
    rejects = exact[0]["rejects"]
    reasons = {reason.split(" ")[0] for _, _, reason, _ in rejects}
    assert len(rejects) > 100 and len(reasons) >= 8, reasons


@pytest.mark.slow  # both ways compared; the bounds themselves are tested by default (test_ingest_slurm.py)
def test_absurd_counts_rejected_the_same_both_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #26: rows over the bound of GPUs per node or of nodes per job, and the rest of
    their jobs' records, are rejected alike whichever way typed them (the bounds are checked in
    SQL, on what either way staged), with the default bound and another."""
    dump = _Dump(seed=26, start=datetime(2024, 5, 1, 8), odd=0.0, step_minutes=7)
    dump.write(tmp_path / "plain.txt", 150)
    absurd = {"gres/gpu=2,": "gres/gpu=1000000000,", "gres/gpu=4,": "gres/gpu=3000,"}
    nnodes = COLUMNS.index("NNodes")
    lines = dump.lines[:1]
    for n, line in enumerate(dump.lines[1:]):
        for good, bad in absurd.items():
            if n % 9 == 0 and good in line:
                line = line.replace(good, bad, 1)
        fields = line.split("|")
        if n % 11 == 0 and len(fields) == len(COLUMNS) and fields[nnodes] == "1":
            line = "|".join([*fields[:nnodes], "200000", *fields[nnodes + 1 :]])
        lines.append(line)
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join(lines) + "\n")
    for options in ({}, {"max_gpus_per_node": 2}):
        exact, fast, fast_rows, _ = _both_ways(tmp_path / str(len(options)), monkeypatch, [path], zone="UTC", **options)
        _assert_same(exact, fast, f"{path.name} {options}")
        reasons = [reason for _, _, reason, _ in exact[0]["rejects"]]
        assert fast_rows > 100
        assert sum("over the bound of" in r for r in reasons) > 5, reasons
        assert any("nodes per job" in r for r in reasons) and any("is rejected whole" in r for r in reasons), reasons


def test_a_layout_whose_head_is_the_whole_row_the_same_both_ways(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """State and ExitCode last: the head every row is split for (job id, State, ExitCode)
    reaches the row's end, so split_clean splits each row whole, once (its other path)."""
    columns = [c for c in COLUMNS if c not in ("State", "ExitCode")] + ["State", "ExitCode"]
    path = _Dump(seed=5, start=datetime(2024, 5, 1, 8), odd=0.03, step_minutes=7, columns=columns).write(
        tmp_path / "sacct.txt", 500
    )
    exact, fast, fast_rows, sent_back = _both_ways(tmp_path, monkeypatch, [path], zone="UTC")
    _assert_same(exact, fast, path.name)
    assert fast_rows > 800 and sent_back > 100, (fast_rows, sent_back)


@pytest.mark.slow  # four stores; the hostile dump above takes both ways in the default run
def test_overlapping_nightly_dumps_the_same_both_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two dumps that share jobs (some identical, some finished only in the later one), in
    both orders: the superseded and unchanged records come out the same."""
    early = _Dump(seed=5, start=datetime(2024, 11, 2, 23), odd=0.01, step_minutes=2)
    early.write(tmp_path / "a.txt", 300)
    shared = early.lines[: len(early.lines) * 2 // 3]
    running = [
        line.replace("|RUNNING|", "|COMPLETED|").replace("|Unknown|", "|2024-11-04T09:00:00|") for line in shared
    ]
    late = _Dump(seed=6, start=datetime(2024, 11, 3, 12), odd=0.01, step_minutes=2)
    late.lines = running + late.lines[1:]
    late.write(tmp_path / "b.txt", 200)
    for order in ([tmp_path / "a.txt", tmp_path / "b.txt"], [tmp_path / "b.txt", tmp_path / "a.txt"]):
        exact, fast, fast_rows, _ = _both_ways(tmp_path / order[0].stem, monkeypatch, order, zone=NEW_YORK)
        _assert_same(exact, fast, " then ".join(p.name for p in order))
        assert fast_rows > 500
        second = exact[1][1]  # the later file meets jobs the first stored: some replaced, some repeated
        assert second[3] > 20 and second[4] > 20, exact[1]


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small generated trace whose sacct.txt benchmarks/slurm_year.py repeats (tests only read it)."""
    trace = tmp_path_factory.mktemp("slurm_fast") / "trace"
    generate_slurm_trace(trace, jobs=60, machines=3, days=0.5, seed=3, interval_s=3600, dcgm_interval_s=3600)
    return trace


def _benchmark_module():
    spec = importlib.util.spec_from_file_location("slurm_year", ROOT / "benchmarks" / "slurm_year.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # the benchmark's dump of a generated trace, twice
def test_benchmark_dump_the_same_both_ways(tmp_path: Path, trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """benchmarks/slurm_year.py's dump (a synthetic trace repeated), small."""
    dump = tmp_path / "sacct_year.txt"
    _benchmark_module().write_dump(trace / "sacct.txt", dump, 240)
    exact, fast, fast_rows, sent_back = _both_ways(tmp_path, monkeypatch, [dump], zone="America/Los_Angeles")
    _assert_same(exact, fast, dump.name)
    lines = len(dump.read_text().splitlines()) - 1
    assert fast_rows == lines and sent_back == 0  # every row of the benchmark's dump is plain


# ------------------------------------------------------------- reading lines


@pytest.mark.parametrize(
    "content",
    [
        b"JobID|State\r\n1|COMPLETED\r\r\n2|FAILED",  # CR LF, a doubled CR, no last line end
        b"\xef\xbb\xbfJobID|State\n1|COMPLETED\n",  # a byte-order mark
        b"JobID|JobName|State\n1|caf\xe9|COMPLETED\n2|x|FAILED\n",  # a Latin-1 line
        b"JobID|State\n1|COMP\rLETED\n2|FAILED\n",  # a CR inside a line: binary
        b"JobID|State\n\n  \n1|COMPLETED\n\x01\n",  # blank lines, then a control character
        b"",
    ],
)
def test_chunks_read_the_lines_line_by_line_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    path = tmp_path / "sacct.txt"
    path.write_bytes(content * 50)

    def read(reader):
        latin1: set[int] = set()
        try:
            return list(reader(path, latin1)), latin1, None
        except ParseError as e:
            return None, latin1, str(e)

    def chunked(p: Path, latin1: set[int]) -> list[tuple[int, str]]:
        out = []
        for first, lines in slurm_text.text_chunks(p, latin1):
            texts = lines if isinstance(lines, list) else lines.to_pylist()
            out.extend((first + k, text) for k, text in enumerate(texts))
        return out

    expected = read(lambda p, latin1: list(slurm_text.text_lines(p, latin1)))
    for size in (7, 64, 1 << 20):  # chunks that end mid-line, and one chunk
        monkeypatch.setattr(slurm_text, "_CHUNK_BYTES", size)
        lines, latin1, error = read(chunked)
        if expected[2] is None:
            assert (lines, latin1) == expected[:2]
        else:  # the same error; the lines before it were read (and are never stored)
            assert error == expected[2]


def test_line_digests_are_md5_of_the_first_500_characters() -> None:
    """The stager's md5 of a line is DuckDB's md5(left(text, 500)) whatever the line: ASCII or
    not, shorter or longer than the cut in bytes or in characters (it skips left() where the
    bytes fit)."""
    import duckdb

    limit = values.TEXT_LIMIT
    texts = [
        "",
        "1|COMPLETED",
        "a" * limit,
        "a" * (limit + 1),
        "a" * (limit - 1) + "é",
        "a" * limit + "é",
        "é" * (limit // 2 + 1),
        "é" * (limit + 3),
        "e\u0301" * (limit // 2 + 5),
        "日本" * limit,
    ]
    con = duckdb.connect()
    expected = [con.execute("SELECT md5(left(?, ?))", [t, limit]).fetchone()[0] for t in texts]
    keys = pa.table({"line": pa.array(range(len(texts)), pa.int64())})
    _, _, kept = staging._kept(
        con.cursor(),
        staging.STAGE_SCHEMA.empty_table(),
        staging.STEP_SCHEMA.empty_table(),
        keys,
        pa.array(texts, pa.string()),
    )
    assert kept.column("digest").to_pylist() == expected


def test_plain_rows_count_pipes_as_arrow_does() -> None:
    """plain_rows' `|` count and first digit (numpy on the string buffer) against Arrow's
    kernels, on slices of random lines."""
    rng = random.Random(7)
    for _ in range(200):
        values = ["".join(rng.choice("|0a9 |x1") for _ in range(rng.randint(0, 8))) for _ in range(rng.randint(1, 30))]
        whole = pa.array(values, pa.string())
        a, b = sorted((rng.randint(0, len(values)), rng.randint(0, len(values))))
        for texts in (whole, whole.slice(a, b - a)):
            pipes, digit = sacct_fast._pipes_and_digit(texts)
            assert pipes.to_pylist() == pc.count_substring(texts, "|").to_pylist(), values
            assert digit.to_pylist() == pc.match_substring_regex(texts, "^[0-9]").to_pylist(), values


# ------------------------------------------------------------- a job's only allocation row


def _general_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, paths: list[Path], **options: object):
    """(store and outcomes as ingested, the same with every row through slurm_sacct.sql's general
    way: no row taken for its job's only allocation row, so every window and group runs)."""
    link = slurm_link.link

    def nothing_alone(keys):
        links = link(keys)
        return dataclasses.replace(links, alone=pa.array([False] * len(links.alone)))

    tmp_path.mkdir(parents=True, exist_ok=True)
    outcomes = _ingest_each(tmp_path / "shortcut.duckdb", paths, **options)
    with monkeypatch.context() as m:
        m.setattr(slurm_link, "link", nothing_alone)
        general = _ingest_each(tmp_path / "general.duckdb", paths, **options)
    return (_store(tmp_path / "general.duckdb"), general), (_store(tmp_path / "shortcut.duckdb"), outcomes)


@pytest.mark.slow  # every row through both ways of the SQL (6 s); the shortcut's own tests run by default
def test_alone_rows_stored_as_the_general_way_stores_them(
    tmp_path: Path, trace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SQL's shortcuts for a job's only allocation row (no window, group or join over it)
    store what the general way does: on hostile dumps (one a file of its own, then overlapping
    nightly dumps met again) and on the benchmark's dump."""
    hostile = _Dump(seed=21, start=datetime(2024, 11, 2, 22), odd=0.03, step_minutes=1).write(tmp_path / "h.txt", 400)
    early = _Dump(seed=5, start=datetime(2024, 11, 2, 23), odd=0.01, step_minutes=2)
    early.write(tmp_path / "a.txt", 200)
    late = _Dump(seed=6, start=datetime(2024, 11, 3, 12), odd=0.01, step_minutes=2)
    late.lines = [
        line.replace("|RUNNING|", "|COMPLETED|") for line in early.lines[: len(early.lines) // 2]
    ] + late.lines[1:]
    late.write(tmp_path / "b.txt", 100)
    year = tmp_path / "year.txt"
    _benchmark_module().write_dump(trace / "sacct.txt", year, 120)
    for name, paths in (("hostile", [hostile, tmp_path / "a.txt", tmp_path / "b.txt"]), ("year", [year])):
        general, shortcut = _general_way(tmp_path / name, monkeypatch, paths, zone=NEW_YORK)
        _assert_same(general, shortcut, name)
        assert general[0]["jobs"], name
    # the shortcuts were taken, and the general way had requeues, het jobs and repeats to do
    with open_store(tmp_path / "hostile" / "shortcut.duckdb", read_only=True) as con:
        several = con.execute(
            "SELECT count(*) FILTER (WHERE n > 1), count(*) FROM (SELECT count(*) AS n FROM attempts GROUP BY job_id)"
        ).fetchall()[0]
    assert 20 < several[0] < several[1] / 2, several


def test_no_control_bytes_answers_as_the_byte_by_byte_test() -> None:
    """_text_chunks' test for control bytes (bytes below 32 counted at once) against deleting
    CONTROL_BYTES one by one, on random chunks: with tabs, CRs, DEL, other control bytes or none."""
    from gpucluster_analysis.ingest.files import CONTROL_BYTES

    rng = random.Random(11)
    alphabet = [b"a", b"|", b"1", b"\n", b"\n", b"\t", b"\r", b"\x7f", b"\x00", b"\x1b", b"\x0b", b"\xc3\xa9"]
    for _ in range(500):
        raw = b"".join(rng.choice(alphabet[: rng.randint(4, len(alphabet))]) for _ in range(rng.randint(0, 40)))
        expected = len(raw.translate(None, CONTROL_BYTES)) == len(raw)
        assert slurm_text._no_control_bytes(raw, raw.count(b"\n")) == expected, raw
