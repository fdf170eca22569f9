"""Slurm's limits as its accounting database prints them: `sacctmgr` associations and QOS.

* `slurm_assoc` reads `sacctmgr -P show assoc format=Account,User,GrpTRES` (`-p`, with a
  trailing `|`, too; other columns such as Cluster, Partition or QOS may stand beside them:
  the header says where each is). An account row (empty User) gives that account's GrpTRES:
  the VC's GPU quota; a user row gives the user's cap inside that account.
* `slurm_qos` reads `sacctmgr -P show qos format=Name,MaxTRESPU,GrpTRES` or the full default
  `sacctmgr -P show qos` (MaxTRESPU is also spelled MaxTRESPerUser). A QOS's MaxTRESPU caps
  each user's GPUs in that QOS (sacct's QOS column says which QOS a job ran under); its
  GrpTRES, all of its jobs together (stored, not used by the replay).

GPUs come from the TRES text (`cpu=4,gres/gpu=8,mem=100G`; typed `gres/gpu:a100=4` counts
too, and where both stand the untyped count is the total); a TRES without a GPU key stores
a row with no GPU limit. Rows go to the table `quotas` (sql/ingest/slurm_quotas.sql); a
row that cannot be read, or repeats an earlier row's holder, is a counted reject.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from gpucluster_analysis.errors import ParseError
from gpucluster_analysis.ingest.base import FileFormat, LoadContext, LoadCounts
from gpucluster_analysis.ingest.files import first_lines
from gpucluster_analysis.ingest.lines import read_lines
from gpucluster_analysis.ingest.slurm.values import parse_tres
from gpucluster_analysis.sqlfiles import run_script

SOURCE = "slurm"
_TEXT_LIMIT = 500
_MAX_TRES_PER_USER = ("maxtrespu", "maxtresperuser")
_STAGE_SCHEMA = pa.schema(
    [
        ("line", pa.int64()),
        ("kind", pa.string()),
        ("vc", pa.string()),
        ("user_name", pa.string()),
        ("qos", pa.string()),
        ("gpus", pa.float64()),
        ("tres", pa.string()),
        ("problem", pa.string()),
        ("text", pa.string()),
    ]
)


def gpu_limit(tres: str) -> int | None:
    """GPUs a TRES limit allows: `gres/gpu=N`, else the sum of typed `gres/gpu:<type>=N`;
    None when it names no GPU. ValueError (with the item) when a GPU item is unreadable."""
    found = parse_tres(tres.strip())
    if found is None or not found.keyed:
        return None
    return found.gpus


def _header(line: str) -> list[str] | None:
    """Lower-case column names of a `|`-separated sacctmgr header (the -p trailing `|` dropped)."""
    if "|" not in line:
        return None
    names = [n.strip().lower() for n in line.split("|")]
    if names and names[-1] == "":
        names.pop()
    return names if all(names) else None


def _head_columns(head: str) -> list[str] | None:
    lines = [ln.strip() for ln in first_lines(head, 5) if ln.strip()]
    return _header(lines[0].lstrip("\ufeff")) if lines else None


def _sniff_assoc(head: str) -> bool:
    names = _head_columns(head)
    if not names:
        return False
    return "account" in names and "grptres" in names and "jobid" not in names and "name" not in names


def _sniff_qos(head: str) -> bool:
    names = _head_columns(head)
    if not names:
        return False
    return names[0] == "name" and "account" not in names and any(n in names for n in (*_MAX_TRES_PER_USER, "grptres"))


def _fields(text: str, width: int) -> list[str] | str:
    """The row's fields, or why they do not fit the header."""
    fields = text.split("|")
    if len(fields) == width + 1 and fields[-1] == "":
        fields.pop()  # sacctmgr -p ends every line with the delimiter
    if len(fields) != width:
        return f"{len(fields)} fields where the header has {width}"
    return [f.strip() for f in fields]


def _limit_row(line: int, kind: str, tres: str, text: str, **holder: str | None) -> dict[str, object]:
    row: dict[str, object] = {"line": line, "kind": kind, "tres": tres or None, "text": text[:_TEXT_LIMIT], **holder}
    try:
        row["gpus"] = gpu_limit(tres)
    except ValueError as e:
        row["problem"] = f"unreadable TRES item {e.args[0]!r} (expected e.g. gres/gpu=8)"
    return row


def _assoc_rows(number: int, fields: list[str], at: dict[str, int], text: str) -> list[dict[str, object]]:
    account = fields[at["account"]]
    if not account:
        return [{"line": number, "problem": "no Account", "text": text[:_TEXT_LIMIT]}]
    user = fields[at["user"]] if "user" in at else ""
    kind = "user" if user else "account"
    return [_limit_row(number, kind, fields[at["grptres"]], text, vc=account, user_name=user or None)]


def _qos_rows(number: int, fields: list[str], at: dict[str, int], text: str) -> list[dict[str, object]]:
    name = fields[at["name"]]
    if not name:
        return [{"line": number, "problem": "no QOS Name", "text": text[:_TEXT_LIMIT]}]
    rows = []
    per_user = next((at[n] for n in _MAX_TRES_PER_USER if n in at), None)
    if per_user is not None:
        rows.append(_limit_row(number, "qos_user", fields[per_user], text, qos=name))
    if "grptres" in at:
        rows.append(_limit_row(number, "qos_group", fields[at["grptres"]], text, qos=name))
    return rows


def _parse(path: Path, what: str) -> list[dict[str, object]]:
    """Staged rows of a sacctmgr file (`what`: assoc or qos), rejects among them."""
    needed = ("account", "grptres") if what == "assoc" else ("name",)
    command = (
        "sacctmgr -P show assoc format=Account,User,GrpTRES"
        if what == "assoc"
        else "sacctmgr -P show qos format=Name,MaxTRESPU,GrpTRES"
    )
    at: dict[str, int] | None = None
    width = 0
    rows: list[dict[str, object]] = []
    for number, text, _cut in read_lines(path):
        if not text:
            continue
        if at is None:
            names = _header(text)
            missing = [n for n in needed if n not in (names or [])]
            if what == "qos" and names and not any(n in names for n in (*_MAX_TRES_PER_USER, "grptres")):
                missing.append("MaxTRESPU or GrpTRES")
            if names is None or missing:
                raise ParseError(
                    f"{path}:{number}: not a sacctmgr header with {', '.join(missing or needed)}",
                    hint=f"write it with a header, e.g. {command} (without -n)",
                )
            at = {n: i for i, n in reversed(list(enumerate(names)))}  # the first of a repeated name
            width = len(names)
            continue
        fields = _fields(text, width)
        if isinstance(fields, str):
            rows.append({"line": number, "problem": fields, "text": text[:_TEXT_LIMIT]})
            continue
        rows.extend(_assoc_rows(number, fields, at, text) if what == "assoc" else _qos_rows(number, fields, at, text))
    if at is None:
        raise ParseError(f"{path}: empty, no sacctmgr output in it", hint=f"write it with {command}")
    return rows


def _loader(what: str) -> Callable[[LoadContext], LoadCounts]:
    def load(ctx: LoadContext) -> LoadCounts:
        rows = _parse(ctx.path, what)
        staged = pa.Table.from_pylist(rows, schema=_STAGE_SCHEMA)  # noqa: F841  -- DuckDB reads it by name
        ctx.con.execute("CREATE OR REPLACE TEMP TABLE stage_quotas AS SELECT * FROM staged")
        run_script(
            ctx.con, "ingest", "slurm_quotas", {"file_id": ctx.file_id, "source": SOURCE}, on_statement=ctx.on_statement
        )
        return LoadCounts(rows=ctx.rows_in("quotas"), rejects=ctx.rows_in("rejects"))

    return load


FORMATS = [
    FileFormat(
        name="slurm_assoc",
        source=SOURCE,
        description="Slurm associations' GPU limits: sacctmgr -P show assoc format=Account,User,GrpTRES",
        file_names=("sacctmgr_assoc", "assoc"),
        sniff=_sniff_assoc,
        load=_loader("assoc"),
    ),
    FileFormat(
        name="slurm_qos",
        source=SOURCE,
        description="Slurm QOS GPU limits: sacctmgr -P show qos format=Name,MaxTRESPU,GrpTRES",
        file_names=("sacctmgr_qos", "qos"),
        sniff=_sniff_qos,
        load=_loader("qos"),
    ),
]
