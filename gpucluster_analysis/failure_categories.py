"""The failure taxonomy and the report's failure categories, defined here once.

`CATEGORIES` maps each reason a failed attempt can have to its category (docs/domain.md,
"Failure taxonomy"; the reason ids must stay as they are); signatures.toml names reasons,
classify/rules.py gives them their category from here. The report adds two categories of
its own: `NO_CAUSE`, a failed attempt whose log shows no failure (reason `none`), and
`NO_LOG`, one without a log. `REPORT_ORDER` is the order of them all in the report's
tables and figures, `COLORS` their colours; SQL gets them through db/fact_macros.py
(`failure_category_order()`, `failure_label(...)`).
"""

from __future__ import annotations

UNKNOWN = "unknown"  # a log that shows a failure no signature names (reason and category alike)
NO_FAILURE_REASON = "none"  # the reason of a log that shows no failure at all
SCHEDULER_ONLY_REASONS = ("admin_cancel", "cancelled")  # no log names them: no signature gives them

# reason -> category (docs/domain.md, "Failure taxonomy").
CATEGORIES: dict[str, str] = {
    "gpu_hw": "infrastructure",
    "node_fail": "infrastructure",
    "preempted": "infrastructure",
    "network_error": "infrastructure",
    "storage_io_error": "infrastructure",
    "disk_full": "infrastructure",
    "mpi_failure": "infrastructure",
    "nccl_error": "infrastructure",
    "cuda_oom": "framework",
    "host_oom": "framework",
    "cuda_driver": "framework",
    "cuda_illegal_access": "framework",
    "segfault": "framework",
    "launcher_failure": "framework",
    "import_error": "user",
    "syntax_error": "user",
    "key_error": "user",
    "attribute_error": "user",
    "index_error": "user",
    "type_error": "user",
    "value_error": "user",
    "assertion_error": "user",
    "shape_mismatch": "user",
    "python_exception": "user",
    "file_not_found": "user",
    "permission_denied": "user",
    "nan_loss": "user",
    "time_limit": "user",
    "user_kill": "user",
    # given by a scheduler's record, never a log (scheduler_evidence.py): cancelled by root or an
    # account other than the job's (an operator's choice), or by someone the dump does not name
    "admin_cancel": "infrastructure",
    "cancelled": "user",
    UNKNOWN: UNKNOWN,
    NO_FAILURE_REASON: "none",
}

# The taxonomy's categories in their order (of first appearance above), without `none`.
TAXONOMY = tuple(dict.fromkeys(c for r, c in CATEGORIES.items() if r != NO_FAILURE_REASON))
NO_CAUSE = "no cause in the log"
NO_LOG = "no log"
REPORT_ORDER = (*TAXONOMY, NO_CAUSE, NO_LOG)
COLORS = dict(zip(REPORT_ORDER, ("#8c564b", "#ff7f0e", "#1f77b4", "#7f7f7f", "#a5a5a5", "#c7c7c7"), strict=True))
