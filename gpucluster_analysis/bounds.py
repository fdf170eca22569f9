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
* **GPU and host measures**: each within its MEASURE_RANGES or HOST_MEASURE_RANGES
  (utilization 0-100 %, DCGM's activities ratios 0-1, memory, power, clock and traffic not
  negative). nvsmi_check.sql and the Philly scripts get the bounded ones as parameters
  (`$<measure>_min`, `_max`, `_range`), the fast readers (nvsmi_fast.py, dcgm_fast.py) read
  the table.
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
# (lowest, highest) value of each GPU measure, inclusive, as gpu_samples and gpu_sample_details
# name them; None: no bound.
MEASURE_RANGES: dict[str, tuple[float | None, float | None]] = {
    "util": (0, 100),
    "mem_util": (0, 100),
    "mem_used": (0, None),
    "mem_free": (None, None),
    "mem_reserved": (None, None),
    "mem_total": (0, None),
    "power": (0, None),
    "temp": (None, None),
    "sm_clock": (0, None),
    "gr_engine": (0, 1),
    "sm_active": (0, 1),
    "sm_occupancy": (0, 1),
    "tensor_active": (0, 1),
    "fp64_active": (0, 1),
    "fp32_active": (0, 1),
    "fp16_active": (0, 1),
    "dram_active": (0, 1),
    "pcie_tx_bytes": (0, None),
    "pcie_rx_bytes": (0, None),
    "nvlink_tx_bytes": (0, None),
    "nvlink_rx_bytes": (0, None),
}
# ... and of a host's measures (host_samples).
HOST_MEASURE_RANGES: dict[str, tuple[float | None, float | None]] = {"cpu_util": (0, 100)}


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


def measure_range_params() -> dict[str, object]:
    """Each GPU or host measure bounded on both sides as $<measure>_min, $<measure>_max and
    $<measure>_range (the words of a reject: `0-100`)."""
    params: dict[str, object] = {}
    for measure, (low, high) in (MEASURE_RANGES | HOST_MEASURE_RANGES).items():
        if low is not None and high is not None:
            params |= {f"{measure}_min": low, f"{measure}_max": high, f"{measure}_range": f"{low:g}-{high:g}"}
    return params


def sql_params(max_gpus_per_node: int = DEFAULT_MAX_GPUS_PER_NODE) -> dict[str, object]:
    """The bounds as the ingest scripts' parameters: $window_start, $window_end (exclusive),
    $outside_years (the words after a time outside them), $max_gpus_per_node, $gpu_bound (the
    words after a GPU count or index over it), $max_nodes_per_job, $node_bound, and the GPU
    measures' ranges (measure_range_params)."""
    return {
        **measure_range_params(),
        "window_start": WINDOW_START,
        "window_end": WINDOW_END,
        "outside_years": _OUTSIDE_YEARS,
        "max_gpus_per_node": max_gpus_per_node,
        "gpu_bound": over_gpu_bound(max_gpus_per_node),
        "max_nodes_per_job": MAX_NODES_PER_JOB,
        "node_bound": f": over the bound of {MAX_NODES_PER_JOB:,} nodes per job",
    }
