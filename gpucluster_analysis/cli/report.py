"""`gca report`: the HTML report and CSV tables."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpucluster_analysis.cli._options import DEFAULT_DB, DbOption
from gpucluster_analysis.cli._output import guarded, print_json, print_rows, stderr


@guarded
def report(
    db: DbOption = DEFAULT_DB,
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory for index.html and the CSV tables.", file_okay=False)] = Path("reports"),
    quotas: Annotated[Path | None, typer.Option(
        "--quotas", help="TOML file with a [quotas] table of vc = GPUs for the queueing replay (it wins); without it a"
        " Slurm store takes its accounts' limits from ingested sacctmgr output, and quotas are otherwise inferred"
        " (each VC's time-weighted 95th percentile of GPUs held). An unlisted VC has no quota.",
        dir_okay=False)] = None,
    locality: Annotated[str, typer.Option(
        "--locality", help="Locality rule of the queueing replay: default (g GPUs on at most ceil(g/m) machines, m the"
        " largest machine), relaxed (any machines), or N (at most N machines).")] = "default",
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the headline numbers as one JSON object (keys: docs/summary.md) instead of the text summary.")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", help="Print nothing but errors: no progress, no summary (with --json, only the JSON).")] = False,
) -> None:
    """Write the report: DIR/index.html (one offline file) and CSV tables such as jobs.csv,
    then print its headline numbers (jobs, GPU-hours, utilization, queueing, failures, speed) on stdout.

    Example: gca report --db philly.duckdb --out reports/philly --quotas quotas.toml
    """
    from gpucluster_analysis.replay.rules import load_quotas, parse_locality
    from gpucluster_analysis.report.build import build_report

    rule = parse_locality(locality)
    quota_file = load_quotas(quotas) if quotas is not None else None
    from gpucluster_analysis.report import summary

    def log(msg: str) -> None:
        if not quiet:
            stderr.print(f"gca: {msg}", markup=False)

    written = build_report(db, out, log=log, quotas=quota_file, locality=rule)
    log(f"wrote {written.html} and {len(written.tables)} CSV tables in {written.out_dir}")
    if as_json:
        print_json(written.summary)
    elif not quiet:
        print_rows(f"gca report: {written.html}", summary.text_rows(written.summary), summary.text(written.summary))
