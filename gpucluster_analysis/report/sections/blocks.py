"""The building blocks of a report section: paragraphs, figures and tables, in the order they are shown.

They only hold content; `build.py` renders them to HTML and writes each figure's or table's CSV.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import plotly.graph_objects as go
import polars as pl


@dataclass
class Paragraph:
    text: str
    kind: str = "p"  # p, note, finding, h3 (a subheading)


@dataclass
class Findings:
    """The report at a glance: (section id, section title, its lead sentence) each."""

    items: list[tuple[str, str, str]]


@dataclass
class Figure:
    div_id: str
    figure: go.Figure
    finding: str  # the sentence saying what it shows and the numbers behind it
    csv: str  # the CSV table with the numbers drawn


@dataclass
class Table:
    name: str  # the CSV it is written to (without .csv)
    frame: pl.DataFrame
    caption: str
    max_rows: int = 25


@dataclass
class Section:
    id: str
    title: str
    blocks: list[Paragraph | Figure | Table | Findings] = field(default_factory=list)

    def add(self, block: Paragraph | Figure | Table | Findings) -> None:
        self.blocks.append(block)
