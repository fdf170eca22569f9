"""The sanity windows and bounds every reader holds a row to, defined here once.

A value outside them is no measurement but a typo, a unit slip or hostile input, and one such
row would poison the report's headline numbers: `gres/gpu=1000000000` in one sacct row is a
billion GPUs, a Philly attempt starting in 2999 millions of waiting GPU-hours. Every reader
rejects such a row (the `rejects` table: file, line, reason), as it rejects a malformed one;
a file whose every row is rejected fails, as always. The SQL scripts get these bounds as
bound parameters (`sql_params`), never as literals of their own.

* **Times**: the years FIRST_YEAR to LAST_YEAR (1990-2059), the years whose zone rules gca
  builds (timezones.py): a zone-less time outside them could not be converted right anyway.
  A zone-less time is checked as written, one with a zone or in epoch seconds in UTC.
* **GPUs per node**: at most `max_gpus_per_node` (`IngestOptions.max_gpus_per_node`,
  `gca ingest --max-gpus-per-node`, default DEFAULT_MAX_GPUS_PER_NODE = 1,024, far above the
  8-16 GPUs of the largest servers). A GPU index is below it; a job's GPU count at most it times
  the job's nodes.
* **Nodes per job**: at most MAX_NODES_PER_JOB (100,000; also the most hosts a Slurm hostlist
  expands to).
"""

from __future__ import annotations

from datetime import datetime

from gpucluster_analysis.errors import InputError

FIRST_YEAR, LAST_YEAR = 1990, 2059
WINDOW_START = datetime(FIRST_YEAR, 1, 1)
WINDOW_END = datetime(LAST_YEAR + 1, 1, 1)  # the first instant after the window
DEFAULT_MAX_GPUS_PER_NODE = 1024
# GPU indices are stored as SMALLINT (0-32767): a bound above this could not be stored.
LARGEST_MAX_GPUS_PER_NODE = 32768
MAX_NODES_PER_JOB = 100_000
MAX_GPUS_OPTION = "--max-gpus-per-node"


def outside_years(what: str) -> str:
    """The reason for a time outside the window: `End 2999-01-01T00:00:00 is outside ...`."""
    return f"{what}{_OUTSIDE_YEARS}"


_OUTSIDE_YEARS = f" is outside the years gca reads ({FIRST_YEAR}-{LAST_YEAR})"


def check_max_gpus_per_node(value: int) -> int:
    """`value` when it can be a bound of GPUs per node; an InputError naming the option else."""
    if not 1 <= value <= LARGEST_MAX_GPUS_PER_NODE:
        raise InputError(
            f"{MAX_GPUS_OPTION} {value}: not a number of GPUs a node can hold",
            hint=f"give 1 to {LARGEST_MAX_GPUS_PER_NODE:,} (default {DEFAULT_MAX_GPUS_PER_NODE:,})",
        )
    return value


def over_gpu_bound(max_gpus_per_node: int) -> str:
    """The words after a GPU count or index past the bound: `: over the bound of 1,024 ...`."""
    return f": over the bound of {max_gpus_per_node:,} GPUs per node ({MAX_GPUS_OPTION})"


def sql_params(max_gpus_per_node: int = DEFAULT_MAX_GPUS_PER_NODE) -> dict[str, object]:
    """The bounds as the ingest scripts' parameters: $window_start, $window_end (exclusive),
    $outside_years (the words after a time outside them), $max_gpus_per_node, $gpu_bound (the
    words after a GPU count or index over it), $max_nodes_per_job, $node_bound."""
    return {
        "window_start": WINDOW_START,
        "window_end": WINDOW_END,
        "outside_years": _OUTSIDE_YEARS,
        "max_gpus_per_node": max_gpus_per_node,
        "gpu_bound": over_gpu_bound(max_gpus_per_node),
        "max_nodes_per_job": MAX_NODES_PER_JOB,
        "node_bound": f": over the bound of {MAX_NODES_PER_JOB:,} nodes per job",
    }
