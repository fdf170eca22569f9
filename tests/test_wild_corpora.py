"""The real logs collected for issue #28 (tests/data/*/wild*/) are whole and sourced: each log
has its hand-made answer, each answer is one the readers can give, each case a source URL, and a
third of each set is held out (`heldout_*`). benchmarks/score_wild_logs.py scores them."""

from __future__ import annotations

import tomllib
from pathlib import Path

from gpucluster_analysis.failure_categories import CATEGORIES

DATA = Path(__file__).parent / "data"
MEANINGS = {
    "seconds_per_iteration",
    "ms_per_iteration",
    "iterations_per_second",
    "samples_per_second",
    "samples_per_second_per_gpu",
    "tokens_per_second",
    "tokens_per_second_per_gpu",
    "tflops_per_gpu",
    "seconds_per_epoch",
    "other",
}


def _sourced(folder: Path, stems: list[str]) -> None:
    rows = [ln for ln in (folder / "SOURCES.md").read_text().splitlines() if ln.startswith("| ") and "http" in ln]
    named = {ln.split("|")[1].strip().strip("`"): ln for ln in rows}
    assert set(named) == set(stems)
    assert all("| http" in ln for ln in named.values())
    # each batch (a `## ` section of SOURCES.md after the first table) holds out a third of its
    # cases, rounded down
    text = (folder / "SOURCES.md").read_text()
    batches = [[ln for ln in part.splitlines() if ln.startswith("| ") and "http" in ln] for part in text.split("\n## ")]
    for batch in (b for b in batches if b):
        cases = [ln.split("|")[1].strip().strip("`") for ln in batch]
        assert sum(c.startswith("heldout_") for c in cases) == len(cases) // 3, cases[0]


def test_failure_logs_are_labelled_and_sourced() -> None:
    folder = DATA / "classify" / "wild_failures"
    stems = sorted(p.stem for p in folder.glob("*.log"))
    assert len(stems) >= 66
    assert {(folder / f"{s}.expected").read_text().strip() for s in stems} <= set(CATEGORIES)
    _sourced(folder, stems)


def _printed_forms(v: float) -> tuple[str, ...]:
    """How a value may be printed: as Python writes it, with thousands separators, or in
    thousands or millions (nanotron's `11.5K`)."""
    return (f"{v}", f"{v:g}", f"{int(v)}", f"{v:,}", f"{v / 1e3:g}", f"{v / 1e6:g}")


def test_speed_logs_are_annotated_and_sourced() -> None:
    folder = DATA / "speed" / "wild"
    stems = sorted(p.stem for p in folder.glob("*.log"))
    assert len(stems) >= 66
    frameworks = set()
    for stem in stems:
        case = tomllib.loads((folder / f"{stem}.toml").read_text())
        frameworks.add(case["framework"])
        text = (folder / f"{stem}.log").read_text(errors="replace")
        assert max(len(q["values"]) for q in case["quantity"]) >= 3, stem
        for q in case["quantity"]:
            assert q["meaning"] in MEANINGS, (stem, q["meaning"])
            assert all(any(f in text for f in _printed_forms(v)) for v in q["values"]), stem
    assert len(frameworks) >= 20
    _sourced(folder, stems)


def test_healthy_run_logs_are_sourced() -> None:
    folder = DATA / "classify" / "wild_benign"
    stems = sorted(p.stem for p in folder.glob("*.log"))
    assert len(stems) >= 66
    assert all(0 < (folder / f"{s}.log").stat().st_size < 40_000 for s in stems)
    _sourced(folder, stems)
