"""Per-node nvidia-smi logs for the Slurm view of a synthetic trace, with the truth they imply.

Contract: `write_gpu_logs` writes `gpu/<host>.csv` for every machine as
`nvidia-smi --query-gpu=timestamp,index,uuid,pci.bus_id,utilization.gpu,memory.used,
memory.total,power.draw,temperature.gpu --format=csv -l <interval>` would: comma+space
separated, units in the header and the values (`57 %`, `24510 MiB`, `231.45 W`),
`temperature.gpu` without a unit, timestamps `2017/11/03 00:05:00.412` in the trace's
zone (naive, milliseconds). The header is written again at the start of every day, as a
log that is restarted daily and concatenated. It returns, per job, the sum and count of
the utilization values **as written** that belong to the job by domain.md's rule
(the GPUs its runs were allocated, start <= t < end).

* a sample at instant t covers the GPUs of the run that holds them (start <= t < end):
  utilization = the job's level x noise, integer %, a launch that failed holds its GPUs
  idle (0 %); an unallocated GPU reports 0 %;
* `[N/A]` replaces about 0.3% of utilization values (a driver hiccup) and 0.5% of
  power values; those utilization samples count for no job;
* nothing is logged during the second occurrence of a repeated fall-back hour: a naive
  timestamp there would read back an hour early (the simulated scheduler keeps the same
  blackout, clock.py), so every written timestamp means exactly one instant.

The millisecond part of a timestamp never changes which run a sample belongs to: runs
start and end on whole seconds and samples are taken on whole seconds plus < 1 s.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from gpucluster_analysis.synth.clock import Blackout, zone
from gpucluster_analysis.synth.model import GPUS_PER_MACHINE

CHUNK_SECONDS = 86_400
UTIL_NA_RATE = 0.003
POWER_NA_RATE = 0.005
MEMORY_TOTAL_MIB = 32768
# Bus ids of the eight GPUs of a DGX-1-like server, in index order.
PCI_BUS_IDS = (
    "00000000:06:00.0",
    "00000000:07:00.0",
    "00000000:0A:00.0",
    "00000000:0B:00.0",
    "00000000:85:00.0",
    "00000000:86:00.0",
    "00000000:89:00.0",
    "00000000:8A:00.0",
)
HEADER = (
    "timestamp, index, uuid, pci.bus_id, utilization.gpu [%], memory.used [MiB], memory.total [MiB], "
    "power.draw [W], temperature.gpu\n"
)


@dataclass(frozen=True)
class Runs:
    """Every run's GPUs as arrays: one row per run in `start`..., one per (run, GPU) in `gpu_*`."""

    start: np.ndarray  # UTC seconds
    end: np.ndarray
    job: np.ndarray  # job index
    level: np.ndarray  # mean utilization of the run's GPUs, %; 0 for a launch that failed
    noise: np.ndarray  # standard deviation per sample, points
    memory_mib: np.ndarray  # memory the run keeps on each GPU
    gpu_owner: np.ndarray  # per pair: run index
    gpu_global: np.ndarray  # per pair: machine * 8 + GPU index


@dataclass(frozen=True)
class GpuLogResult:
    util_sum: np.ndarray  # per job
    util_count: np.ndarray  # per job
    rows: int


def gpu_uuid(seed: int, host: str, index: int) -> str:
    digest = hashlib.sha256(f"{seed}/{host}/{index}".encode()).hexdigest()
    return f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def sample_owners(runs: Runs, pair_first: np.ndarray, pair_end: np.ndarray, c0: int, c1: int, gpus: int) -> np.ndarray:
    """owner[k - c0, g]: the run that holds GPU g (machine * 8 + index) at sample k, for k in
    [c0, c1); -1 where none does. pair_first/pair_end: per (run, GPU) pair of `runs`, the
    first sample it holds and the one after its last (a difference array over (sample, GPU))."""
    length = c1 - c0
    sel = (pair_end > c0) & (pair_first < c1) & (pair_end > pair_first)
    lo = np.clip(pair_first[sel], c0, c1) - c0
    hi = np.clip(pair_end[sel], c0, c1) - c0
    col = runs.gpu_global[sel]
    ident = (runs.gpu_owner[sel] + 1).astype(np.int64)
    diff = np.zeros((length + 1, gpus), dtype=np.int64)
    np.add.at(diff, (lo, col), ident)
    np.add.at(diff, (hi, col), -ident)
    return np.cumsum(diff[:length], axis=0) - 1


@dataclass(frozen=True)
class SampleGrid:
    """The sample instants of a trace (sample k at t0 + k * interval) and, per (run, GPU) pair
    of `runs`, the first sample it holds and the one after its last."""

    n_samples: int
    pair_first: np.ndarray
    pair_end: np.ndarray


def sample_grid(runs: Runs, t0: int, span: int, interval_s: int) -> SampleGrid:
    # Run r holds sample k when start <= t0 + k * interval < end.
    first_k = -(-(runs.start - t0) // interval_s)
    end_k = -(-(runs.end - t0) // interval_s)
    return SampleGrid(-(-span // interval_s), first_k[runs.gpu_owner], end_k[runs.gpu_owner])


@dataclass(frozen=True)
class SampleChunk:
    """Samples [c0, c0 + length) (a day at most: CHUNK_SECONDS), who holds each GPU there,
    and the chunk's own random stream (so a chunk's draws do not depend on the others)."""

    index: int
    c0: int
    length: int
    rng: np.random.Generator
    busy: np.ndarray  # (length, gpus): some run holds the GPU
    own: np.ndarray  # (length, gpus): the run holding it, 0 where none does (mask with busy)


def sample_chunks(
    runs: Runs, grid: SampleGrid, *, gpus: int, interval_s: int, seed: int, stream: int
) -> Iterator[SampleChunk]:
    per_chunk = max(1, CHUNK_SECONDS // interval_s)
    for index, c0 in enumerate(range(0, grid.n_samples, per_chunk)):
        c1 = min(grid.n_samples, c0 + per_chunk)
        owner = sample_owners(runs, grid.pair_first, grid.pair_end, c0, c1, gpus)
        busy = owner >= 0
        yield SampleChunk(
            index, c0, c1 - c0, np.random.default_rng([seed, stream, index]), busy, np.where(busy, owner, 0)
        )


def write_gpu_logs(
    out: Path,
    *,
    hosts: list[str],
    t0: int,
    span: int,
    interval_s: int,
    runs: Runs,
    n_jobs: int,
    seed: int,
    stream: int,
    blackout: Blackout,
    zone_name: str,
    log: Callable[[str], None],
) -> GpuLogResult:
    folder = out / "gpu"
    folder.mkdir(parents=True, exist_ok=True)
    machines = len(hosts)
    gpus = machines * GPUS_PER_MACHINE
    grid = sample_grid(runs, t0, span, interval_s)
    util_sum = np.zeros(n_jobs)
    util_count = np.zeros(n_jobs, dtype=np.int64)
    uuids = [[gpu_uuid(seed, h, i) for i in range(GPUS_PER_MACHINE)] for h in hosts]
    files = [open(folder / f"{h}.csv", "w", encoding="ascii", newline="\n") for h in hosts]  # closed below, in finally
    rows = 0
    try:
        for chunk in sample_chunks(runs, grid, gpus=gpus, interval_s=interval_s, seed=seed, stream=stream):
            c0, length, rng, busy, own = chunk.c0, chunk.length, chunk.rng, chunk.busy, chunk.own
            level = runs.level[own] + rng.standard_normal((length, gpus)) * runs.noise[own]
            util = np.where(busy, np.rint(np.clip(level, 0.0, 100.0)), 0).astype(np.int64)
            util_na = rng.random((length, gpus)) < UTIL_NA_RATE
            power = 42.0 + util * 2.4 + rng.uniform(-3.0, 3.0, size=(length, gpus))
            power_na = rng.random((length, gpus)) < POWER_NA_RATE
            temp = np.rint(34 + util * 0.33 + rng.uniform(-2.0, 2.0, size=(length, gpus))).astype(np.int64)
            memory = np.where(busy, runs.memory_mib[own] + rng.integers(0, 64, size=(length, gpus)), 0)
            millis = rng.integers(0, 1000, size=(length, machines))

            instants = t0 + (c0 + np.arange(length)) * interval_s
            logged = np.array([blackout.defer(int(t)) == int(t) for t in instants])
            counted = busy & ~util_na & logged[:, None]
            jobs_of = runs.job[own[counted]]
            util_sum += np.bincount(jobs_of, weights=util[counted].astype(float), minlength=n_jobs)
            util_count += np.bincount(jobs_of, minlength=n_jobs)

            stamps = [datetime.fromtimestamp(int(t), zone(zone_name)).strftime("%Y/%m/%d %H:%M:%S") for t in instants]
            for m, f in enumerate(files):
                f.write(HEADER)
                lines = []
                for k in range(length):
                    if not logged[k]:
                        continue
                    stamp = f"{stamps[k]}.{int(millis[k, m]):03d}"
                    for i in range(GPUS_PER_MACHINE):
                        g = m * GPUS_PER_MACHINE + i
                        u = "[N/A]" if util_na[k, g] else f"{util[k, g]} %"
                        p = "[N/A]" if power_na[k, g] else f"{power[k, g]:.2f} W"
                        lines.append(
                            f"{stamp}, {i}, {uuids[m][i]}, {PCI_BUS_IDS[i]}, {u}, {int(memory[k, g])} MiB, "
                            f"{MEMORY_TOTAL_MIB} MiB, {p}, {int(temp[k, g])}\n"
                        )
                rows += len(lines)
                f.write("".join(lines))
            log(f"nvidia-smi logs: day {chunk.index + 1} written")
    finally:
        for f in files:
            f.close()
    return GpuLogResult(util_sum=util_sum, util_count=util_count, rows=rows)
