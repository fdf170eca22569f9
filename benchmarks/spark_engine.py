"""Both report engines on one Parquet dataset (issue #11, part 3): `gca report --from DIR`
with `--engine duckdb` and with `--engine spark`, each as its own process, timed, with the
peak memory of its whole process tree (Spark's JVM is a child of gca's Python), and their
CSVs compared byte for byte.

The dataset is a `gca synth` trace (Philly format: per-minute GPU, CPU and memory
utilization of every machine) written by `gca ingest --to`; it is made once in --work and
reused while it is there.

    python benchmarks/spark_engine.py                                # 25k jobs, 250 machines, 30 days
    python benchmarks/spark_engine.py --machines 50 --days 5 --master 'local[2]'
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import machine_line, run_step  # noqa: E402  -- run.py is found through the sys.path line above

GCA = [sys.executable, "-m", "gpucluster_analysis"]


def tree_rss_kib(root: int) -> tuple[int, int]:
    """RSS of `root` and all its descendants (KiB): their sum and the largest one."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text()
        except OSError:
            continue  # gone meanwhile
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        pid = int(entry.name)
        children.setdefault(int(fields["PPid"]), []).append(pid)
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0])
    total, largest, todo = 0, 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        largest = max(largest, rss.get(pid, 0))
        todo += children.get(pid, [])
    return total, largest


def measured(name: str, args: list[str], log: Path) -> tuple[str, float, float, float]:
    """Run `args` (its stderr, gca's progress, to `log`); wall time (s), peak RSS of its process
    tree and of its largest process (GiB), sampled every 0.2 s (getrusage cannot sum a tree,
    and the JVM is not waited for)."""
    started = time.perf_counter()
    with log.open("w") as err:
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
        peak_total = peak_largest = 0
        while process.poll() is None:
            total, largest = tree_rss_kib(process.pid)
            peak_total, peak_largest = max(peak_total, total), max(peak_largest, largest)
            time.sleep(0.2)
    seconds = time.perf_counter() - started
    if process.returncode:
        raise SystemExit(f"{name}: exit code {process.returncode} (see {log})")
    total_gib, largest_gib = peak_total / (1 << 20), peak_largest / (1 << 20)
    print(
        f"{name}: {seconds:.1f} s, peak RSS {total_gib:.2f} GiB (largest process {largest_gib:.2f} GiB), "
        f"load average {os.getloadavg()[0]:.1f}",
        file=sys.stderr,
    )
    return name, seconds, total_gib, largest_gib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=25_000)
    parser.add_argument("--machines", type=int, default=250)
    parser.add_argument("--days", type=float, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--master", default="local[2]", help="the Spark master (default local[2])")
    parser.add_argument(
        "--work", type=Path, default=HERE / "data" / "spark_engine", help="scratch directory (git-ignored)"
    )
    args = parser.parse_args()

    name = f"j{args.jobs}-m{args.machines}-d{args.days:g}-s{args.seed}"
    trace, dataset = args.work / f"trace-{name}", args.work / f"dataset-{name}"
    args.work.mkdir(parents=True, exist_ok=True)
    if not (dataset / "gca-dataset.json").exists():
        if not (trace / "truth.json").exists():
            run_step(
                "synth",
                [
                    *GCA,
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
            )
        run_step("ingest --to", [*GCA, "ingest", str(trace), "--to", str(dataset), "--shard", "bench"])
    samples = duckdb.sql(f"SELECT count(*) FROM read_parquet('{dataset}/gpu_samples/**/*.parquet')").fetchall()[0][0]
    size = sum(p.stat().st_size for p in dataset.rglob("*.parquet"))
    print(f"dataset {dataset.name}: {samples:,} GPU samples, {size / 2**30:.2f} GiB of Parquet", file=sys.stderr)

    results, outs = [], {}
    for engine in ("duckdb", "spark"):
        outs[engine] = args.work / f"report-{engine}"
        extra = ["--master", args.master] if engine == "spark" else []
        results.append(
            measured(
                f"report --engine {engine}",
                [*GCA, "report", "--from", str(dataset), "--engine", engine, "--out", str(outs[engine]), *extra],
                args.work / f"report-{engine}.log",
            )
        )
    csvs = sorted(p.name for p in outs["duckdb"].glob("*.csv"))
    differ = [c for c in csvs if (outs["duckdb"] / c).read_bytes() != (outs["spark"] / c).read_bytes()]
    print(f"\n{machine_line()}")
    print(
        f"Dataset: gca synth --jobs {args.jobs} --machines {args.machines} --days {args.days:g} --seed {args.seed};"
        f" {samples:,} GPU samples, {size / 2**30:.2f} GiB of Parquet"
    )
    print("\n| engine | wall time (s) | peak RSS, all processes (GiB) | largest process (GiB) |\n|---|---:|---:|---:|")
    for step, seconds, total, largest in results:
        print(f"| {step} | {seconds:.1f} | {total:.2f} | {largest:.2f} |")
    print(
        f"\nCSVs: {len(csvs)}, identical: {len(csvs) - len(differ)}"
        + (f"; differ: {', '.join(differ)}" if differ else "")
    )


if __name__ == "__main__":
    main()
