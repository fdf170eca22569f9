"""One day of a 1,000-GPU cluster's nvidia-smi telemetry: generate it, time `gca ingest` of it.

125 nodes of 8 GPUs, one `nvidia-smi --query-gpu=... --format=csv -l 10` log per node
(8,640 samples of 8 GPUs: 69,120 data lines per file, 8,640,000 in all), as such a log is
written: one header line, then one line per GPU per sample, with units (`26 %`, `81559 MiB`).
The ingest runs as its own process (like benchmarks/run.py): wall time and peak RSS are
its alone. Issue #9's target: at most 30 s on the 2-core benchmark machine.

    python benchmarks/telemetry_day.py                    # generate, ingest, report, clean up
    python benchmarks/telemetry_day.py --nodes 10 --keep  # a smaller day; keep files and store
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import machine_line, run_step  # noqa: E402  -- run.py is found through the sys.path line above

# what the logs were queried with; nvidia-smi prints clocks.sm as clocks.current.sm in the header
FIELDS = (
    "timestamp,index,uuid,pci.bus_id,utilization.gpu,utilization.memory,memory.used,memory.total,"
    "power.draw,temperature.gpu,clocks.sm"
)
HEADER = (
    "timestamp, index, uuid, pci.bus_id, utilization.gpu [%], utilization.memory [%], memory.used [MiB], "
    "memory.total [MiB], power.draw [W], temperature.gpu, clocks.current.sm [MHz]\n"
)


def write_node(path: Path, node: int, samples: int, interval_s: int, gpus: int, start: datetime) -> None:
    """One node's log: GPUs busy or idle in stretches, as jobs come and go."""
    rng = random.Random(node)
    uuids = [f"GPU-{node:08x}-{g:04x}-4000-8000-{rng.getrandbits(48):012x}" for g in range(gpus)]
    buses = [f"00000000:{0x18 + 0x20 * g:02X}:00.0" for g in range(gpus)]
    busy = [rng.random() < 0.7 for _ in range(gpus)]
    lines = [HEADER]
    for s in range(samples):
        at = start + timedelta(seconds=s * interval_s)
        for g in range(gpus):
            if rng.random() < 0.002:  # a job ends or starts
                busy[g] = not busy[g]
            # nvidia-smi reads the GPUs one after another: a few ms apart
            stamp = (at + timedelta(milliseconds=3 * g)).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
            if busy[g]:
                util, mem_util, used = rng.randint(60, 100), rng.randint(20, 70), rng.randint(30000, 80000)
                power, temp, clock = rng.uniform(350, 690), rng.randint(55, 80), rng.choice((1755, 1830, 1980))
            else:
                util, mem_util, used = 0, 0, 4
                power, temp, clock = rng.uniform(65, 75), rng.randint(30, 40), 345
            lines.append(
                f"{stamp}, {g}, {uuids[g]}, {buses[g]}, {util} %, {mem_util} %, {used} MiB, 81559 MiB, "
                f"{power:.2f} W, {temp}, {clock} MHz\n"
            )
    path.write_text("".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=125)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--interval", type=int, default=10, help="seconds between samples (nvidia-smi -l)")
    parser.add_argument("--hours", type=float, default=24)
    parser.add_argument(
        "--work", type=Path, default=HERE / "data" / "telemetry", help="scratch directory (git-ignored)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the generated logs and the store")
    parser.add_argument("--reuse", action="store_true", help="ingest logs already in --work/logs (no generation)")
    args = parser.parse_args()

    logs, db = args.work / "logs", args.work / "telemetry.duckdb"
    samples = int(args.hours * 3600 / args.interval)
    if not args.reuse:
        shutil.rmtree(args.work, ignore_errors=True)
        logs.mkdir(parents=True)
        t = time.perf_counter()
        for node in range(args.nodes):
            write_node(logs / f"gpu-node{node:03d}.csv", node, samples, args.interval, args.gpus, datetime(2026, 7, 14))
        print(f"generated {args.nodes} files in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    for stale in (db, db.with_name(db.name + ".wal")):
        stale.unlink(missing_ok=True)
    size = sum(p.stat().st_size for p in logs.iterdir())
    gca = [sys.executable, "-m", "gpucluster_analysis"]
    # --tz: the logs' local times; the machine's own zone would do as well, but UTC keeps runs comparable
    _, seconds, peak = run_step("ingest", [*gca, "ingest", str(logs), "--db", str(db), "--tz", "UTC"])

    lines = args.nodes * samples * args.gpus
    print(f"\n{machine_line()}; load average {os.getloadavg()[0]:.1f}")
    print(
        f"Logs: {args.nodes} files, {lines:,} data lines, {size / (1 << 20):,.0f} MiB; "
        f"store {db.stat().st_size / (1 << 20):,.0f} MiB"
    )
    print(
        f"\n| step | wall time (s) | peak RSS (GiB) | data lines/s |\n|---|---:|---:|---:|\n"
        f"| ingest | {seconds:.1f} | {peak:.2f} | {lines / seconds:,.0f} |"
    )
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
