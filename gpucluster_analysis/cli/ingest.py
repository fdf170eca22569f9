"""`gca ingest`: load raw logs into the store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpucluster_analysis.bounds import DEFAULT_MAX_GPUS_PER_NODE
from gpucluster_analysis.cli._options import DEFAULT_DB, DbOption, OverwriteOption, ShardOption
from gpucluster_analysis.cli._output import guarded, stderr
from gpucluster_analysis.cli._progress import SKIPPED_SHOWN, IngestProgress, PullProgress
from gpucluster_analysis.errors import ExitCode, GcaError, InputError

if TYPE_CHECKING:  # heavy: imported inside the command
    import duckdb

    from gpucluster_analysis.ingest import IngestOptions
    from gpucluster_analysis.ingest.gpu.prometheus_plan import PullPlan

# Formats whose files come by the thousand: the summary gives them one row, not one per file.
_GROUPED_FORMATS = ("job_log",)


@guarded
def ingest(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Files or directories (walked) to ingest, or a Prometheus server to pull from: prometheus+http://HOST:9090.",
            show_default=False,
        ),
    ],
    db: DbOption = DEFAULT_DB,
    format_name: Annotated[
        str | None,
        typer.Option("--format", help="Read every file as this format instead of detecting it (see below)."),
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Reload files ingested before, replacing what they contributed.")
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Fail a file (store nothing from it) if any row is rejected.")
    ] = False,
    tz: Annotated[
        str | None,
        typer.Option(
            "--tz",
            help="Zone of zone-less times in the input (default: the format's own, e.g. America/Los_Angeles for "
            "Philly).",
        ),
    ] = None,
    log_pattern: Annotated[
        str | None,
        typer.Option(
            "--log-pattern",
            help="Where job logs name their job: a path template such as '{job_id}/{attempt}/stderr.txt' "
            "({stream}, * also allowed).",
        ),
    ] = None,
    signatures: Annotated[
        list[Path] | None,
        typer.Option(
            "--signatures",
            help="A TOML file of extra failure signatures for classifying job logs; one with a shipped id "
            "replaces it. Repeatable.",
        ),
    ] = None,
    columns: Annotated[
        str | None,
        typer.Option(
            "--columns",
            help="Field order of headerless sacct output (sacct -n), as given to sacct --format: "
            "JobID,JobName,State,...; "
            "for nvidia-smi --format=csv,noheader the --query-gpu list (timestamp,index,utilization.gpu,...)",
        ),
    ] = None,
    delimiter: Annotated[
        str | None,
        typer.Option(
            "--delimiter",
            help="sacct output's delimiter, as given to sacct --delimiter (default: the header's, or for"
            " headerless output the one that splits its rows into the --columns named).",
        ),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            help="Machine of nvidia-smi/DCGM files that do not name it (default: from the file name, e.g. node01.csv).",
        ),
    ] = None,
    time: Annotated[
        str | None,
        typer.Option(
            "--time",
            help="When a timeless DCGM scrape was taken, or a dmon/dcgmi dmon/--query-gpu log without times "
            "started: ISO 8601 (site zone unless Z/offset) or epoch seconds.",
        ),
    ] = None,
    interval: Annotated[
        float | None,
        typer.Option(
            "--interval",
            help="Seconds between the samples of a dmon, dcgmi dmon or --query-gpu log without times (dmon -d, "
            "dcgmi dmon -d / 1000, nvidia-smi -l).",
            min=0.001,
        ),
    ] = None,
    epoch: Annotated[
        str | None,
        typer.Option(
            "--epoch",
            help="When the relative seconds of an Alibaba pod list count from: ISO 8601, UTC unless Z/offset "
            "(default 1970-01-01T00:00:00Z, so durations are exact and dates mean nothing).",
        ),
    ] = None,
    max_gpus_per_node: Annotated[
        int,
        typer.Option(
            "--max-gpus-per-node",
            help="The most GPUs one node holds: a row naming more on a node (a GPU count"
            " over this times the job's nodes, a GPU index at or past it) is rejected as absurd.",
        ),
    ] = DEFAULT_MAX_GPUS_PER_NODE,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", help="Prometheus pull: the first sample time, ISO 8601 (UTC unless Z/offset) or epoch seconds."
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option("--until", help="Prometheus pull: pull sample times before this one (default: now)."),
    ] = None,
    step: Annotated[
        str | None,
        typer.Option(
            "--step",
            help="Prometheus pull: seconds between sample times, e.g. 30s, 1m, 15 (default: the scrape interval the"
            " server's samples show, so that each scrape is pulled once; 30s where they show none).",
        ),
    ] = None,
    match: Annotated[
        str | None,
        typer.Option(
            "--match",
            help="Prometheus pull: a regular expression for the metric names to pull, e.g. 'DCGM_FI_.*' "
            "(default: the DCGM metrics gca reads).",
        ),
    ] = None,
    to: Annotated[
        Path | None,
        typer.Option(
            "--to",
            help="Write what is ingested as one shard of this Parquet dataset directory instead of into a"
            " --db store (through a temporary store); many processes can each write their own shard.",
            file_okay=False,
        ),
    ] = None,
    shard: ShardOption = None,
    overwrite: OverwriteOption = False,
    header: Annotated[
        list[str] | None,
        typer.Option(
            "--header",
            help="Prometheus pull: an HTTP header to send, 'Name: value' (e.g. 'Authorization: Bearer TOKEN'); "
            "repeatable; never stored or shown.",
        ),
    ] = None,
) -> None:
    """Read raw cluster logs into the store.

    The format of each file is detected from its content (and name); --format
    forces one. Re-ingesting a file with the same content does nothing, and
    telemetry samples already stored (a .gz copy, logs that overlap) are not
    stored again: the summary counts them as duplicates.

    Philly: philly_job_log, philly_gpu_util, philly_cpu_util, philly_mem_util,
    philly_machine_list.

    Slurm: slurm_sacct (sacct -P, -p or fixed-width output; --columns for a dump
    without header), slurm_scontrol (scontrol show job -d: GPU indices per job) and
    slurm_squeue (squeue -h -t PD -o '%i|%r' snapshots under '# <ISO time>' lines:
    pending reasons). Their times are read in the machine's zone unless --tz says
    otherwise.

    GPU telemetry: nvsmi_csv (nvidia-smi --query-gpu --format=csv), nvsmi_dmon,
    nvsmi_xml (nvidia-smi -q -x), dcgm_prom (dcgm-exporter /metrics scrapes),
    dcgm_query_range (Prometheus API JSON) and dcgmi_dmon (dcgmi dmon -e ... text:
    --time, and --interval unless the dcgmi dmon command line is pasted above it). The host
    is --host or the file name (node01.csv, nvidia-smi-node01.log); nvidia-smi times
    are in the machine's zone unless --tz says otherwise.

    Other public traces: helios (Helios cluster_log.csv), acme (AcmeTrace
    trace_*.csv), alibaba_gpu2023 (Alibaba openb_pod_list_*.csv),
    alibaba_node_list (Alibaba openb_node_list_*.csv: the cluster's machines).

    Job logs (job_log; stdout/stderr) are recognized by their path:
    logs/<job_id>/attempt_<k>/stderr.log (the layout gca synth writes),
    slurm-<jobid>.out, or --log-pattern; each is classified into a failure
    reason as it is stored.

    Prometheus: prometheus+http://HOST:9090 (or prometheus+https://) pulls the
    DCGM metrics gca reads from a live server's query_range API, --since to
    --until at --step, in chunks; a pull that stopped resumes when run again, and
    a range pulled before is not pulled twice.

    Absurd values are rejected as malformed rows are: a time outside the years gca
    reads, an end before its start, more GPUs on a node than --max-gpus-per-node, a job
    on more nodes than any cluster has (docs/schema.md, "Sanity windows and bounds").

    Parquet shards: --to DIR writes the files as one shard of a dataset (default name:
    UTC time, host and process id; --shard to choose), read by gca report --from DIR.
    Each job (scheduler record) and each file must be in one shard only.

    Example: gca ingest ../philly-traces/trace-data/ --db philly.duckdb
    One node's day as a shard: gca ingest node17/2024-05-01/ --to /shared/site-parquet --shard node17-2024-05-01
    """
    from gpucluster_analysis.ingest import IngestOptions
    from gpucluster_analysis.ingest.gpu.prometheus_plan import looks_like_url, plan_pulls
    from gpucluster_analysis.timezones import check_zone

    urls = [p for p in paths if looks_like_url(p)]
    files = [Path(p) for p in paths if not looks_like_url(p)]
    pulls = plan_pulls(urls, since=since, until=until, step=step, match=match, headers=header or [])
    if tz:
        check_zone(tz)
    if log_pattern:
        from gpucluster_analysis.ingest.logs.joblogs import compile_log_pattern

        compile_log_pattern(log_pattern)  # a bad template fails before anything is read
    if signatures:
        from gpucluster_analysis.classify import load_signatures

        load_signatures(list(signatures))  # a broken file fails before anything is stored
    if time:
        from gpucluster_analysis.ingest.gpu.telemetry import parse_time_option
        from gpucluster_analysis.timezones import local_zone

        parse_time_option(time, tz or local_zone())  # a bad --time fails before anything is read
    if epoch:
        from gpucluster_analysis.ingest.traces.public_traces import parse_epoch

        parse_epoch(epoch)  # a bad --epoch fails before anything is read
    options = IngestOptions(
        zone=tz,
        replace=replace,
        strict=strict,
        log_pattern=log_pattern,
        signatures=tuple(signatures or ()),
        columns=tuple(c for c in columns.split(",") if c.strip()) if columns else None,
        delimiter=delimiter or None,
        host=host,
        time=time,
        interval_s=interval,
        epoch=epoch,
        max_gpus_per_node=max_gpus_per_node,
    )
    target = None
    if to is not None:
        from gpucluster_analysis.dataset.write import ShardTarget

        if db != DEFAULT_DB:
            raise InputError(f"--db {db} and --to {to}: ingest writes one of them", hint="pass --db or --to")
        target = ShardTarget(to, shard, overwrite)  # refuses a bad target before anything is read
        db = target.store
    elif shard is not None or overwrite:
        raise InputError("--shard and --overwrite name a shard of a dataset", hint="pass --to DIR with them")
    try:
        _ingest(files, pulls, db, options, format_name, orphans_matter=target is None, keep_results=target is None)
        if target is not None:
            written = target.publish()
            rows = sum(t["rows"] for t in written.shard.tables.values())
            stderr.print(
                f"gca: wrote shard {written.shard.name} of {written.root}: {rows:,} rows in {written.files} files",
                markup=False,
            )
    finally:
        if target is not None:
            target.discard()


def _ingest(
    files: list[Path],
    pulls: list[PullPlan],
    db: Path,
    options: IngestOptions,
    format_name: str | None,
    orphans_matter: bool,
    keep_results: bool = True,
) -> None:
    from gpucluster_analysis.db import open_store
    from gpucluster_analysis.ingest import ingest_paths
    from gpucluster_analysis.ingest.load import logs_without_jobs

    listener = IngestProgress()
    reports = []
    with open_store(db) as con:
        if files:
            with listener:
                reports = ingest_paths(con, files, options, format_name=format_name, listener=listener)
            orphans, examples = logs_without_jobs(con) if orphans_matter else (0, [])
            _print_summary(reports, db)
            if orphans:
                stderr.print(
                    f"gca: warning: job logs name {orphans:,} jobs that are not in the store (e.g. "
                    f"{', '.join(examples)}); "
                    "ingest their scheduler log, or check --log-pattern",
                    markup=False,
                )
        for pull in pulls:
            _pull(con, pull, options)
        if keep_results:  # a shard written with --to holds no kept results (dataset/layout.py)
            _keep(con)
    failed = [r for r in reports if r.status == "failed"]
    if failed:
        for r in failed:
            stderr.print(f"gca: error: {r.message}", markup=False)
        # with --to, no shard is written: a failed task of a job array leaves nothing behind
        raise typer.Exit(
            code=int(max(r.error.exit_code if isinstance(r.error, GcaError) else ExitCode.DATA for r in failed))
        )


def _keep(con: duckdb.DuckDBPyConnection) -> None:
    """Keep the report's heaviest results for the store as it now is (analyze/kept.py)."""
    from gpucluster_analysis.analyze.kept import keep

    def log(msg: str) -> None:
        stderr.print(f"gca: {msg}", markup=False)

    seconds = keep(con, log)
    if seconds is not None:
        log(f"kept the report's sample attribution for the store as it now is: {seconds:.1f} s")


def _pull(con: duckdb.DuckDBPyConnection, pull: PullPlan, options: IngestOptions) -> None:
    import time as clock

    from gpucluster_analysis.errors import GcaError
    from gpucluster_analysis.ingest.gpu.prometheus import iso
    from gpucluster_analysis.ingest.gpu.prometheus import pull as pull_from

    listener = PullProgress(pull.source.server)
    until_ms = pull.until_ms if pull.until_ms is not None else int(clock.time() * 1000)
    with listener:
        try:
            report = pull_from(
                con,
                pull.source,
                since_ms=pull.since_ms,
                until_ms=until_ms,
                step_ms=pull.step_ms,
                match=pull.match,
                listener=listener,
                options=options,
            )
        except KeyboardInterrupt:
            listener.stop()
            if listener.stored:
                stderr.print(
                    f"gca: {listener.server}: kept the {listener.stored:,} chunks stored up to {iso(listener.last_ms)};"
                    " run the same command again to resume",
                    markup=False,
                )
            raise
        except GcaError:
            listener.stop()
            raise
    if pull.step_ms is None:
        step = f"{report.step_ms / 1000:g} s"
        stderr.print(
            f"gca: {report.server}: the samples are {step} apart: pulled at that step"
            if report.step_found
            else f"gca: {report.server}: too few samples to tell their interval: pulled every {step} (--step sets it)",
            markup=False,
        )
    for start, end, chunks in report.covered:
        stderr.print(
            f"gca: {report.server}: {iso(start)} to {iso(end)} was pulled before ({chunks:,} "
            f"chunk{'s' if chunks > 1 else ''}); skipped",
            markup=False,
        )
    if not report.chunks:
        stderr.print(f"gca: {report.server}: nothing new to pull", markup=False)
        return
    rejects = f", {report.rejects:,} rejected (see the rejects table)" if report.rejects else ""
    if report.duplicates:
        rejects += f", {report.duplicates:,} GPU samples stored before from another file (not stored again)"
    stderr.print(
        f"gca: {report.server}: stored {len(report.chunks):,} chunk{'s' if len(report.chunks) > 1 else ''} "
        f"from {iso(report.chunks[0].start_ms)} to "
        f"{iso(report.chunks[-1].end_ms)}: {sum(c.samples for c in report.chunks):,} values of "
        f"{max(c.series for c in report.chunks):,} series, {report.rows:,} GPU samples{rejects}",
        markup=False,
    )


def _short(path: Path) -> str:
    # The summary is for reading: the file and its folder say enough; messages give full paths.
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name


def _print_summary(reports: list, db: Path) -> None:
    from collections import Counter

    from rich.table import Table

    table = Table(title=f"ingested into {db}", title_justify="left", show_edge=False)
    for column, justify in (
        ("file", "left"),
        ("format", "left"),
        ("status", "left"),
        ("rows", "right"),
        ("rejects", "right"),
        ("seconds", "right"),
    ):
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]  # justify: one of rich's literals
    single = [r for r in reports if r.format not in _GROUPED_FORMATS or r.status == "failed"]
    for r in single:
        table.add_row(_short(r.path), r.format or "", r.status, f"{r.rows:,}", f"{r.rejects:,}", f"{r.seconds:.1f}")
    for fmt in _GROUPED_FORMATS:
        group = [r for r in reports if r.format == fmt and r.status != "failed"]
        if group:
            statuses = ", ".join(f"{n:,} {status}" for status, n in Counter(r.status for r in group).most_common())
            table.add_row(
                f"{len(group):,} files",
                fmt,
                statuses,
                f"{sum(r.rows for r in group):,}",
                f"{sum(r.rejects for r in group):,}",
                f"{sum(r.seconds for r in group):.1f}",
            )
    stderr.print(table)
    unchanged = [r for r in reports if r.status == "unchanged"]
    for r in unchanged[:SKIPPED_SHOWN]:
        stderr.print(f"gca: {r.path}: {r.message}", markup=False)
    if len(unchanged) > SKIPPED_SHOWN:
        stderr.print(
            f"gca: ... and {len(unchanged) - SKIPPED_SHOWN:,} more files ingested before with the same content",
            markup=False,
        )
    for r in reports:
        for warning in r.warnings:
            stderr.print(f"gca: warning: {warning}", markup=False)
        if r.superseded or r.unchanged:
            # overlapping dumps (nightly sacct, squeue logs): what was met again is no reject
            stderr.print(
                f"gca: {r.path}: {r.superseded:,} records superseded by a later one (the later kept),"
                f" {r.unchanged:,} unchanged (already stored)",
                markup=False,
            )
        if r.duplicates:
            # re-encoded or overlapping telemetry: the samples are stored once (ingest/samples.py)
            differing = (
                f"; {r.differing:,} of them with other values, of which the row of the file first by"
                " content hash is kept"
                if r.differing
                else ""
            )
            stderr.print(
                f"gca: {r.path}: {r.duplicates:,} samples already stored from another file, not stored"
                f" again{differing}",
                markup=False,
            )
        for line, reason in r.reject_samples:
            where = f"{r.path}:{line}" if line else str(r.path)
            stderr.print(f"gca: rejected {where}: {reason}", markup=False)
        if r.rejects > len(r.reject_samples):
            stderr.print(
                f"gca: ... {r.rejects - len(r.reject_samples)} more rejects from {r.path.name} in the rejects table",
                markup=False,
            )
