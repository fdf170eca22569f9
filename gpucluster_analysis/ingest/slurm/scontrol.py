"""Slurm `scontrol show job -d` snapshots (one or many jobs) into gpu_bindings: the GPU indices
(`GRES=gpu:a100:4(IDX:0-3)`) each job holds on each node."""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa

from gpucluster_analysis.bounds import DEFAULT_MAX_GPUS_PER_NODE, over_gpu_bound
from gpucluster_analysis.errors import ParseError
from gpucluster_analysis.ingest.base import FileFormat, LoadContext, LoadCounts
from gpucluster_analysis.ingest.slurm.hostlist import HostlistError, expand_hostlist
from gpucluster_analysis.ingest.slurm.sniff import sniff_scontrol
from gpucluster_analysis.ingest.slurm.text import NUL, text_lines
from gpucluster_analysis.ingest.slurm.values import TEXT_LIMIT, split_gres

SOURCE = "slurm"
BATCH_ROWS = 10_000  # bindings handed to DuckDB at once

# --- scontrol show job -d ------------------------------------------------------------

_KEY_VALUE = re.compile(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_:/]*)=(\S*(?:\s+(?![A-Za-z_][A-Za-z0-9_:/]*=)\S+)*)")
_IDX = re.compile(r"IDX:([^()\s:]*+)\)")  # no ":" inside: a scan ends at the next "IDX:", linear in a hostile line
# A node group of `scontrol show job -d`: Nodes=gpu[01-02] CPU_IDs=0-31 Mem=256000 GRES=gpu:a100:4(IDX:0-3)
_NODE_DETAIL = re.compile(r"(?:^|\s)Nodes=(\S+)\s+CPU_IDs=\S+(?:\s+Mem=\S+)?(?:\s+GRES(?:_IDX)?=(\S*))?")


def _pairs(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _KEY_VALUE.finditer(text)}


class IndexPastBound(ValueError):
    """A GPU index at or past the bound of GPUs per node (bounds.py): args (index, bound)."""


def parse_gpu_indices(gres: str, max_gpus_per_node: int = DEFAULT_MAX_GPUS_PER_NODE) -> list[int]:
    """GPU indices of a per-node GRES value: `gpu:a100:4(IDX:0-3)`, `gpu(IDX:0,2)`, `gpu:(null):0(IDX:N/A)`.
    IndexPastBound for an index at or past `max_gpus_per_node` (before a range is expanded:
    `IDX:0-99999999` is no hundred million GPUs), ValueError for an unreadable list."""
    indices: list[int] = []
    for entry in split_gres(gres):
        if not (entry == "gpu" or entry.startswith(("gpu:", "gpu("))):
            continue
        match = _IDX.search(entry)
        if not match or match.group(1).strip().upper() in ("N/A", ""):
            continue
        for part in match.group(1).split(","):
            low, _, high = part.strip().partition("-")
            if not low.isdigit() or (high and not high.isdigit()):
                raise ValueError(part)
            if int(high or low) >= max_gpus_per_node:
                raise IndexPastBound(int(high or low), max_gpus_per_node)
            indices.extend(range(int(low), int(high or low) + 1))
    return sorted(set(indices))


def _scontrol_job_id(pairs: dict[str, str]) -> str | None:
    """The job id as sacct writes it: array tasks `123_4`, het components under their leader."""
    het_leader = pairs.get("HetJobId")
    if het_leader and het_leader.isdigit():
        return het_leader
    array_job, task = pairs.get("ArrayJobId"), pairs.get("ArrayTaskId")
    if array_job and array_job.isdigit() and task:
        return f"{array_job}_{task}" if task.isdigit() else f"{array_job}_[{task}]"
    job = pairs.get("JobId")
    return job if job and job.isdigit() else None


def _load_scontrol(ctx: LoadContext) -> LoadCounts:
    bindings: dict[str, list[Any]] = {"job_id": [], "machine_id": [], "gpu_index": []}
    rejects: list[tuple[int, str, str]] = []
    job_id: str | None = None
    job_line = 0
    running_line = 0  # a RUNNING job's line: it has nodes, so -d output shows them
    details = 0
    for line_no, text in text_lines(ctx.path, control=NUL):
        stripped = text.strip()
        if not running_line and re.search(r"(?:^|\s)JobState=RUNNING\b", stripped):
            running_line = line_no
        if stripped.startswith("JobId="):
            job_line = line_no
            pairs = _pairs(stripped)
            job_id = _scontrol_job_id(pairs)
            if job_id is None:
                rejects.append((line_no, f"unreadable JobId {pairs.get('JobId', '')!r}", text))
        # One line per node group, or inline with everything else under `scontrol -o`.
        for detail in _NODE_DETAIL.finditer(stripped):
            details += 1
            if job_id is None:
                reason = "Nodes= outside a job" if job_line == 0 else f"Nodes= of the unreadable job at line {job_line}"
                rejects.append((line_no, reason, text))
                continue
            try:
                hosts = expand_hostlist(detail.group(1))
                indices = parse_gpu_indices(detail.group(2) or "", ctx.options.max_gpus_per_node)
            except IndexPastBound as e:
                rejects.append((line_no, f"GPU index {e.args[0]}{over_gpu_bound(e.args[1])}", text))
                continue
            except (HostlistError, ValueError) as e:
                rejects.append((line_no, f"unreadable Nodes or GRES: {e}", text))
                continue
            for host in hosts:
                for index in indices:
                    bindings["job_id"].append(job_id)
                    bindings["machine_id"].append(host)
                    bindings["gpu_index"].append(index)
        if len(bindings["job_id"]) >= BATCH_ROWS:
            _insert_bindings(ctx, bindings)
            bindings = {k: [] for k in bindings}
    _insert_bindings(ctx, bindings)
    if running_line and not details:
        raise ParseError(
            f"{ctx.path}:{running_line}: a running job without its per-node lines (Nodes=... CPU_IDs=... GRES=...):"
            " this is `scontrol show job` without -d, which does not say which GPUs a job holds",
            hint="save `scontrol show job -d` (or -d -o) instead",
        )
    if rejects:
        ctx.con.executemany(
            "INSERT INTO rejects (file_id, line, reason, text) VALUES (?, ?, ?, ?)",
            [(ctx.file_id, line, reason, text[:TEXT_LIMIT]) for line, reason, text in rejects],
        )
    return LoadCounts(rows=ctx.rows_in("gpu_bindings"), rejects=ctx.rows_in("rejects"))


def _insert_bindings(ctx: LoadContext, bindings: dict[str, list[Any]]) -> None:
    if not bindings["job_id"]:
        return
    batch = pa.Table.from_pydict(  # noqa: F841  -- DuckDB reads it by name
        bindings,
        schema=pa.schema([("job_id", pa.string()), ("machine_id", pa.string()), ("gpu_index", pa.int16())]),
    )
    # The same job in several snapshots of one file binds the same GPUs once.
    ctx.con.execute(
        "INSERT INTO gpu_bindings (source, job_id, attempt_ref, machine_id, gpu_index, origin, file_id) "
        "SELECT DISTINCT ?, b.job_id, NULL, b.machine_id, b.gpu_index, 'scontrol', ? FROM batch b "
        "WHERE NOT EXISTS (SELECT 1 FROM gpu_bindings g WHERE g.file_id = ? AND g.origin = 'scontrol' "
        "AND g.job_id = b.job_id AND g.machine_id = b.machine_id AND g.gpu_index = b.gpu_index)",
        [SOURCE, ctx.file_id, ctx.file_id],
    ).fetchall()


FORMATS = [
    FileFormat(
        name="slurm_scontrol",
        source=SOURCE,
        description="Slurm `scontrol show job -d` text: GPU indices per job and node (GRES ... IDX)",
        file_names=("scontrol",),
        sniff=sniff_scontrol,
        load=_load_scontrol,
    ),
]
