"""Why a job waits: the causes of the replay's split of a wait, defined here once.

Every second of a job's first wait has one cause (docs/waits.md; replay/split.py decides
it). `CAUSES` lists them in their order, which is also the order of jobs.csv's
`wait_<cause>_s` columns, of the report's tables (`cause_order`, 0 first), legends and
colours, and of the summary's `cause_pct`. The SQL gets them as the macros of
db/fact_macros.py (`wait_causes()`, `wait_cause_columns()`), never as literals of its own,
so a new cause is one line here plus its rule in replay/split.py.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WaitCause:
    """One cause: its id (as tables and jobs.csv name it), what the report says of it, and
    its colour in the report's figures."""

    name: str
    words: str
    color: str
    # exists only where the store holds per-user caps (sacctmgr): elsewhere its seconds are
    # 0 in jobs.csv and the report's tables have no row of it
    needs_user_caps: bool = False

    @property
    def column(self) -> str:
        """Its jobs.csv column (and the replay's per-job column): the seconds of the job's first wait."""
        return f"wait_{self.name}_s"


CAUSES = (
    WaitCause("user_limit", "user limit (the user at a per-user GPU cap of its account or QOS)", "#8c564b", True),
    WaitCause("fair_share", "fair share (the VC over its quota)", "#9467bd"),
    WaitCause("capacity", "capacity (too few free GPUs in the cluster)", "#d62728"),
    WaitCause("fragmentation", "fragmentation (enough free GPUs, not on few enough machines)", "#ff7f0e"),
    WaitCause("other", "other (a placement existed: priority, ordering, scheduler delay)", "#7f7f7f"),
)
NAMES = tuple(c.name for c in CAUSES)
COLUMNS = tuple(c.column for c in CAUSES)
COLORS = {c.name: c.color for c in CAUSES}
WORDS = {c.name: c.words for c in CAUSES}


def index(name: str) -> int:
    """The position of cause `name` in CAUSES (its column in the replay's per-cause arrays)."""
    return NAMES.index(name)
