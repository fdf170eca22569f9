"""Machine lists (Philly's cluster_machine_list, Slurm's scontrol/sinfo nodes) stored by one
rule (sql/ingest/machine_list_store.sql): a machine a later list of the same source gives again
with the same values is unchanged; with other values the later list holds, and says so."""

from __future__ import annotations

import dataclasses

from gpucluster_analysis.ingest.base import LoadContext, LoadCounts
from gpucluster_analysis.sqlfiles import run_script


def store_machine_rows(ctx: LoadContext, source: str, counts: LoadCounts) -> LoadCounts:
    """Store the file's rows staged in stage_machine_rows; `counts` with the rows this file
    stored and the machines it superseded or gave unchanged."""
    run_script(
        ctx.con,
        "ingest",
        "machine_list_store",
        {"file_id": ctx.file_id, "source": source},
        on_statement=ctx.on_statement,
    )
    superseded, unchanged = ctx.con.execute(
        "SELECT count(*) FILTER (WHERE had AND NOT same), count(*) FILTER (WHERE same) FROM stage_machine_choice"
    ).fetchall()[0]
    ctx.con.execute("DROP TABLE IF EXISTS stage_machine_choice")
    ctx.con.execute("DROP TABLE IF EXISTS stage_machine_rows")
    return dataclasses.replace(
        counts, rows=ctx.rows_in("machines"), superseded=int(superseded), unchanged=int(unchanged)
    )
