"""Options shared by several commands, defined once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

DbOption = Annotated[
    Path,
    typer.Option("--db", help="The gca store (a DuckDB file).", dir_okay=False, envvar="GCA_DB"),
]
DEFAULT_DB = Path("gca.duckdb")
ShardOption = Annotated[
    str | None,
    typer.Option("--shard", help="Name of the shard to write in the dataset (letters, digits, '.', '_', '-')."),
]
OverwriteOption = Annotated[
    bool,
    typer.Option("--overwrite", help="Replace a shard of the same name already in the dataset."),
]
