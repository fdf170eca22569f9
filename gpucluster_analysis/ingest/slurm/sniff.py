"""Recognizing Slurm's text output from the head of a file: sacct dumps (and Slurm's JSON, to
refuse it clearly) and `scontrol show job -d` snapshots."""

from __future__ import annotations

import re

from gpucluster_analysis.ingest.files import first_lines
from gpucluster_analysis.ingest.slurm.layout import (
    PLACING_COLUMNS,
    PROMPT,
    RULE,
    SACCT_FORMAT,
    TOOL_MESSAGES,
    delimiters_in,
    header_fields,
)
from gpucluster_analysis.ingest.slurm.values import JOB_ID, KNOWN_STATES, parse_state

# --- recognizing the files -----------------------------------------------------------


def is_slurm_json(head: str) -> bool:
    """sacct --json / scontrol show job --json (Slurm 21.08+): recognized so it can be refused clearly."""
    text = head.lstrip()
    return (
        text.startswith("{")
        and '"meta"' in text
        and any(mark in text for mark in ('"data_parser"', "openapi/", "Slurm OpenAPI", '"sacct"', '"scontrol"'))
    )


def sniff_sacct(head: str) -> bool:
    if is_slurm_json(head):
        return True
    lines = _content_lines(head)
    if not lines:
        return False
    header = header_fields(lines[0])
    if header is not None:
        shaped = header[1] is not None or (len(lines) > 1 and bool(RULE.match(lines[1])))
        return shaped and _missing_from_header(header[0]) is None
    # Headerless -P/-p output (or another --delimiter's): a job id and a state word among the fields.
    for delimiter in delimiters_in(lines[0]):
        fields = [f.strip() for f in lines[0].split(delimiter)]
        if (
            len(fields) >= 2
            and any(JOB_ID.match(f) for f in fields)
            and any(parse_state(f)[0] in KNOWN_STATES for f in fields)
        ):
            return True
    return False


def _content_lines(head: str) -> list[str]:
    """The head's first lines but sacct's own messages (2>&1) and a pasted prompt, which may come
    before the header."""
    return [
        ln for ln in first_lines(head, 8) if ln.strip() and not ln.startswith(TOOL_MESSAGES) and not PROMPT.match(ln)
    ]


def _missing_from_header(fields: list[str]) -> str | None:
    """What a header with a JobID column lacks to be a sacct dump gca can use, or None."""
    names = {f.lower() for f in fields}
    if "state" not in names:
        return "a JobID column but no State"
    if not names & PLACING_COLUMNS:
        return "no time, GPU, node or usage column"
    return None


def near_miss_sacct(head: str) -> str | None:
    """Why a table with a JobID column is no sacct dump gca reads (other tools' TSVs, plain
    `sacct -a`), with the sacct line that gives one; None for anything else."""
    lines = _content_lines(head)
    header = header_fields(lines[0]) if lines else None
    if header is None:
        return None
    fields = header[0]
    missing = _missing_from_header(fields)
    if missing is None:
        return None
    return (
        f"columns {', '.join(fields)}: {missing}, so not a sacct dump gca can use"
        f" (dump one with sacct -a -D -P --format {SACCT_FORMAT})"
    )


def sniff_scontrol(head: str) -> bool:
    # a pasted prompt (`$ scontrol show job -d`) may come first
    lines = [ln for ln in first_lines(head, 4) if ln.strip() and not PROMPT.match(ln)]
    return bool(lines) and bool(re.match(r"\s*JobId=\d+(\s|$)", lines[0]))
