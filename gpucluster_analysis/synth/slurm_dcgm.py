"""Per-node dcgm-exporter scrapes of DCGM's profiling fields for the Slurm view, with their truth.

Contract: `write_dcgm_logs` writes `dcgm/<host>.prom` for every machine: the `/metrics`
text of dcgm-exporter, one scrape every `interval_s` seconds of the telemetry window,
concatenated. Each scrape has, per field, its `# HELP` and `# TYPE` lines and one sample
per GPU, in this order: DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_PROF_SM_ACTIVE,
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, DCGM_FI_PROF_DRAM_ACTIVE. A sample line is

    DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-...",Hostname="gpu001"} 0.412 1509692400412

with the UUID nvidia-smi's log gives the same GPU, a ratio 0-1 with exactly three
decimals, and the scrape's time in epoch milliseconds (UTC, so a repeated fall-back hour
is logged like any other: nothing is ambiguous). It returns, per job, the sums (in
thousandths, exact integers) and the count of the SM_ACTIVE and PIPE_TENSOR_ACTIVE values
**as written** that belong to the job by domain.md's rule (a GPU its runs were allocated,
start <= t < end), the rule mean_gpu_util_pct follows.

* A GPU held by run r of job j at scrape instant t reports
  gr_engine = level(r) / 100 + noise (the run's utilization level, slurm.py's `_levels`),
  sm = gr_engine x sm_ratio(j), tensor = sm x tensor_share(j), dram = sm x dram_ratio(j),
  each with a little noise, rounded to thousandths, never above 1 and sm never above
  gr_engine, tensor never above sm. About 20% of jobs use no tensor cores (tensor 0).
* Stalled jobs keep the GPU "busy" (a kernel runs most of the time, so nvidia-smi's
  utilization and gr_engine stay high) while few SMs work: sm = 0.02-0.12. Of the jobs
  whose level is 85% or more, the one with the most scrapes stalls and a third of the
  others do, so the trace has jobs with utilization >= 80% and SM activity <= 20%;
  3% of the remaining jobs stall too.
* A launch that failed holds its GPUs idle (all fields 0.000), and so does an unallocated
  GPU.
* `NaN` (Prometheus' "no value") replaces all four fields of a GPU in about 0.5% of
  scrapes (profiling paused); those samples count for no job.

Randomness comes from two Generators of their own (`[seed, jobs_stream]` for the per-job
ratios, `[seed, stream, day]` for the samples), so nothing else the generator writes or
draws changes. The millisecond part of a scrape's time never changes which run a sample
belongs to: runs start and end on whole seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpucluster_analysis.synth.model import GPUS_PER_MACHINE
from gpucluster_analysis.synth.slurm_telemetry import Runs, gpu_uuid, sample_chunks, sample_grid

# (metric, HELP text as dcgm-exporter's default counters give it)
FIELDS = (
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_SM_ACTIVE", "The ratio of cycles an SM has at least 1 warp assigned."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "Ratio of cycles the device memory interface is active sending or receiving data."),
)
NAN_RATE = 0.005
STALL_LEVEL_PCT = 85.0  # jobs at or above this utilization level stall with STALL_PROB_BUSY
STALL_PROB_BUSY = 0.35
STALL_PROB_OTHER = 0.03
NO_TENSOR_PROB = 0.2
_VALUE_TEXT = tuple(f"{k / 1000:.3f}" for k in range(1001))  # thousandths -> "0.412"


@dataclass(frozen=True)
class DcgmResult:
    sm_sum: np.ndarray  # per job: sum of the counted SM_ACTIVE values, in thousandths
    tensor_sum: np.ndarray  # per job: the same for PIPE_TENSOR_ACTIVE
    count: np.ndarray  # per job: the samples counted (the same for both fields)
    stalled: np.ndarray  # per job: drawn as stalled (busy by utilization, idle by SM)
    rows: int  # sample lines written (all fields)


def write_dcgm_logs(
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
    jobs_stream: int,
    log: Callable[[str], None],
) -> DcgmResult:
    folder = out / "dcgm"
    folder.mkdir(parents=True, exist_ok=True)
    machines = len(hosts)
    gpus = machines * GPUS_PER_MACHINE

    per_job = np.random.default_rng([seed, jobs_stream])
    stall_draw = per_job.random(n_jobs)
    stall_level = per_job.uniform(0.02, 0.12, n_jobs)
    sm_ratio = per_job.uniform(0.55, 0.95, n_jobs)
    no_tensor = per_job.random(n_jobs) < NO_TENSOR_PROB
    tensor_share = np.where(no_tensor, 0.0, per_job.uniform(0.1, 0.75, n_jobs))
    dram_ratio = per_job.uniform(0.2, 0.9, n_jobs)
    job_level = np.zeros(n_jobs)
    np.maximum.at(job_level, runs.job, runs.level)  # the idle sentinel run adds 0
    grid = sample_grid(runs, t0, span, interval_s)

    busy_job = job_level >= STALL_LEVEL_PCT
    stalled = np.where(busy_job, stall_draw < STALL_PROB_BUSY, stall_draw < STALL_PROB_OTHER)
    # The busy job with the most scrapes always stalls, so that every trace with one has a case.
    scrapes = np.clip(grid.pair_end, 0, grid.n_samples) - np.clip(grid.pair_first, 0, grid.n_samples)
    per_job_scrapes = np.bincount(runs.job[runs.gpu_owner], weights=np.maximum(scrapes, 0), minlength=n_jobs)
    candidates = busy_job & (per_job_scrapes > 0)
    if candidates.any():
        stalled[int(np.argmax(np.where(candidates, per_job_scrapes, -1.0)))] = True
    sm_sum = np.zeros(n_jobs, dtype=np.int64)
    tensor_sum = np.zeros(n_jobs, dtype=np.int64)
    count = np.zeros(n_jobs, dtype=np.int64)
    # Everything of a sample line but its value and time, per (field, machine, GPU).
    prefix = [
        [
            [f'{name}{{gpu="{i}",UUID="{gpu_uuid(seed, h, i)}",Hostname="{h}"}} ' for i in range(GPUS_PER_MACHINE)]
            for h in hosts
        ]
        for name, _ in FIELDS
    ]
    headers = [f"# HELP {name} {text}\n# TYPE {name} gauge\n" for name, text in FIELDS]
    files = [open(folder / f"{h}.prom", "w", encoding="ascii", newline="\n") for h in hosts]  # closed below, in finally
    rows = 0
    try:
        for chunk in sample_chunks(runs, grid, gpus=gpus, interval_s=interval_s, seed=seed, stream=stream):
            c0, length, rng, busy, own = chunk.c0, chunk.length, chunk.rng, chunk.busy, chunk.own
            job = runs.job[own]
            shape = (length, gpus)
            gr = runs.level[own] / 100.0 + rng.standard_normal(shape) * runs.noise[own] / 100.0
            gr_k = np.where(busy, np.rint(np.clip(gr, 0.0, 1.0) * 1000), 0).astype(np.int64)
            working = gr_k * sm_ratio[job] * (1.0 + 0.04 * rng.standard_normal(shape))
            idling = 1000.0 * (stall_level[job] + 0.01 * rng.standard_normal(shape))
            sm_k = np.clip(np.rint(np.where(stalled[job], idling, working)), 0, gr_k).astype(np.int64)
            tensor_k = np.clip(
                np.rint(sm_k * tensor_share[job] * (1.0 + 0.05 * rng.standard_normal(shape))), 0, sm_k
            ).astype(np.int64)
            dram_k = np.clip(
                np.rint(sm_k * dram_ratio[job] * (1.0 + 0.05 * rng.standard_normal(shape))), 0, 1000
            ).astype(np.int64)
            missing = rng.random(shape) < NAN_RATE
            millis = rng.integers(0, 1000, size=(length, machines))

            counted = busy & ~missing
            jobs_of = job[counted]
            sm_sum += np.bincount(jobs_of, weights=sm_k[counted], minlength=n_jobs).astype(np.int64)
            tensor_sum += np.bincount(jobs_of, weights=tensor_k[counted], minlength=n_jobs).astype(np.int64)
            count += np.bincount(jobs_of, minlength=n_jobs)

            values = (gr_k, sm_k, tensor_k, dram_k)
            for m, f in enumerate(files):
                lines = []
                g0 = m * GPUS_PER_MACHINE
                for k in range(length):
                    stamp = f" {(t0 + (c0 + k) * interval_s) * 1000 + int(millis[k, m])}\n"
                    gone = missing[k, g0 : g0 + GPUS_PER_MACHINE]
                    for field, header in enumerate(headers):
                        lines.append(header)
                        row = values[field][k, g0 : g0 + GPUS_PER_MACHINE]
                        for i in range(GPUS_PER_MACHINE):
                            text = "NaN" if gone[i] else _VALUE_TEXT[row[i]]
                            lines.append(prefix[field][m][i] + text + stamp)
                rows += length * len(FIELDS) * GPUS_PER_MACHINE
                f.write("".join(lines))
            log(f"dcgm-exporter scrapes: day {chunk.index + 1} written")
    finally:
        for f in files:
            f.close()
    return DcgmResult(sm_sum=sm_sum, tensor_sum=tensor_sum, count=count, stalled=stalled, rows=rows)
