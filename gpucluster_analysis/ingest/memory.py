"""DuckDB's memory bound while a file loads: a format's load wrapped so that the store's memory
limit is lowered for it (never raised) and put back after, whatever happened."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import duckdb

from gpucluster_analysis.ingest.base import LoadContext, LoadCounts

# DuckDB's memory limit while a telemetry file loads. Past it, the staging tables and the
# sorts spill to the store's temp directory (<store>.tmp), so a log of several node-days of
# 1 s samples needs no more memory than one day (benchmarks/RESULTS.md, GPU telemetry).
MEMORY_LIMIT_BYTES = 512 * 1000**2
_UNITS = {
    "b": 1,
    "bytes": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}


def _limit_bytes(text: str) -> float | None:
    match = re.fullmatch(r"\s*([\d.]+)\s*([A-Za-z]+)\s*", text)
    if not match or match.group(2).lower() not in _UNITS:
        return None
    return float(match.group(1)) * _UNITS[match.group(2).lower()]


@functools.cache
def _default_memory_limit() -> str:
    with duckdb.connect() as probe:
        return str(probe.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])


def bounded_memory(
    load: Callable[[LoadContext], LoadCounts], limit_bytes: int = MEMORY_LIMIT_BYTES
) -> Callable[[LoadContext], LoadCounts]:
    """`load` with DuckDB's memory limit lowered to `limit_bytes` (never raised), then put back.

    The limit is a setting of the whole database, set through a second connection so that it
    can be put back even when a failed statement has aborted the file's transaction.
    """

    @functools.wraps(load)
    def run(ctx: LoadContext) -> LoadCounts:
        side = ctx.con.cursor()
        try:
            before = str(side.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])
            current = _limit_bytes(before)
            lowered = current is None or current > limit_bytes
            if lowered:
                side.execute(f"SET memory_limit = '{limit_bytes}B'")
        except duckdb.Error:
            lowered = False  # e.g. more already in use than the limit: load unbounded
        try:
            return load(ctx)
        finally:
            if lowered:
                # RESET gives back DuckDB's default exactly; its printed form would round it down
                side.execute(
                    "RESET memory_limit" if before == _default_memory_limit() else f"SET memory_limit = '{before}'"
                )
            side.close()

    return run
