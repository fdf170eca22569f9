"""Slurm's own machine list: `scontrol show node -o` and `sinfo -N -h -o '%N|%G'`.

* `slurm_nodes` reads either. `scontrol show node -o` prints one `NodeName=gpu001 ...` line
  per node (`scontrol show node` without -o prints the same fields over several lines per
  node, a blank line between nodes: read too). A node's GPUs are `CfgTRES`'s `gres/gpu=N`
  where it is there, else the sum of its `Gres` entries named gpu (`gpu:8`,
  `gpu:a100:8(S:0-1)`, `gpu:a100:4,gpu:v100:4`, `gpu:tesla:2(IDX:0-1)`); CPUs `CPUTot`,
  memory `RealMemory` (MB), the GPU model the Gres type (several: comma-joined).
* `sinfo -N -h -o '%N|%G'` prints `node|gres` per node and partition (a node in two
  partitions is listed twice: kept once); `%N` may be a hostlist (`gpu[01-04]`).

They are the machine list (table machines, source slurm), as Philly's cluster_machine_list
is, stored by the same rule (ingest/machine_lists.py: a node a later list gives again with the
same values is unchanged, with others the later list holds). A line that names no node, or
whose GPU count cannot be read, is a reject.
"""

from __future__ import annotations

import re

import pyarrow as pa

from gpucluster_analysis.errors import ParseError
from gpucluster_analysis.ingest.base import FileFormat, LoadContext, LoadCounts
from gpucluster_analysis.ingest.files import first_lines
from gpucluster_analysis.ingest.lines import read_lines
from gpucluster_analysis.ingest.machine_lists import store_machine_rows
from gpucluster_analysis.ingest.slurm.hostlist import HostlistError, expand_hostlist

_FIELD = re.compile(r"(?<!\w)(\w++)=(\S*+)")  # tried at word starts only: linear in a line of one long word
_GPU_GRES = re.compile(r"^gpu(?::([^:(]+))?(?::(\d+))(?:\(.*\))?$", re.IGNORECASE)
_GPU_TRES = re.compile(r"(?:^|,)gres/gpu=(\d+)(?:,|$)")
_SINFO = re.compile(r"^([^\s|]+)\|([^\s|]*)$")  # exactly two fields: sacct and squeue lines have other shapes


def gpus_of(gres: str) -> tuple[int | None, str | None]:
    """(GPUs, model) from a Gres string; (0, None) for `(null)` or no gpu entry, None GPUs when
    an entry names gpus but no count."""
    if not gres or gres in ("(null)", "N/A"):
        return 0, None
    total, models, unreadable = 0, [], False
    # entries are comma-separated, but commas also sit inside (S:0,1) and (IDX:0,2)
    depth, part, parts = 0, "", []
    for ch in gres:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(part)
            part = ""
        else:
            part += ch
    parts.append(part)
    for entry in (p.strip() for p in parts):
        if not entry.lower().startswith("gpu"):
            continue
        m = _GPU_GRES.match(entry)
        if not m:
            unreadable = True
            continue
        total += int(m.group(2))
        if m.group(1) and not m.group(1).isdigit():
            models.append(m.group(1))
    if unreadable:
        return None, None
    return total, ",".join(dict.fromkeys(models)) or None


def _load(ctx: LoadContext) -> LoadCounts:
    nodes: dict[str, dict[str, object]] = {}
    rejects: list[tuple[int, str, str]] = []
    record: dict[str, str] = {}
    record_line = 0

    def finish() -> None:
        if record:
            _add_scontrol(record, record_line, nodes, rejects)
            record.clear()

    for number, text, _cut in read_lines(ctx.path):
        if not text:
            continue  # between records, and inside one (`scontrol show node` prints blank lines there)
        if text.startswith("NodeName="):
            finish()
            record_line = number
        if "=" in text and (record or text.startswith("NodeName=")):
            # `OS=Linux 6.8 #47 SMP ...`, `Reason=Node start up [root@...]`: words without `=` belong
            # to the value before them, which no GPU count depends on
            record.update(dict(_FIELD.findall(text)))
            continue
        sinfo = _SINFO.match(text)
        if sinfo:
            try:
                hosts = expand_hostlist(sinfo.group(1))
            except HostlistError as e:
                rejects.append((number, f"unreadable node list {sinfo.group(1)!r}: {e}", text))
                continue
            gpus, model = gpus_of(sinfo.group(2))
            if gpus is None:
                rejects.append((number, f"unreadable GRES {sinfo.group(2)!r}", text))
                continue
            for host in hosts:
                nodes.setdefault(
                    host, {"line": number, "gpus": gpus, "model": model, "cpus": None, "memory_mib": None, "text": text}
                )
            continue
        rejects.append((number, "neither a NodeName= record nor a `node|gres` line", text))
    finish()
    if not nodes and not rejects:
        raise ParseError(
            f"{ctx.path}: no node in it", hint="expected `scontrol show node -o` or `sinfo -N -h -o '%N|%G'`"
        )
    rows = sorted(nodes.items(), key=lambda kv: kv[1]["line"])  # type: ignore[arg-type, return-value]  # line: an int
    node_rows = pa.table(  # noqa: F841  -- DuckDB reads it by name
        {
            "line": pa.array([n["line"] for _, n in rows], type=pa.int64()),
            "text": pa.array([str(n["text"])[:500] for _, n in rows], type=pa.string()),
            "machine_id": [name for name, _ in rows],
            # as written (a count past any integer type is still named in its reject)
            "gpus_text": pa.array([str(n["gpus"]) for _, n in rows], type=pa.string()),
            "cpus": pa.array([n["cpus"] for _, n in rows], type=pa.float64()),
            "memory_mib": pa.array([n["memory_mib"] for _, n in rows], type=pa.float64()),
            "gpu_model": pa.array([n["model"] for _, n in rows], type=pa.string()),
        }
    )
    # a node listing more GPUs than any holds (bounds.py) is rejected, once per line (a sinfo
    # hostlist names several); a count past INTEGER is over it too
    bounds = ctx.options.bounds()
    ctx.con.execute(
        "CREATE OR REPLACE TEMP TABLE stage_nodes AS SELECT *, coalesce(TRY_CAST(gpus_text AS INTEGER)"
        " <= $max_gpus_per_node, false) AS sane FROM node_rows",
        {"max_gpus_per_node": bounds["max_gpus_per_node"]},
    )
    ctx.con.execute(
        "CREATE OR REPLACE TEMP TABLE stage_machine_rows AS SELECT machine_id,"
        " CAST(gpus_text AS INTEGER) AS listed_gpus, NULL::DOUBLE AS gpu_memory_gb, cpus, memory_mib, gpu_model"
        " FROM stage_nodes WHERE sane"
    )
    ctx.con.execute(
        "INSERT INTO rejects (file_id, line, reason, text)"
        " SELECT DISTINCT $file_id, line, gpus_text || ' GPUs on one node' || $gpu_bound, text FROM stage_nodes"
        " WHERE NOT sane ORDER BY line",
        {"file_id": ctx.file_id, "gpu_bound": bounds["gpu_bound"]},
    )
    ctx.con.execute("DROP TABLE stage_nodes")
    if rejects:
        bad = pa.table(  # noqa: F841  -- DuckDB reads it by name
            {
                "line": [r[0] for r in rejects],
                "reason": [r[1] for r in rejects],
                "text": [r[2][:500] for r in rejects],
            }
        )
        ctx.con.execute(
            "INSERT INTO rejects (file_id, line, reason, text) SELECT ?, line, reason, text FROM bad", [ctx.file_id]
        )
    rejected = ctx.con.execute("SELECT count(*) FROM rejects WHERE file_id = ?", [ctx.file_id]).fetchall()[0][0]
    return store_machine_rows(ctx, "slurm", LoadCounts(rows=0, rejects=int(rejected)))


def _add_scontrol(
    record: dict[str, str], line: int, nodes: dict[str, dict[str, object]], rejects: list[tuple[int, str, str]]
) -> None:
    name = record.get("NodeName")
    text = " ".join(f"{k}={v}" for k, v in record.items())
    if not name:
        rejects.append((line, "a node record without NodeName", text))
        return
    tres = _GPU_TRES.search(record.get("CfgTRES", ""))
    gpus, model = gpus_of(record.get("Gres", ""))
    if tres:
        gpus = int(tres.group(1))
    if gpus is None:
        rejects.append((line, f"unreadable Gres {record.get('Gres')!r} and no gres/gpu in CfgTRES", text))
        return

    def number(key: str) -> float | None:
        value = record.get(key, "")
        return float(value) if value.replace(".", "", 1).isdigit() else None

    nodes.setdefault(
        name,
        {
            "line": line,
            "gpus": gpus,
            "model": model,
            "cpus": number("CPUTot"),
            "memory_mib": number("RealMemory"),
            "text": text,
        },
    )


def _sniff(head: str) -> bool:
    lines = [ln.strip() for ln in first_lines(head, 20) if ln.strip()]
    if not lines:
        return False
    if lines[0].startswith("NodeName=") and ("Gres=" in head or "CfgTRES=" in head):
        return True
    # `node|gres`: every line of two fields, a GRES (`gpu:...`, `(null)`) in the second
    return all((m := _SINFO.match(ln)) and (m.group(2) == "(null)" or ":" in m.group(2)) for ln in lines[:5]) and any(
        "gpu:" in ln.lower() for ln in lines[:5]
    )


FORMATS = [
    FileFormat(
        name="slurm_nodes",
        source="slurm",
        description="Slurm's machine list: scontrol show node -o, or sinfo -N -h -o '%N|%G'",
        file_names=(),
        sniff=_sniff,
        load=_load,
    ),
]
