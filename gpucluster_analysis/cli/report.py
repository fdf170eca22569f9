"""`gca report`: the HTML report and CSV tables."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from gpucluster_analysis.cli._options import DEFAULT_DB, DbOption
from gpucluster_analysis.cli._output import guarded, print_json, print_rows, stderr


@guarded
def report(
    db: DbOption = DEFAULT_DB,
    from_dir: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="Read a Parquet dataset directory (gca export, gca ingest --to) instead of a --db store.",
            file_okay=False,
            show_default=False,
        ),
    ] = None,
    engine: Annotated[
        str,
        typer.Option(
            "--engine",
            help="duckdb, or spark: the heavy queries (samples attributed to jobs) run as Spark SQL over the"
            " --from dataset (needs the [spark] extra and Java 17+).",
        ),
    ] = "duckdb",
    master: Annotated[
        str | None,
        typer.Option(
            "--master",
            help="With --engine spark: the Spark master URL (spark://host:7077, yarn, local[4]); default:"
            " PySpark's local mode, or what spark-submit sets.",
        ),
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Directory for index.html and the CSV tables.", file_okay=False)
    ] = Path("reports"),
    quotas: Annotated[
        Path | None,
        typer.Option(
            "--quotas",
            help="TOML file with a [quotas] table of vc = GPUs for the queueing replay (it wins); without it a"
            " Slurm store takes its accounts' limits from ingested sacctmgr output, and quotas are otherwise inferred"
            " (each VC's time-weighted 95th percentile of GPUs held). An unlisted VC has no quota.",
            dir_okay=False,
        ),
    ] = None,
    locality: Annotated[
        str,
        typer.Option(
            "--locality",
            help="Locality rule of the queueing replay: default (g GPUs on at most ceil(g/m) machines, m the"
            " largest machine), relaxed (any machines), or N (at most N machines).",
        ),
    ] = "default",
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the headline numbers as one JSON object (keys: docs/summary.md) instead of the text summary.",
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", help="Print nothing but errors: no progress, no summary (with --json, only the JSON)."),
    ] = False,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Only jobs whose queue start (where queue_delay_s counts from) is at or after this ISO 8601"
            " date or time (UTC unless it names a zone: 2024-05-01, 2024-05-01T08:00+02:00).",
        ),
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="Only jobs whose queue start is before this date or time (excluded).")
    ] = None,
    vc: Annotated[list[str] | None, typer.Option("--vc", help="Only jobs of this VC (repeat for several).")] = None,
    user: Annotated[
        list[str] | None, typer.Option("--user", help="Only jobs of this user (repeat for several).")
    ] = None,
    source: Annotated[
        list[str] | None,
        typer.Option("--source", help="Only jobs of this source: philly, slurm, helios, ... (repeat for several)."),
    ] = None,
    baseline_since: Annotated[
        str | None,
        typer.Option(
            "--baseline-since",
            help="Compare with a baseline period starting here (same --vc/--user/--source): the"
            " report opens with both periods' headline numbers, the change and its significance.",
        ),
    ] = None,
    baseline_until: Annotated[
        str | None, typer.Option("--baseline-until", help="End of the baseline period (excluded).")
    ] = None,
    raw_csv: Annotated[
        bool,
        typer.Option(
            "--raw-csv",
            help="Write the CSVs' text as it is. By default a text cell a spreadsheet would run as a formula"
            " (starting with = + - @, a tab or a line break) is written as '... (docs/jobs-csv.md).",
        ),
    ] = False,
) -> None:
    """Write the report: DIR/index.html (one offline file) and CSV tables such as jobs.csv,
    then print its headline numbers (jobs, GPU-hours, utilization, queueing, failures, speed) on stdout.

    Example: gca report --db philly.duckdb --out reports/philly --quotas quotas.toml
    From Parquet shards: gca report --from /shared/site-parquet --out reports/site
    With Spark: gca report --from /shared/site-parquet --engine spark --master spark://head:7077 --out reports/site
    A week of one VC: gca report --db philly.duckdb --out reports/week --since 2017-10-02 --until 2017-10-09 --vc 6214e9
    """
    from gpucluster_analysis.analyze.selection import Selection, parse_period
    from gpucluster_analysis.errors import InputError
    from gpucluster_analysis.replay.rules import load_quotas, parse_locality
    from gpucluster_analysis.report.build import build_report

    if from_dir is not None and db != DEFAULT_DB:
        raise InputError(f"--db {db} and --from {from_dir}: the report reads one of them", hint="pass --db or --from")
    rule = parse_locality(locality)
    quota_file = load_quotas(quotas) if quotas is not None else None
    start, end = parse_period(since, until)
    selection = Selection(start, end, vcs=tuple(vc or ()), users=tuple(user or ()), sources=tuple(source or ()))
    baseline = None
    if baseline_since or baseline_until:
        start, end = parse_period(baseline_since, baseline_until, baseline=True)
        baseline = replace(selection, since=start, until=end)
    from gpucluster_analysis.report import summary

    def log(msg: str) -> None:
        if not quiet:
            stderr.print(f"gca: {msg}", markup=False)

    written = build_report(
        db,
        out,
        log=log,
        quotas=quota_file,
        locality=rule,
        selection=selection,
        baseline=baseline,
        dataset=from_dir,
        engine=engine,
        master=master,
        raw_csv=raw_csv,
    )
    log(f"wrote {written.html} and {len(written.tables)} CSV tables in {written.out_dir}")
    if as_json:
        print_json(written.summary)
    elif not quiet:
        print_rows(f"gca report: {written.html}", summary.text_rows(written.summary), summary.text(written.summary))
