"""A busy Slurm site's year: many short jobs on few nodes. Make `sacct -P` dumps of 100k, 300k
and 1M jobs, time `gca ingest` and `gca report` on each (issue #15, part 5: the million-job
dump within 10 s of ingest and 20 s of report, under 4 GB, growth near linear).

The dumps repeat one synthetic Slurm trace (`gca synth --format slurm`: 2,000 jobs on 5
nodes of 8 GPUs over 3 days, with job steps, requeues, arrays, cancelled-while-pending jobs)
back to back: copy k has its job ids offset by k x 10^7 and its times moved on by k x 3 days,
so jobs never collide and the nodes stay as busy as in the base trace. Only the sacct dump
and the node list are ingested (no logs, no telemetry): the cost under test is per job.

    python benchmarks/slurm_year.py                       # 100k, 300k, 1M
    python benchmarks/slurm_year.py --jobs 100000 --keep  # one size; keep dump and store
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import machine_line, run_step

BASE_JOBS, BASE_DAYS, NODES = 2000, 3.0, 5
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
_ID = re.compile(r"^(\d+)")


def base_trace(work: Path) -> Path:
    trace = work / "base"
    if not (trace / "sacct.txt").exists():
        subprocess.run([sys.executable, "-m", "gpucluster_analysis", "synth", "--format", "slurm", "--out", str(trace),
                        "--jobs", str(BASE_JOBS), "--machines", str(NODES), "--days", str(BASE_DAYS), "--seed", "3",
                        "--interval", "3600", "--dcgm-interval", "3600"], check=True, stdout=subprocess.DEVNULL)
    return trace


def write_dump(base: Path, out: Path, jobs: int) -> int:
    """The base dump repeated until it holds `jobs` jobs (whole copies); returns the jobs written."""
    header, *rows = base.read_text().splitlines()
    job_rows = [r for r in rows if "." not in r.split("|", 1)[0]]
    copies = max(1, round(jobs / len(job_rows)))
    shift = timedelta(days=BASE_DAYS)

    def moved(row: str, k: int) -> str:
        row = _ID.sub(lambda m: str(int(m.group(1)) + k * 10**7), row, count=1)
        return _TIME.sub(lambda m: (datetime.fromisoformat(m.group(0)) + k * shift).isoformat(), row)

    with out.open("w") as f:
        f.write(header + "\n")
        for k in range(copies):
            f.write("\n".join(moved(r, k) for r in rows) + "\n")
    return copies * len(job_rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, action="append", help="jobs in a dump (repeatable); default 100k, 300k, 1M")
    parser.add_argument("--work", type=Path, default=HERE / "data" / "slurm_year", help="scratch directory (git-ignored)")
    parser.add_argument("--keep", action="store_true", help="keep the dumps and stores")
    args = parser.parse_args()
    sizes = args.jobs or [100_000, 300_000, 1_000_000]
    args.work.mkdir(parents=True, exist_ok=True)
    base = base_trace(args.work)
    gca = [sys.executable, "-m", "gpucluster_analysis"]
    rows = []
    for size in sizes:
        dump, db, out = args.work / f"sacct_{size}.txt", args.work / f"year_{size}.duckdb", args.work / f"report_{size}"
        for stale in (db, db.with_name(db.name + ".wal")):
            stale.unlink(missing_ok=True)
        written = write_dump(base / "sacct.txt", dump, size)
        print(f"{dump.name}: {written:,} jobs, {dump.stat().st_size / 2**20:,.0f} MiB", file=sys.stderr)
        rows.append((written, dump.stat().st_size,
                     run_step(f"ingest {written:,} jobs", [*gca, "ingest", str(dump), str(base / "scontrol"),
                                                           "--db", str(db), "--tz", "UTC"]),
                     run_step(f"report {written:,} jobs", [*gca, "report", "--db", str(db), "--out", str(out), "--quiet"])))
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)
            dump.unlink()
            db.unlink(missing_ok=True)
    print(f"\nMachine: {machine_line()}\n")
    print("| jobs | dump (MiB) | ingest (s) | ingest peak RSS (GiB) | report (s) | report peak RSS (GiB) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for jobs, size, (_, ingest_s, ingest_gib), (_, report_s, report_gib) in rows:
        print(f"| {jobs:,} | {size / 2**20:,.0f} | {ingest_s:.1f} | {ingest_gib:.2f} | {report_s:.1f} | {report_gib:.2f} |")


if __name__ == "__main__":
    main()
