"""`gca report`: the HTML report and CSV tables."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpucluster_analysis.cli._options import DEFAULT_DB, DbOption
from gpucluster_analysis.cli._output import guarded, stderr


@guarded
def report(
    db: DbOption = DEFAULT_DB,
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory for index.html and the CSV tables.", file_okay=False)] = Path("reports"),
) -> None:
    """Write the report: DIR/index.html (one offline file) and CSV tables such as jobs.csv.

    Example: gca report --db philly.duckdb --out reports/philly
    """
    from gpucluster_analysis.report.build import build_report

    written = build_report(db, out, log=lambda msg: stderr.print(f"gca: {msg}", markup=False))
    stderr.print(f"gca: wrote {written.html} and {len(written.tables)} CSV tables in {written.out_dir}", markup=False)
