"""`gca export`: the store's canonical tables as a Parquet dataset, for Spark or a merge of shards."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpucluster_analysis.cli._options import DEFAULT_DB, DbOption, OverwriteOption, ShardOption
from gpucluster_analysis.cli._output import guarded, stderr


@guarded
def export(
    to: Annotated[
        Path,
        typer.Option(
            "--to",
            help="The dataset directory: new, empty, or a dataset to add the shard to.",
            file_okay=False,
            show_default=False,
        ),
    ],
    db: DbOption = DEFAULT_DB,
    shard: ShardOption = None,
    overwrite: OverwriteOption = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="Print nothing but errors.")] = False,
) -> None:
    """Write the store's tables as Parquet: one shard of a dataset directory that
    `gca report --from DIR` (and Spark) reads. Samples are partitioned by UTC day;
    docs/parquet-layout.md describes the layout. The same store gives the same bytes.

    The shard is named after the store file (--shard to choose); a dataset holds any
    number of shards, e.g. one per site or per `gca ingest --to` process.

    Example: gca export --db philly.duckdb --to /shared/philly-parquet
    """
    from gpucluster_analysis.dataset import export_store

    def log(msg: str) -> None:
        if not quiet:
            stderr.print(f"gca: {msg}", markup=False)

    written = export_store(db, to, shard=shard, overwrite=overwrite, log=log)
    rows = sum(t["rows"] for t in written.shard.tables.values())
    log(
        f"{'replaced' if written.replaced else 'wrote'} shard {written.shard.name} of {written.root}:"
        f" {len(written.shard.tables)} tables, {rows:,} rows in {written.files} files"
    )
