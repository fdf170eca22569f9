"""Fingerprint what gca produces, to show a change of structure changed no behaviour.

    python scripts/behaviour_snapshot.py --out /tmp/snap-before   # on the old code
    python scripts/behaviour_snapshot.py --out /tmp/snap-after    # on the new code
    diff /tmp/snap-before/fingerprints.txt /tmp/snap-after/fingerprints.txt

Each case is ingested into a new store and reported on; the fingerprint lists the
SHA-256 of every CSV of each report and, for every table of each store, its row count
and an order-free digest of its rows. Columns that record when or how fast something ran
(`ingested_files.ingested_at`, `.seconds`; `kept_results.seconds`, `.kept_at`, and its
`inputs` digest, which covers the ingest times) are left out: they differ between two runs of
the same code.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
# ../shared/data beside the repository (a worktree may sit one folder deeper)
SHARED = next((p / "shared" / "data" for p in ROOT.parents if (p / "shared" / "data").is_dir()), ROOT / "missing")
# When or how fast something ran, not what it found.
VOLATILE = {"ingested_files": ("ingested_at", "seconds"), "kept_results": ("inputs", "seconds", "kept_at")}


def _gca(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "gpucluster_analysis", *args], check=True, stdout=subprocess.DEVNULL)


def _cases(work: Path) -> list[tuple[str, list[str], list[list[str]]]]:
    """(name, ingest inputs, one argument list per report) for each case."""
    # The synthetic Slurm trace sits at one path for every run, since the store and the
    # report name the files they read: a trace under --out would differ by its path alone.
    slurm = Path(tempfile.gettempdir()) / "gca-behaviour-synth-slurm-seed3"
    if not slurm.exists():
        scratch = Path(tempfile.mkdtemp(prefix="gca-behaviour-synth-"))
        subprocess.run(
            [
                sys.executable,
                "-m",
                "gpucluster_analysis",
                "synth",
                "--format",
                "slurm",
                "--out",
                str(scratch),
                "--jobs",
                "300",
                "--machines",
                "8",
                "--days",
                "2",
                "--seed",
                "3",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        try:
            scratch.rename(slurm)
        except OSError:  # another run made it first: the same seed gives the same trace
            shutil.rmtree(scratch)
    synthetic = ROOT / "examples" / "synthetic"
    cases = [
        (
            "examples-synthetic",
            [str(synthetic)],
            [
                ["--quotas", str(synthetic / "quotas.toml")],
                [
                    "--quotas",
                    str(synthetic / "quotas.toml"),
                    "--since",
                    "2017-11-04",
                    "--until",
                    "2017-11-05",
                    "--baseline-since",
                    "2017-11-03",
                    "--baseline-until",
                    "2017-11-04",
                ],
            ],
        ),
        (
            "examples-slurm",
            [str(ROOT / "examples" / "slurm")],
            [["--quotas", str(ROOT / "examples" / "slurm" / "quotas.toml")]],
        ),
        ("synth-slurm", [str(slurm)], [["--quotas", str(slurm / "quotas.toml")]]),
    ]
    philly = SHARED / "philly-sample"
    if philly.exists():
        # its files, not the folder: upstream_examples/ repeats a machine list (issue #29)
        cases.append(("philly-sample", [str(p) for p in sorted(philly.glob("cluster_*"))], [[]]))
    return cases


def _table_digests(db: Path) -> list[str]:
    lines = []
    with duckdb.connect(str(db), read_only=True) as con:
        tables = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE NOT temporary ORDER BY table_name"
            ).fetchall()
        ]
        for table in tables:
            skip = VOLATILE.get(table, ())
            columns = [
                r[0]
                for r in con.execute(
                    "SELECT column_name FROM duckdb_columns() WHERE table_name = ? AND NOT internal "
                    "ORDER BY column_index",
                    [table],
                ).fetchall()
                if r[0] not in skip
            ]
            row = ", ".join(f'"{c}"' for c in columns)
            count, digest = con.execute(
                f"SELECT count(*), coalesce(md5(string_agg(h, '' ORDER BY h)), '-') "
                f'FROM (SELECT md5(CAST(ROW({row}) AS VARCHAR)) AS h FROM "{table}")'
            ).fetchone()
            lines.append(f"table {table} rows={count} columns={','.join(columns)} md5={digest}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, required=True, help="a new directory for the stores, reports and fingerprints"
    )
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    fingerprints = []
    for name, inputs, reports in _cases(out):
        db = out / f"{name}.duckdb"
        db.unlink(missing_ok=True)
        _gca("ingest", *inputs, "--db", str(db))
        fingerprints += [f"{name} {line}" for line in _table_digests(db)]
        for k, report_args in enumerate(reports):
            report = out / f"{name}-report-{k}"
            shutil.rmtree(report, ignore_errors=True)
            _gca("report", "--db", str(db), "--out", str(report), *report_args)
            for csv in sorted(report.rglob("*.csv")):
                digest = hashlib.sha256(csv.read_bytes()).hexdigest()
                fingerprints.append(f"{name} report-{k} {csv.relative_to(report)} sha256={digest}")
    (out / "fingerprints.txt").write_text("\n".join(fingerprints) + "\n")
    print(f"{len(fingerprints)} fingerprints in {out / 'fingerprints.txt'}")


if __name__ == "__main__":
    main()
