"""`gca synth`: a synthetic trace with known answers."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpucluster_analysis.cli._output import guarded, stderr


@guarded
def synth(
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory to write the trace into.", file_okay=False)],
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Number of jobs.")] = 500,
    machines: Annotated[int, typer.Option("--machines", min=1, help="Number of 8-GPU machines.")] = 20,
    days: Annotated[float, typer.Option("--days", min=0.1, help="Length of the submission window in days.")] = 3.0,
    seed: Annotated[int, typer.Option("--seed", help="Random seed; the same seed gives the same trace.")] = 0,
    trace_format: Annotated[
        str,
        typer.Option(
            "--format",
            "--scheduler",
            help="philly: the Philly trace files; slurm: sacct, slurm-<jobid>.out, "
            "scontrol, per-node nvidia-smi logs and DCGM scrapes of the same simulated jobs.",
        ),
    ] = "philly",
    interval: Annotated[
        int, typer.Option("--interval", min=1, max=3600, help="Seconds between nvidia-smi samples (--format slurm).")
    ] = 60,
    dcgm_interval: Annotated[
        int,
        typer.Option(
            "--dcgm-interval",
            min=1,
            max=3600,
            help="Seconds between dcgm-exporter scrapes of DCGM's profiling fields (--format slurm).",
        ),
    ] = 300,
) -> None:
    """Write a deterministic synthetic trace with truth.json, in the Philly or the Slurm formats.

    Example: gca synth --out examples/synthetic --jobs 300 --machines 16 --days 3 --seed 7

    Example: gca synth --format slurm --out /tmp/slurm --jobs 200 --machines 8 --days 1
    """
    from gpucluster_analysis.errors import InputError

    def log(msg: str) -> None:
        stderr.print(f"gca: {msg}", markup=False)

    if trace_format == "philly":
        from gpucluster_analysis.synth import generate_trace

        result: object = generate_trace(out, jobs=jobs, machines=machines, days=days, seed=seed, log=log)
    elif trace_format == "slurm":
        from gpucluster_analysis.synth.slurm import generate_slurm_trace

        result = generate_slurm_trace(
            out,
            jobs=jobs,
            machines=machines,
            days=days,
            seed=seed,
            interval_s=interval,
            dcgm_interval_s=dcgm_interval,
            log=log,
        )
    else:
        raise InputError(f"unknown --format {trace_format!r}", hint="gca synth writes philly or slurm")
    stderr.print(f"gca: wrote {result}", markup=False)
