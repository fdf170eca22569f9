"""How many cores gca works on: every core of the machine, or as many as GCA_THREADS says (a
login node shared with others; a test runner's worker processes, each given its share).

DuckDB runs a query on that many threads, and job logs are parsed in up to that many worker
processes (ingest/parse_pool.py).
"""

from __future__ import annotations

import os

from gpucluster_analysis.errors import InputError

ENV = "GCA_THREADS"


def threads_asked() -> int | None:
    """The number GCA_THREADS gives, or None where it is unset (or empty)."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise InputError(
            f"{ENV}={text!r}: threads are a whole number of at least 1", hint=f"set {ENV} to 1 or more, or unset it"
        )
    return int(text)


def cores() -> int:
    """The cores gca works on."""
    return threads_asked() or os.cpu_count() or 1
