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
