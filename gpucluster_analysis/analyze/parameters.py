"""The values the report's named queries take as parameters (`$name` in their SQL), defined once.

The sections that put a result in words read them from here too, so that the page says "the 8
busiest VCs" where the query kept 8 of them. The telemetry's sampling interval
(`$sample_interval_s`) is not a setting: it is measured (gpu_sample_interval) per report.
"""

from __future__ import annotations

TOP_VCS = 8  # VCs drawn in the by-VC figures and tables, busiest first ($top_vcs)
TOP_REPEATERS = 10  # rows per scope (job, user) in the top repeaters table ($top_repeaters)
# A job "looks busy but is nearly idle": utilization.gpu at least this, SM activity below that.
BUSY_UTIL_PCT = 50.0  # $busy_util_pct
IDLE_SM_PCT = 20.0  # $idle_sm_pct
TOP_BUSY_IDLE = 20  # the most GPU time first, at most this many ($top_jobs)
# Who wastes GPUs: a user or VC is ranked only with at least this share of the GPU-hours, so
# that a small user is not named for one job ($waste_floor_pct).
WASTE_FLOOR_PCT = 2.0


def query_parameters(sample_interval_s: float | None) -> dict[str, object]:
    """Every parameter a report query may name, by name (each query is bound only the ones it names)."""
    return {
        "top_vcs": TOP_VCS,
        "sample_interval_s": sample_interval_s,
        "top_repeaters": TOP_REPEATERS,
        "busy_util_pct": BUSY_UTIL_PCT,
        "idle_sm_pct": IDLE_SM_PCT,
        "top_jobs": TOP_BUSY_IDLE,
        "waste_floor_pct": WASTE_FLOOR_PCT,
    }
