"""How the GPU tools spell "no value", defined here once.

nvidia-smi, dmon, DCGM and the Prometheus answers print a missing value as an empty field,
as bracketed text that says why (`[N/A]`, `[Not Supported]`, `[Unknown Error]`,
`[Insufficient Permissions]`, `[Requested functionality has been deprecated]`, any other)
or as one of MISSING_WORDS in any case (`N/A`, dmon's `-`, ...), blanks around allowed.
The SQL macro gpu_missing() (sql/ingest/nvsmi_macros.sql) gets the words as the bound
parameter $missing_words (`sql_params`); the fast readers (nvsmi_fast.py, dcgm_fast.py)
use `is_missing` and `MISSING_PATTERN`, so that both ways call the same text missing.
"""

from __future__ import annotations

import re

import polars as pl

MISSING_WORDS = ("n/a", "-", "unknown", "none", "not supported", "not available")
# Plain text only (lower case, blanks, / and -), so that a word stands in a regex as it is.
assert all(re.fullmatch(r"[a-z /-]+", w) for w in MISSING_WORDS)
# A missing value as a regex (in a field of a CSV line: brackets hold no comma); empty matches.
MISSING_PATTERN = r"\[[^,]*\]|(?i:" + "|".join(MISSING_WORDS) + ")|"


def sql_params() -> dict[str, object]:
    """The words as nvsmi_macros.sql's parameter $missing_words."""
    return {"missing_words": list(MISSING_WORDS)}


def is_missing(value: pl.Expr) -> pl.Expr:
    """Whether a text value is missing: null, blank, bracketed, or one of MISSING_WORDS."""
    trimmed = value.str.strip_chars(" ")
    return (
        value.is_null()
        | (trimmed == "")
        | trimmed.str.starts_with("[")
        | trimmed.str.to_lowercase().is_in(list(MISSING_WORDS))
    )
