"""Philly-scale benchmark: generate a trace with `gca synth`, time `gca ingest` and `gca report`.

Each step runs as its own process so that wall time and peak memory (max RSS of
the child, from getrusage) are the step's alone. Results are printed as a
Markdown table to paste into RESULTS.md.

    python benchmarks/run.py                       # full scale: 117k jobs, 550 machines, 73 days
    python benchmarks/run.py --jobs 20000 --machines 100 --days 14   # a quicker look
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


# Runs one step as a grandchild so that RUSAGE_CHILDREN (a max over all children
# ever waited for) covers that step alone.
# The step's own output (gca's per-file summary) goes to stderr, to be read alongside.
_MEASURE = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "subprocess.run(sys.argv[1:], check=True, stdout=sys.stderr); "
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def machine_line() -> str:
    """What the numbers were measured on: architecture, cores, memory, Python, OS."""
    return (
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / (1 << 30):.0f} GiB, "
        f"Python {platform.python_version()}, {platform.platform()}"
    )


# A fixed single-core workload (pure Python): its time says how fast this machine runs right
# now. A shared VM's speed drifts (by a quarter within minutes here), so a step's time is read
# beside the probe taken just before it.
_PROBE = "import time; t = time.perf_counter(); sum(i * i for i in range(3_000_000)); print(time.perf_counter() - t)"


def speed_probe() -> float:
    """Seconds of the probe workload, in a fresh process (best of three)."""
    return min(
        float(subprocess.run([sys.executable, "-c", _PROBE], check=True, stdout=subprocess.PIPE, text=True).stdout)
        for _ in range(3)
    )


def run_step(name: str, args: list[str]) -> tuple[str, float, float]:
    out = subprocess.run([sys.executable, "-c", _MEASURE, *args], check=True, stdout=subprocess.PIPE, text=True)
    seconds_text, peak_kib = out.stdout.split()[-2:]
    seconds, peak_gib = float(seconds_text), int(peak_kib) / (1 << 20)
    # The machine is shared: the 1-minute load average at the end says how much.
    print(
        f"{name}: {seconds:.1f} s, peak RSS {peak_gib:.2f} GiB, load average {os.getloadavg()[0]:.1f}", file=sys.stderr
    )
    return name, seconds, peak_gib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=117_325)
    parser.add_argument("--machines", type=int, default=550)
    parser.add_argument("--days", type=float, default=73)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=HERE / "data", help="scratch directory (git-ignored)")
    parser.add_argument("--keep", action="store_true", help="keep the generated trace and store")
    args = parser.parse_args()

    gca = [sys.executable, "-m", "gpucluster_analysis"]
    trace, db, out = args.work / "trace", args.work / "bench.duckdb", args.work / "report"
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    results = [
        run_step(
            "synth",
            [
                *gca,
                "synth",
                "--out",
                str(trace),
                "--jobs",
                str(args.jobs),
                "--machines",
                str(args.machines),
                "--days",
                str(args.days),
                "--seed",
                str(args.seed),
            ],
        ),
    ]
    sizes = {p.name: p.stat().st_size for p in trace.iterdir() if p.is_file()}
    results.append(run_step("ingest", [*gca, "ingest", str(trace), "--db", str(db)]))
    results.append(run_step("report", [*gca, "report", "--db", str(db), "--out", str(out)]))

    print(f"\n{machine_line()}")
    print(f"Trace: --jobs {args.jobs} --machines {args.machines} --days {args.days} --seed {args.seed}")
    for name, size in sorted(sizes.items()):
        print(f"  {name}: {size / (1 << 20):,.0f} MiB")
    print(f"  store: {db.stat().st_size / (1 << 20):,.0f} MiB")
    print("\n| step | wall time (s) | peak RSS (GiB) |\n|---|---:|---:|")
    for name, seconds, peak in results:
        print(f"| {name} | {seconds:.1f} | {peak:.2f} |")
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
