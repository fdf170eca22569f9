"""A busy Slurm site's year: many short jobs on few nodes. Make `sacct -P` dumps of 100k, 300k
and 1M jobs, time `gca ingest` and `gca report` on each (issue #15, part 5: the million-job
dump within 10 s of ingest and 20 s of report, under 4 GB, growth near linear).

The dumps repeat one synthetic Slurm trace (`gca synth --format slurm`: 2,000 jobs on 5
nodes of 8 GPUs over 3 days, with job steps, requeues, arrays, cancelled-while-pending jobs)
back to back: copy k has its job ids offset by k x 10^7 and its times moved on by k x 3 days,
so jobs never collide and the nodes stay as busy as in the base trace. `--spacing 1h` moves
copy k on by k hours instead (the issue's dumps repeat a run "an hour apart"): the copies
overlap in time, ~72 at once, and load the nodes far beyond their GPUs, which stresses the
per-machine sweeps (very many concurrent placements). Only the sacct dump
and the trace's scontrol snapshots are ingested (no logs, no telemetry): the cost under test
is per job. `--base live` repeats instead the real Slurm run kept under `tests/data/slurm/live/`
(Slurm 22.05, 5 nodes, the issue's own construction: "the real run above, repeated an hour
apart"), with its `scontrol show node -o` and `sacctmgr` outputs: ~2 lines and ~380 bytes
per job, where the synthetic base has ~4.8 lines and ~950 bytes (many steps). "Jobs" are jobs
as gca stores them (an array task is a job, a requeued job one job); a dump of 1M jobs has
~4.8M lines (920 MiB) from the synthetic base, ~2M lines (389 MiB) from the live one.

Each step runs as its own process: wall time, user+sys CPU time (the machine may be shared:
the load average is printed) and peak RSS. Before each size, run.speed_probe() times a fixed
single-core workload: a shared VM's speed drifts, and the probe says how fast it ran then.

    python benchmarks/slurm_year.py                       # 100k, 300k, 1M
    python benchmarks/slurm_year.py --jobs 100000 --keep  # one size; keep dump and store
    python benchmarks/slurm_year.py --spacing 1h          # copies an hour apart, overlapping
    python benchmarks/slurm_year.py --base live           # the real run, copies an hour apart
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

from gpucluster_analysis.ingest.slurm.values import parse_job_id

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import machine_line, speed_probe  # noqa: E402  -- run.py is found through the sys.path line above

BASE_JOBS, BASE_DAYS, NODES = 2000, 3.0, 5
LIVE = HERE.parent / "tests" / "data" / "slurm" / "live"
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
_ID = re.compile(r"^(\d+)")


def base_trace(work: Path) -> Path:
    trace = work / "base"
    if not (trace / "sacct.txt").exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "gpucluster_analysis",
                "synth",
                "--format",
                "slurm",
                "--out",
                str(trace),
                "--jobs",
                str(BASE_JOBS),
                "--machines",
                str(NODES),
                "--days",
                str(BASE_DAYS),
                "--seed",
                "3",
                "--interval",
                "3600",
                "--dcgm-interval",
                "3600",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return trace


def base_inputs(base: str, work: Path) -> tuple[Path, list[Path], timedelta]:
    """The base's sacct dump, the other files ingested beside it (machines, quotas), and the
    default time between copies."""
    if base == "live":
        return LIVE / "sacct.txt", [LIVE / "nodes.txt", LIVE / "assoc.txt", LIVE / "qos.txt"], timedelta(hours=1)
    trace = base_trace(work)
    # the base's scontrol snapshots too: one file each, as a site's would come
    return trace / "sacct.txt", [trace / "scontrol"], timedelta(days=BASE_DAYS)


def parse_spacing(text: str) -> timedelta:
    """'1h', '90m', '3d', '3600s' (or plain seconds) as a timedelta > 0."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd]?)", text.strip())
    if m is None or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive duration such as 1h, 90m, 3d or 3600s")
    return timedelta(seconds=float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)])


def write_dump(base: Path, out: Path, jobs: int, shift: timedelta = timedelta(days=BASE_DAYS)) -> int:
    """The base dump repeated until it holds `jobs` jobs (whole copies), copy k moved on by k x
    `shift` (default: the base's span, back to back); returns the jobs written."""
    header, *rows = base.read_text().splitlines()
    ids = {parsed[0] for r in rows if (parsed := parse_job_id(r.split("|", 1)[0])) is not None and parsed[2] is None}
    copies = max(1, round(jobs / len(ids)))

    def moved(row: str, k: int) -> str:
        row = _ID.sub(lambda m: str(int(m.group(1)) + k * 10**7), row, count=1)
        return _TIME.sub(lambda m: (datetime.fromisoformat(m.group(0)) + k * shift).isoformat(), row)

    with out.open("w") as f:
        f.write(header + "\n")
        for k in range(copies):
            f.write("\n".join(moved(r, k) for r in rows) + "\n")
        # on disk before the timing starts: the kernel writing the fresh dump back during the
        # ingest timed is not the ingest's work (a site's dump was written long before)
        f.flush()
        os.fsync(f.fileno())
    return copies * len(ids)


# As run.py's, with the child's CPU time: the grandchild's rusage covers that step alone.
_MEASURE = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "subprocess.run(sys.argv[1:], check=True, stdout=sys.stderr); "
    "r = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(time.perf_counter() - t, r.ru_utime + r.ru_stime, r.ru_maxrss)"
)


def run_step(name: str, args: list[str]) -> tuple[float, float, float, float]:
    """(wall s, CPU s, peak RSS GiB, 1-minute load average at the end) of one step."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, *args], check=True, stdout=subprocess.PIPE, text=True)
    wall, cpu, peak_kib = out.stdout.split()[-3:]
    load = os.getloadavg()[0]
    print(
        f"{name}: {float(wall):.1f} s, {float(cpu):.1f} CPU-s, peak RSS {int(peak_kib) / (1 << 20):.2f} GiB,"
        f" load average {load:.1f}",
        file=sys.stderr,
    )
    return float(wall), float(cpu), int(peak_kib) / (1 << 20), load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, action="append", help="jobs in a dump (repeatable); default 100k, 300k, 1M")
    parser.add_argument(
        "--work", type=Path, default=HERE / "data" / "slurm_year", help="scratch directory (git-ignored)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the dumps and stores")
    parser.add_argument(
        "--spacing",
        type=parse_spacing,
        help="time between copies of the base trace, e.g. 1h (default: synth's span, 3d: back to back; live: 1h)",
    )
    parser.add_argument(
        "--base",
        choices=["synth", "live"],
        default="synth",
        help="what is repeated: a synthetic Slurm trace (default) or the real run in tests/data/slurm/live",
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    sacct, extras, default_spacing = base_inputs(args.base, args.work)
    spacing = args.spacing or default_spacing
    tag = ("" if args.base == "synth" else f"_{args.base}") + (
        "" if spacing == default_spacing else f"_every{int(spacing.total_seconds())}s"
    )
    sizes = args.jobs or [100_000, 300_000, 1_000_000]
    gca = [sys.executable, "-m", "gpucluster_analysis"]
    rows = []
    for size in sizes:
        dump, db, out = (
            args.work / f"sacct_{size}{tag}.txt",
            args.work / f"year_{size}{tag}.duckdb",
            args.work / f"report_{size}{tag}",
        )
        for stale in (db, db.with_name(db.name + ".wal")):
            stale.unlink(missing_ok=True)
        written = write_dump(sacct, dump, size, spacing)
        print(f"{dump.name}: {written:,} jobs, {dump.stat().st_size / 2**20:,.0f} MiB", file=sys.stderr)
        probe = speed_probe()
        print(f"speed probe: {probe:.3f} s", file=sys.stderr)
        rows.append(
            (
                written,
                dump.stat().st_size,
                probe,
                run_step(
                    f"ingest {written:,} jobs",
                    [*gca, "ingest", str(dump), *map(str, extras), "--db", str(db), "--tz", "UTC"],
                ),
                run_step(f"report {written:,} jobs", [*gca, "report", "--db", str(db), "--out", str(out), "--quiet"]),
            )
        )
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)
            dump.unlink()
            db.unlink(missing_ok=True)
    print(f"\n{machine_line()}\n")
    print(
        "| jobs | dump (MiB) | speed probe (s) | ingest wall (s) | ingest CPU (s) | ingest peak RSS (GiB) "
        "| report wall (s) | report CPU (s) | report peak RSS (GiB) | load avg (ingest, report) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for jobs, size, probe, ingest, report in rows:
        print(
            f"| {jobs:,} | {size / 2**20:,.0f} | {probe:.3f} | {ingest[0]:.1f} | {ingest[1]:.1f} | {ingest[2]:.2f} "
            f"| {report[0]:.1f} | {report[1]:.1f} | {report[2]:.2f} | {ingest[3]:.1f}, {report[3]:.1f} |"
        )


if __name__ == "__main__":
    main()
