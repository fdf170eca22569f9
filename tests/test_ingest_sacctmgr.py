"""sacctmgr's GPU limits: `slurm_assoc` (associations) and `slurm_qos` (QOS) into `quotas`."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_helpers import ingest, rows, write
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.ingest import detect_format
from gpucluster_analysis.ingest.files import read_head
from gpucluster_analysis.ingest.slurm.sacctmgr import gpu_limit

DATA = Path(__file__).parent / "data" / "slurm"
REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("tres", "gpus"),
    [
        ("cpu=4,gres/gpu=8,mem=100G", 8),
        ("gres/gpu:a100=4", 4),  # typed only: counted as GPUs
        ("gres/gpu:a100=4,gres/gpu:v100=2", 6),
        ("gres/gpu=12,gres/gpu:a100=8,gres/gpu:v100=4", 12),  # untyped beside typed: the total
        ("gres/gpu:a100=8,gres/gpu=8", 8),
        ("gres/gpu=0", 0),
        ("", None),
        ("cpu=512,mem=1.50T", None),  # no GPU key: no GPU limit
        ("  gres/gpu=2 ", 2),
    ],
)
def test_gpu_limit_of_a_tres(tres: str, gpus: int | None) -> None:
    assert gpu_limit(tres) == gpus


@pytest.mark.parametrize("tres", ["gres/gpu=lots", "gres/gpu=", "gres/gpu:tesla:2(S:0-1)", "gres/gpu=-1", "cpu"])
def test_unreadable_gpu_tres(tres: str) -> None:
    with pytest.raises(ValueError):
        gpu_limit(tres)


def test_formats_are_recognized_by_content(tmp_path: Path) -> None:
    for name, fmt in (
        ("sacctmgr_assoc_p.txt", "slurm_assoc"),
        ("sacctmgr_qos_caps.txt", "slurm_qos"),
        ("real_sacctmgr_qos_perlmutter.txt", "slurm_qos"),
    ):
        copy = write(tmp_path / "limits.txt", (DATA / name).read_text())  # a name that says nothing
        found = detect_format(copy, read_head(copy))
        assert found is not None and found.name == fmt, name
    minimal = write(tmp_path / "a.txt", "Account|User|GrpTRES\nml||gres/gpu=8\n")
    assert detect_format(minimal, read_head(minimal)).name == "slurm_assoc"
    minimal = write(tmp_path / "q.txt", "Name|MaxTRESPU|GrpTRES\ngpu|gres/gpu=4|\n")
    assert detect_format(minimal, read_head(minimal)).name == "slurm_qos"


def test_no_other_file_is_taken_for_sacctmgr() -> None:
    ours = {
        "sacctmgr_assoc_p.txt",
        "sacctmgr_qos_caps.txt",
        "real_sacctmgr_qos_perlmutter.txt",
        "sacctmgr_assoc.txt",
    }  # the last: gca synth's, in examples/slurm
    live = {
        REPO / "tests" / "data" / "slurm" / "live" / n for n in ("assoc.txt", "qos.txt")
    }  # a real Slurm's (test_slurm_live.py)
    others = [
        p
        for folder in (REPO / "tests" / "data", REPO / "examples")
        for p in folder.rglob("*")
        if p.is_file() and p.name not in ours and p not in live
    ]
    taken = [
        p
        for p in others
        if (fmt := detect_format(p, read_head(p))) is not None and fmt.name in ("slurm_assoc", "slurm_qos")
    ]
    assert taken == []


def test_associations_give_account_quotas_and_user_caps(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "sacctmgr_assoc_p.txt")
    assert (report.format, report.status, report.rows, report.rejects) == ("slurm_assoc", "loaded", 8, 0)
    got = rows(db, "SELECT kind, vc, user_name, gpus, line FROM quotas ORDER BY line")
    assert got == [
        ("account", "root", None, None, 2),
        ("user", "root", "root", None, 3),
        ("account", "ml", None, 16.0, 4),
        ("user", "ml", "alice", 4.0, 5),
        ("user", "ml", "bob", None, 6),
        ("account", "vision", None, 8.0, 7),
        ("account", "nlp", None, 12.0, 8),
        ("account", "frozen", None, 0.0, 9),
    ]


def test_qos_gives_per_user_caps(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "sacctmgr_qos_caps.txt")
    assert (report.format, report.status, report.rejects) == ("slurm_qos", "loaded", 0)
    got = rows(db, "SELECT qos, kind, gpus FROM quotas ORDER BY line, kind")
    assert got == [
        ("normal", "qos_group", None),
        ("normal", "qos_user", None),
        ("gpu", "qos_group", 32.0),
        ("gpu", "qos_user", 4.0),
        ("a100", "qos_group", None),
        ("a100", "qos_user", 2.0),
    ]


def test_real_perlmutter_qos_has_no_per_user_gpu_cap(tmp_path: Path) -> None:
    """Perlmutter limits GPUs per job (MaxTRES gres/gpu=2 on gpu_shared), not per user: 9 QOS,
    none with a GPU limit in MaxTRESPU or GrpTRES."""
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "real_sacctmgr_qos_perlmutter.txt")
    assert (report.status, report.rejects) == ("loaded", 0), report.message
    assert rows(db, "SELECT count(DISTINCT qos), count(gpus) FROM quotas") == [(9, 0)]


def test_real_account_qos_listing_has_no_limit_column(tmp_path: Path) -> None:
    """`sacctmgr show assoc format=Account,QOS` holds no GrpTRES: refused in one line, saying which."""
    db = tmp_path / "s.duckdb"
    (report,) = ingest(db, DATA / "real_sacctmgr_assoc_perlmutter_account_qos.txt", format_name="slurm_assoc")
    assert report.status == "failed"
    assert "real_sacctmgr_assoc_perlmutter_account_qos.txt:1: not a sacctmgr header with grptres" in report.message
    assert "format=Account,User,GrpTRES" in report.message


def test_bad_rows_are_counted_rejects_with_their_line(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    text = (
        "Account|User|GrpTRES|\n"
        "ml||gres/gpu=16|\n"
        "ml|alice|gres/gpu=lots|\n"  # unreadable GPU count
        "|bob|gres/gpu=2|\n"  # no account
        "ml|carol|gres/gpu=2|extra|\n"  # a field too many
        "ml||gres/gpu=8|\n"
    )  # ml again (another cluster?): the first holds
    (report,) = ingest(db, write(tmp_path / "assoc.txt", text))
    assert (report.status, report.rows, report.rejects) == ("loaded", 1, 4)
    assert rows(db, "SELECT line, reason FROM rejects ORDER BY line") == [
        (3, "unreadable TRES item 'gres/gpu=lots' (expected e.g. gres/gpu=8)"),
        (4, "no Account"),
        (5, "5 fields where the header has 3"),
        (
            6,
            "the same account and user as line 2 (another cluster or partition?): gca keeps one GPU limit each,"
            " the first",
        ),
    ]
    assert rows(db, "SELECT vc, gpus FROM quotas") == [("ml", 16.0)]


def test_a_qos_line_with_one_bad_limit_is_rejected_whole(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    (report,) = ingest(
        db, write(tmp_path / "qos.txt", "Name|MaxTRESPU|GrpTRES\ngpu|gres/gpu=4|gres/gpu=x\nok|gres/gpu=1|\n")
    )
    assert (report.rows, report.rejects) == (2, 1)
    assert rows(db, "SELECT DISTINCT qos FROM quotas") == [("ok",)]


def test_cli_error_is_one_line_naming_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "assoc.txt", "ml||gres/gpu=16\n")  # -n: no header
    result = CliRunner().invoke(
        app, ["ingest", str(path), "--format", "slurm_assoc", "--db", str(tmp_path / "s.duckdb")]
    )
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("gca: error:")]
    assert len(errors) == 1 and f"{path}:1: not a sacctmgr header" in errors[0], result.output


def test_replace_takes_back_what_the_file_gave(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    path = write(tmp_path / "assoc.txt", "Account|User|GrpTRES\nml||gres/gpu=16\n")
    ingest(db, path)
    write(path, "Account|User|GrpTRES\nml||gres/gpu=24\n")
    (report,) = ingest(db, path, replace=True)
    assert report.status == "replaced"
    assert rows(db, "SELECT vc, gpus FROM quotas") == [("ml", 24.0)]
