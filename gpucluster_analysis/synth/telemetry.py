"""Per-minute GPU, CPU and memory telemetry, vectorized, with the truth it implies.

Contract: `write_telemetry` writes `cluster_gpu_util`, `cluster_cpu_util` and
`cluster_mem_util` for every machine and every minute in [t0, t0 + span) (minus
a few machine outages), in day-sized chunks, and returns, per job, the sum
and count of the GPU utilization values **as written** (parsed back from their
text) that belong to the job by domain.md's rule. No Python loop runs per row:
each chunk is built as NumPy arrays and turned into CSV bytes by filling a
fixed-width byte matrix and dropping its padding.

How values arise:

* a GPU held by an attempt at a sample instant `t` (start <= t < end) reports
  the job's efficiency x a locality factor (fewer for more servers) x an
  interference factor (lower when other jobs share the machine) + noise, with
  occasional stalls, clipped to 0-100 and written as k/60 (a mean of 60
  one-second readings) with up to 9 decimals, like upstream's `99.366666667`;
* an idle GPU reports `0.0`; `NA` marks a missing sample or an offline GPU;
* CPU % and free memory (KiB) follow the number of busy GPUs on the machine.

Which occupant owns a cell is found with a difference array over (minute,
GPU): +id at the first minute, -id after the last, cumulative sum. A parallel
+1/-1 count proves no GPU is held twice in any minute.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpucluster_analysis.synth.clock import ZONE_NAME, suffixed_local
from gpucluster_analysis.synth.model import GPUS_PER_MACHINE

CHUNK_MINUTES = 1440
GPU_NA_RATE = 0.006  # single missing samples
GPU_OFFLINE_PROB = 0.01  # chance that a GPU has one offline span in the trace
MACHINE_OUTAGE_PROB = 0.05  # chance that a machine's telemetry agent is down once
CPU_NA_RATE = 0.002
STALL_RATE = 0.03  # input-pipeline stalls: a minute at a fraction of the usual rate

GPU_HEADER = "time,machineId," + ",".join(f"gpu{i}_util" for i in range(GPUS_PER_MACHINE)) + "\n"
CPU_HEADER = "time,machine_id,cpu_util\n"
MEM_HEADER = "time,machine_id,mem_total,mem_free\n"


def _pad_table(strings: list[str]) -> np.ndarray:
    """(len, width) uint8 of ASCII strings padded with zero bytes (dropped on output)."""
    width = max(len(s) for s in strings)
    table = np.zeros((len(strings), width), dtype=np.uint8)
    for i, s in enumerate(strings):
        b = s.encode("ascii")
        table[i, : len(b)] = np.frombuffer(b, dtype=np.uint8)
    return table


# GPU values k/60 for k = 0..6000, then NA; CPU values k/600, then NA.
GPU_TEXT = [repr(round(k / 60, 9)) for k in range(6001)] + ["NA"]
GPU_NA_CODE = 6001
GPU_VALUE = np.array([float(s) for s in GPU_TEXT[:-1]] + [np.nan])
GPU_TABLE = _pad_table(GPU_TEXT)
CPU_TEXT = [repr(round(k / 600, 11)) for k in range(60001)] + ["NA"]
CPU_NA_CODE = 60001
CPU_TABLE = _pad_table(CPU_TEXT)
THIRDS_TABLE = _pad_table([".0", ".3333", ".6667"])
COMMA = np.frombuffer(b",", dtype=np.uint8).reshape(1, 1)
NEWLINE = np.frombuffer(b"\n", dtype=np.uint8).reshape(1, 1)


def _uint_text(values: np.ndarray, width: int) -> np.ndarray:
    """(N, width) uint8 decimal digits of non-negative ints, leading zeros as padding."""
    place = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    digits = (values[:, None] // place) % 10
    out = (digits + 48).astype(np.uint8)
    leading = values[:, None] < place
    leading[:, -1] = False
    out[leading] = 0
    return out


def _join_rows(parts: list[np.ndarray], n: int) -> bytes:
    """Concatenate per-row byte fields (each (n, w) or (1, w)) into CSV bytes."""
    width = sum(p.shape[1] for p in parts)
    buf = np.empty((n, width), dtype=np.uint8)
    pos = 0
    for p in parts:
        buf[:, pos : pos + p.shape[1]] = p
        pos += p.shape[1]
    flat = buf.reshape(-1)
    return flat[flat != 0].tobytes()


@dataclass(frozen=True)
class Occupancy:
    """Who held which GPUs when, as arrays (one row per (attempt, GPU) pair in `gpu_*`)."""

    start: np.ndarray  # per occupant: UTC seconds
    end: np.ndarray
    job: np.ndarray  # per occupant: job index
    base: np.ndarray  # per occupant: utilization on an unshared server, in %
    noise: np.ndarray  # per occupant: standard deviation per minute
    counted: np.ndarray  # per occupant: whether its samples belong to it in the job log's terms
    gpu_owner: np.ndarray  # per pair: occupant index
    gpu_global: np.ndarray  # per pair: machine * 8 + GPU


@dataclass(frozen=True)
class TelemetryResult:
    util_sum: np.ndarray  # per job
    util_count: np.ndarray  # per job
    gpu_rows: int
    cpu_rows: int
    mem_rows: int


def _spans(
    rng: np.random.Generator, units: int, prob: float, minutes: int, median: float
) -> list[tuple[int, int, int]]:
    """(unit, first minute, end minute) of one outage per unit drawn with `prob`."""
    hit = np.flatnonzero(rng.random(units) < prob)
    length = np.maximum(1, rng.lognormal(np.log(median), 0.8, size=hit.size)).astype(np.int64)
    first = rng.integers(0, max(1, minutes), size=hit.size)
    return [(int(u), int(f), int(min(minutes, f + n))) for u, f, n in zip(hit, first, length, strict=True)]


def write_telemetry(
    out: Path,
    *,
    machines: int,
    t0: int,
    span: int,
    occupancy: Occupancy,
    n_jobs: int,
    seed: int,
    stream: int,
    mem_total_kib: np.ndarray,
    log: Callable[[str], None],
    zone_name: str = ZONE_NAME,
) -> TelemetryResult:
    assert t0 % 60 == 0, "telemetry minutes are aligned to the window start"
    gpus = machines * GPUS_PER_MACHINE
    minutes = -(-span // 60)
    plan_rng = np.random.default_rng([seed, stream, 0])
    offline = _spans(plan_rng, gpus, GPU_OFFLINE_PROB, minutes, median=360.0)
    outages = _spans(plan_rng, machines, MACHINE_OUTAGE_PROB, minutes, median=40.0)

    # Minutes m with start <= t0 + 60 m < end, per (occupant, GPU) pair.
    first_min = -(-(occupancy.start - t0) // 60)
    end_min = -(-(occupancy.end - t0) // 60)
    pair_first = first_min[occupancy.gpu_owner]
    pair_end = end_min[occupancy.gpu_owner]

    machine_names = _pad_table([f"m{i}" for i in range(machines)])
    total_text = _pad_table([f"{int(t)}.0" for t in mem_total_kib])
    util_sum = np.zeros(n_jobs)
    util_count = np.zeros(n_jobs, dtype=np.int64)
    rows = {"gpu": 0, "cpu": 0, "mem": 0}

    with (
        open(out / "cluster_gpu_util", "wb") as gpu_file,
        open(out / "cluster_cpu_util", "wb") as cpu_file,
        open(out / "cluster_mem_util", "wb") as mem_file,
    ):
        gpu_file.write(GPU_HEADER.encode())
        cpu_file.write(CPU_HEADER.encode())
        mem_file.write(MEM_HEADER.encode())
        n_chunks = -(-minutes // CHUNK_MINUTES)
        for chunk in range(n_chunks):
            c0 = chunk * CHUNK_MINUTES
            c1 = min(minutes, c0 + CHUNK_MINUTES)
            length = c1 - c0
            rng = np.random.default_rng([seed, stream, 1 + chunk])

            # --- who owns each (minute, GPU) cell -------------------------------
            sel = (pair_end > c0) & (pair_first < c1) & (pair_end > pair_first)
            lo = np.clip(pair_first[sel], c0, c1) - c0
            hi = np.clip(pair_end[sel], c0, c1) - c0
            col = occupancy.gpu_global[sel]
            ident = (occupancy.gpu_owner[sel] + 1).astype(np.int32)
            diff = np.zeros((length + 1, gpus), dtype=np.int32)
            np.add.at(diff, (lo, col), ident)
            np.add.at(diff, (hi, col), -ident)
            owner = np.cumsum(diff[:length], axis=0, dtype=np.int32) - 1
            diff[:] = 0
            np.add.at(diff, (lo, col), 1)
            np.add.at(diff, (hi, col), -1)
            holders = np.cumsum(diff[:length], axis=0, dtype=np.int32)
            assert holders.max(initial=0) <= 1, "a GPU is held by two attempts in the same minute"
            del diff, holders
            busy = owner >= 0
            own = np.where(busy, owner, 0)

            # --- GPU utilization -------------------------------------------------
            by_machine = np.sort(owner.reshape(length, machines, GPUS_PER_MACHINE), axis=2)
            tenants = (by_machine[:, :, 0] >= 0).astype(np.int64) + (
                (by_machine[:, :, 1:] != by_machine[:, :, :-1]) & (by_machine[:, :, 1:] >= 0)
            ).sum(axis=2)
            del by_machine
            interference = np.clip(1.0 - 0.05 * (tenants - 1), 0.8, 1.0)
            level = occupancy.base[own] * np.repeat(interference, GPUS_PER_MACHINE, axis=1)
            stall = rng.random((length, gpus)) < STALL_RATE
            level = np.where(stall, level * rng.uniform(0.05, 0.6, size=(length, gpus)), level)
            level += rng.standard_normal((length, gpus)) * occupancy.noise[own]
            code = np.where(busy, np.rint(np.clip(level, 0.0, 100.0) * 60), 0).astype(np.int64)
            del level, stall
            missing = rng.random((length, gpus)) < GPU_NA_RATE
            for g, f, e in offline:
                if e > c0 and f < c1:
                    missing[max(f, c0) - c0 : min(e, c1) - c0, g] = True
            code[missing] = GPU_NA_CODE

            dropped = np.zeros((length, machines), dtype=bool)
            for m, f, e in outages:
                if e > c0 and f < c1:
                    dropped[max(f, c0) - c0 : min(e, c1) - c0, m] = True

            # --- truth: the written values that belong to each job ---------------
            counted = busy & ~missing & ~np.repeat(dropped, GPUS_PER_MACHINE, axis=1) & occupancy.counted[own]
            jobs_of = occupancy.job[own[counted]]
            util_sum += np.bincount(jobs_of, weights=GPU_VALUE[code[counted]], minlength=n_jobs)
            util_count += np.bincount(jobs_of, minlength=n_jobs)
            del counted, jobs_of, own, owner

            # --- host CPU and memory ---------------------------------------------
            busy_gpus = busy.reshape(length, machines, GPUS_PER_MACHINE).sum(axis=2)
            del busy
            cpu = 0.8 + busy_gpus * 5.5 * rng.uniform(0.6, 1.4, size=(length, machines))
            cpu += np.abs(rng.standard_normal((length, machines))) * 2.0
            cpu_code = np.rint(np.clip(cpu, 0.0, 100.0) * 600).astype(np.int64)
            cpu_code[rng.random((length, machines)) < CPU_NA_RATE] = CPU_NA_CODE
            used = 0.03 + busy_gpus * 0.07 * rng.uniform(0.5, 1.5, size=(length, machines))
            used = np.clip(used + rng.standard_normal((length, machines)) * 0.01, 0.005, 0.99)
            free_thirds = np.rint(mem_total_kib[None, :] * (1.0 - used) * 3).astype(np.int64)

            # --- rows, time-major then machine, minus the outages ----------------
            row_minute, row_machine = np.nonzero(~dropped)
            n = row_minute.size
            times = _pad_table([suffixed_local(t0 + 60 * (c0 + i), zone_name) for i in range(length)])
            time_col = times[row_minute]
            machine_col = machine_names[row_machine]

            cells = GPU_TABLE[code.reshape(length, machines, GPUS_PER_MACHINE)[row_minute, row_machine]]
            value_part = np.empty((n, GPUS_PER_MACHINE, GPU_TABLE.shape[1] + 1), dtype=np.uint8)
            value_part[:, :, :-1] = cells
            value_part[:, :, -1] = ord(",")  # every value, the last included, ends in a comma
            del cells, code
            gpu_file.write(_join_rows([time_col, COMMA, machine_col, COMMA, value_part.reshape(n, -1), NEWLINE], n))
            del value_part

            cpu_file.write(
                _join_rows(
                    [time_col, COMMA, machine_col, COMMA, CPU_TABLE[cpu_code[row_minute, row_machine]], NEWLINE], n
                )
            )
            thirds = free_thirds[row_minute, row_machine]
            mem_file.write(
                _join_rows(
                    [
                        time_col,
                        COMMA,
                        machine_col,
                        COMMA,
                        total_text[row_machine],
                        COMMA,
                        _uint_text(thirds // 3, 10),
                        THIRDS_TABLE[thirds % 3],
                        NEWLINE,
                    ],
                    n,
                )
            )
            for key in rows:
                rows[key] += n
            log(f"telemetry: day {chunk + 1}/{n_chunks} written")

    return TelemetryResult(
        util_sum=util_sum, util_count=util_count, gpu_rows=rows["gpu"], cpu_rows=rows["cpu"], mem_rows=rows["mem"]
    )
