"""One day of a 1,000-GPU cluster's dcgm-exporter scrapes: generate them, time `gca ingest` of them.

125 nodes of 8 GPUs, one file per node: the `/metrics` text of dcgm-exporter scraped every
10 s (8,640 scrapes), each preceded by a `# time: <epoch seconds>` line (as a
`while sleep 10; do echo "# time: $(date +%s)"; curl -s node:9400/metrics; done` loop
writes it), with the exporter's `# HELP`/`# TYPE` lines and its usual labels. Fields: the
device fields of telemetry_day.py's nvidia-smi query (GPU_UTIL, MEM_COPY_UTIL, FB_USED,
FB_FREE, POWER_USAGE, GPU_TEMP, SM_CLOCK) and three profiling fields (SM_ACTIVE,
PIPE_TENSOR_ACTIVE, DRAM_ACTIVE): 80 samples per scrape, 691,200 per node, 86.4M in all.
With --json, each node's day is instead the `/api/v1/query_range` answer a Prometheus
pull of the same series gives (`dcgm_query_range`, what `gca ingest prometheus+http://...`
stores chunk by chunk). The ingest runs as its own process. Issue #9's target: at most 60 s
on the 2-core machine.

    python benchmarks/dcgm_day.py                     # generate, ingest, report, clean up
    python benchmarks/dcgm_day.py --nodes 4 --keep    # a smaller day; keep files and store
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run import machine_line, run_step  # noqa: E402  -- run.py is found through the sys.path line above

FIELDS = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    (
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
    ),
)


def write_node(path: Path, node: int, scrapes: int, interval_s: int, gpus: int, start_epoch: int) -> None:
    """One node's scrapes: GPUs busy or idle in stretches, as jobs come and go."""
    rng = random.Random(node)
    host = f"gpu-node{node:03d}"
    labels = [
        f'{{gpu="{g}",UUID="GPU-{node:08x}-{g:04x}-4000-8000-{rng.getrandbits(48):012x}",'
        f'pci_bus_id="00000000:{0x18 + 0x20 * g:02X}:00.0",device="nvidia{g}",modelName="NVIDIA H100 80GB HBM3",'
        f'Hostname="{host}",DCGM_FI_DRIVER_VERSION="550.54.15"}}'
        for g in range(gpus)
    ]
    busy = [rng.random() < 0.7 for _ in range(gpus)]
    with path.open("w") as f:
        for s in range(scrapes):
            out = [f"# time: {start_epoch + s * interval_s}\n"]
            values = []
            for g in range(gpus):
                if rng.random() < 0.002:  # a job ends or starts
                    busy[g] = not busy[g]
                if busy[g]:
                    util, used = rng.randint(60, 100), rng.randint(30000, 80000)
                    sm = round(util / 100 * rng.uniform(0.3, 0.95), 6)
                    values.append(
                        (
                            rng.choice((1755, 1830, 1980)),
                            rng.randint(55, 80),
                            f"{rng.uniform(350, 690):.3f}",
                            util,
                            rng.randint(20, 70),
                            81559 - used,
                            used,
                            f"{sm:.6f}",
                            f"{sm * rng.uniform(0, 0.8):.6f}",
                            f"{rng.uniform(0.1, 0.6):.6f}",
                        )
                    )
                else:
                    values.append(
                        (
                            345,
                            rng.randint(30, 40),
                            f"{rng.uniform(65, 75):.3f}",
                            0,
                            0,
                            81555,
                            4,
                            "0.000000",
                            "0.000000",
                            "0.000000",
                        )
                    )
            for k, (name, kind, text) in enumerate(FIELDS):
                out.append(f"# HELP {name} {text}\n# TYPE {name} {kind}\n")
                out.extend(f"{name}{labels[g]} {values[g][k]}\n" for g in range(gpus))
            f.write("".join(out))


def write_node_json(path: Path, node: int, scrapes: int, interval_s: int, gpus: int, start_epoch: int) -> None:
    """The same day as one query_range matrix: a series per field and GPU, a point per scrape."""
    import json

    text = path.with_suffix(".prom")
    write_node(text, node, scrapes, interval_s, gpus, start_epoch)
    series: dict[str, dict] = {}
    when = 0
    with text.open() as f:
        for line in f:
            if line.startswith("# time: "):
                when = int(line[8:])
            elif not line.startswith("#"):
                key, value = line.rsplit(" ", 1)
                if key not in series:
                    name, labels = key[:-1].split("{", 1)
                    metric = {"__name__": name, **dict(part.split("=", 1) for part in labels.split('",'))}
                    metric = {k: v.strip('"') for k, v in metric.items()}
                    series[key] = {"metric": metric, "values": []}
                series[key]["values"].append([when, value.strip()])
    text.unlink()
    path.write_text(
        json.dumps({"status": "success", "data": {"resultType": "matrix", "result": list(series.values())}})
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=125)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--interval", type=int, default=10, help="seconds between scrapes")
    parser.add_argument("--hours", type=float, default=24)
    parser.add_argument("--work", type=Path, default=HERE / "data" / "dcgm", help="scratch directory (git-ignored)")
    parser.add_argument("--keep", action="store_true", help="keep the generated scrapes and the store")
    parser.add_argument("--json", action="store_true", help="Prometheus query_range answers instead of scrapes")
    parser.add_argument("--reuse", action="store_true", help="ingest scrapes already in --work/scrapes (no generation)")
    args = parser.parse_args()

    scrapes_dir, db = args.work / "scrapes", args.work / "dcgm.duckdb"
    scrapes = int(args.hours * 3600 / args.interval)
    if not args.reuse:
        shutil.rmtree(args.work, ignore_errors=True)
        scrapes_dir.mkdir(parents=True)
        t = time.perf_counter()
        for node in range(args.nodes):
            if args.json:
                write_node_json(
                    scrapes_dir / f"gpu-node{node:03d}.json", node, scrapes, args.interval, args.gpus, 1784016000
                )
            else:
                write_node(
                    scrapes_dir / f"gpu-node{node:03d}.prom", node, scrapes, args.interval, args.gpus, 1784016000
                )
        print(f"generated {args.nodes} files in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    for stale in (db, db.with_name(db.name + ".wal")):
        stale.unlink(missing_ok=True)
    size = sum(p.stat().st_size for p in scrapes_dir.iterdir())
    gca = [sys.executable, "-m", "gpucluster_analysis"]
    _, seconds, peak = run_step("ingest", [*gca, "ingest", str(scrapes_dir), "--db", str(db)])

    samples = args.nodes * scrapes * args.gpus * len(FIELDS)
    print(f"\n{machine_line()}; load average {os.getloadavg()[0]:.1f}")
    print(
        f"Scrapes: {args.nodes} files, {samples:,} sample lines, {size / (1 << 20):,.0f} MiB; "
        f"store {db.stat().st_size / (1 << 20):,.0f} MiB"
    )
    print(
        f"\n| step | wall time (s) | peak RSS (GiB) | sample lines/s |\n|---|---:|---:|---:|\n"
        f"| ingest | {seconds:.1f} | {peak:.2f} | {samples / seconds:,.0f} |"
    )
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
