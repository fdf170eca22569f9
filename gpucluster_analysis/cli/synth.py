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
) -> None:
    """Write a deterministic synthetic trace in the Philly formats, with truth.json.

    Example: gca synth --out examples/synthetic --jobs 300 --machines 16 --days 3 --seed 7
    """
    from gpucluster_analysis.synth import generate_trace

    result = generate_trace(out, jobs=jobs, machines=machines, days=days, seed=seed,
                            log=lambda msg: stderr.print(f"gca: {msg}", markup=False))
    stderr.print(f"gca: wrote {result}", markup=False)
