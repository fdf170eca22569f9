"""Samples identical in content are stored once (issue #26, part 3): a telemetry sample is its
source kind, machine, GPU (and MIG instance) and time, not the bytes of its file.

Expected counts are taken from the files themselves with a plain parse (csv, line splits)
or from the generated values, never from gca's output. Philly times: UTC = Los Angeles local
+ 7 h in PDT, + 8 h in PST.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import re
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster_analysis.cli import app
from gpucluster_analysis.db.queries import run_query
from gpucluster_analysis.ingest import load
from tests.store_helpers import ingest, prepared_store, rows, write

REPO = Path(__file__).resolve().parent.parent
PHILLY = REPO / "examples" / "synthetic"
NVSMI = REPO / "examples" / "slurm" / "gpu" / "gpu001.csv"
DCGM = REPO / "examples" / "slurm" / "dcgm" / "gpu001.prom"
KEY = "sample_at, machine_id, gpu_index"


# ------------------------------------------------------------------ independent readings of the inputs


@cache  # the same minute is on every machine's row
def philly_utc(text: str) -> datetime:
    local, zone = text.rsplit(" ", 1)
    return datetime.strptime(local, "%Y-%m-%d %H:%M:%S") + timedelta(hours={"PDT": 7, "PST": 8}[zone])


def philly_gpu_cells(path: Path) -> dict[tuple[datetime, str, int], float]:
    """(UTC time, machine, GPU) -> utilization of every non-NA cell of a cluster_gpu_util file."""
    with path.open(newline="", encoding="utf-8-sig") as f:
        lines = list(csv.reader(f))
    out = {}
    for row in lines[1:]:
        at = philly_utc(row[0])
        for gpu, value in enumerate(row[2:]):
            if value not in ("", "NA"):
                out[(at, row[1], gpu)] = float(value)
    return out


def philly_host_rows(path: Path) -> int:
    """Rows of a cluster_cpu_util / cluster_mem_util file with a value."""
    with path.open(newline="") as f:
        return sum(1 for row in list(csv.reader(f))[1:] if any(v not in ("", "NA") for v in row[2:]))


def nvsmi_lines(path: Path) -> list[str]:
    """The data lines of an nvidia-smi --query-gpu log (each one GPU's sample)."""
    return [line for line in path.read_text().splitlines()[1:] if line.strip()]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def count(db: Path, table: str) -> int:
    return int(rows(db, f"SELECT count(*) FROM {table}")[0][0])


def stored_gpu_samples(db: Path) -> list[tuple]:
    return rows(db, f"SELECT {KEY}, util_pct FROM gpu_samples ORDER BY ALL")


def coverage(db: Path) -> dict[str, object]:
    with prepared_store(db) as con:
        interval = run_query(con, "gpu_sample_interval").row(0)[0]
        return run_query(con, "gpu_time_coverage", sample_interval_s=interval).row(0, named=True)


# ------------------------------------------------------------------ re-encoded copies


def test_a_gzip_copy_of_the_gpu_util_file_adds_no_sample(tmp_path: Path) -> None:
    """Issue #26, part 3:

        gzip -c examples/synthetic/cluster_gpu_util > /tmp/z/cluster_gpu_util.gz
        gca ingest examples/synthetic; gca ingest /tmp/z/cluster_gpu_util.gz

    stored 114,509 more samples and gpu_time_coverage.csv showed 198.77%."""
    cells = philly_gpu_cells(PHILLY / "cluster_gpu_util")
    copy = tmp_path / "z" / "cluster_gpu_util.gz"
    copy.parent.mkdir()
    copy.write_bytes(gzip.compress((PHILLY / "cluster_gpu_util").read_bytes()))
    db = tmp_path / "s.duckdb"
    ingest(db, PHILLY)
    alone = coverage(db)
    result = CliRunner().invoke(app, ["ingest", str(copy), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert f"{len(cells):,} samples already stored" in result.stderr
    assert count(db, "gpu_samples") == len(cells) == 114_509
    assert rows(db, "SELECT rows_loaded FROM ingested_files WHERE path = ?", str(copy)) == [(0,)]
    assert coverage(db) == alone and float(alone["coverage_pct"]) <= 100


def _crlf(text: bytes) -> bytes:
    return text.replace(b"\n", b"\r\n")


def _bom(text: bytes) -> bytes:
    return b"\xef\xbb\xbf" + text


@pytest.mark.parametrize("encode", [gzip.compress, _crlf, _bom], ids=["gzip", "crlf", "bom"])
@pytest.mark.parametrize(
    "source, table, expected",
    [
        (NVSMI, "gpu_samples", lambda p: len(nvsmi_lines(p))),
        (PHILLY / "cluster_cpu_util", "host_samples", philly_host_rows),
    ],
)
def test_a_reencoded_copy_adds_no_sample(tmp_path: Path, encode, source: Path, table: str, expected) -> None:
    """gzip -c gpu001.csv > copy/gpu001.csv.gz (or unix2dos, or a BOM in front); gca ingest gpu001.csv copy/."""
    copy = tmp_path / "copy" / (source.name + (".gz" if encode is gzip.compress else ""))
    copy.parent.mkdir()
    copy.write_bytes(encode(source.read_bytes()))
    db = tmp_path / "s.duckdb"
    first, again = ingest(db, source, copy, zone="UTC")
    n = expected(source)
    assert (first.rows, first.duplicates) == (n, 0)
    assert (again.status, again.rows, again.duplicates, again.differing) == ("loaded", 0, n, 0)
    assert count(db, table) == n
    assert count(db, f"{table}_duplicates") == n  # kept aside for --replace, read by no report


def dcgm_valued_samples(path: Path) -> int:
    """(GPU, time) pairs of a scrape file (`NAME{...gpu="N"...} VALUE MS` lines) with a value that is not NaN."""
    pairs = set()
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            labels, value, stamp = line.rsplit(" ", 2)
            if value != "NaN":
                pairs.add((re.search(r'gpu="(\d+)"', labels).group(1), stamp))
    return len(pairs)


def test_a_dcgm_scrape_copy_adds_no_detail(tmp_path: Path) -> None:
    """gzip -c gpu001.prom > copy/gpu001.prom.gz; gca ingest gpu001.prom copy/: the profiling
    fields are stored once."""
    copy = tmp_path / "copy" / "gpu001.prom.gz"
    copy.parent.mkdir()
    copy.write_bytes(gzip.compress(DCGM.read_bytes()))
    db = tmp_path / "s.duckdb"
    first, again = ingest(db, DCGM, copy)
    valued = dcgm_valued_samples(DCGM)
    assert count(db, "gpu_sample_details") == valued == 189
    # (rows count the file's samples, the 3 of only NaN too, which store nothing either time)
    assert (again.duplicates, again.rows) == (valued, first.rows - valued)


def test_files_an_ingest_stored_but_did_not_compare_are_compared_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gca ingest trace/ copy/ stopped (Ctrl-C) after storing both files, before comparing them:
    the next ingest, of any file, sets the copy's samples aside."""
    cells = philly_gpu_cells(PHILLY / "cluster_gpu_util")
    copy = tmp_path / "copy" / "cluster_gpu_util.gz"
    copy.parent.mkdir()
    copy.write_bytes(gzip.compress((PHILLY / "cluster_gpu_util").read_bytes()))
    db = tmp_path / "s.duckdb"

    def stopped(con: object, kinds: object) -> dict[int, object]:
        raise KeyboardInterrupt

    with monkeypatch.context() as interrupted:
        interrupted.setattr(load, "compare_new", stopped)
        with pytest.raises(KeyboardInterrupt):
            ingest(db, PHILLY / "cluster_gpu_util", copy)
    assert count(db, "gpu_samples") == 2 * len(cells)
    ingest(db, PHILLY / "cluster_machine_list")
    assert count(db, "gpu_samples") == len(cells)
    assert rows(db, "SELECT rows_loaded FROM ingested_files WHERE path = ?", str(copy)) == [(0,)]


# ------------------------------------------------------------------ overlapping logs


def _nvsmi_pieces(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """A copy of a growing log taken early (its first 300 samples) and the whole log later."""
    lines = NVSMI.read_text().splitlines(keepends=True)
    early = write(tmp_path / "early" / "gpu001.csv", "".join(lines[:301]))
    late = write(tmp_path / "late" / "gpu001.csv", "".join(lines))
    return early, late, nvsmi_lines(NVSMI)


def test_overlapping_logs_store_each_sample_once_in_either_order(tmp_path: Path) -> None:
    """cp node.log early/ ... later cp node.log late/; gca ingest early/ late/ (or late/ then early/)."""
    early, late, data = _nvsmi_pieces(tmp_path)
    stores = []
    for order in ((early, late), (late, early)):
        db = tmp_path / f"{order[0].parent.name}-first.duckdb"
        first, second = ingest(db, *order, zone="UTC")
        assert first.rows == len(nvsmi_lines(order[0]))
        assert (second.rows, second.duplicates) == (len(data) - first.rows, 300)
        assert count(db, "gpu_samples") == count(db, "gpu_sample_details") == len(data) == 768
        stores.append(
            (stored_gpu_samples(db), rows(db, "SELECT * EXCLUDE (file_id) FROM gpu_sample_details ORDER BY ALL"))
        )
    assert stores[0] == stores[1]


def test_a_dcgm_scrape_file_holding_a_scrape_twice_stores_it_once(tmp_path: Path) -> None:
    """cat gpu001.prom gpu001.prom > twice/gpu001.prom: the DCGM reader gives one row per GPU and
    time in a file (the same value twice is one value). Other formats are not checked within a
    file (docs/schema.md: an exact check would cost a few percent of every file's ingest)."""
    twice = write(tmp_path / "twice" / "gpu001.prom", DCGM.read_text() * 2)
    db = tmp_path / "s.duckdb"
    ingest(db, twice)
    assert count(db, "gpu_sample_details") == dcgm_valued_samples(DCGM)


# ------------------------------------------------------------------ kinds


def test_another_tools_sample_of_the_same_gpu_and_time_is_kept(tmp_path: Path) -> None:
    """nvidia-smi and dcgm-exporter both sampled GPU 0 of gpu001 at 2017-11-03 00:00:00.001 UTC:
    two measurements. A second copy of the DCGM scrape still adds nothing."""
    at_ms = (datetime(2017, 11, 3, 0, 0, 0, 1000) - datetime(1970, 1, 1)) // timedelta(milliseconds=1)
    scrape = f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",Hostname="gpu001"}} 42 {at_ms}\n'
    dcgm = write(tmp_path / "dcgm" / "gpu001.prom", scrape)
    again = write(tmp_path / "again" / "gpu001.prom", scrape.replace("} 42", "}  42"))
    db = tmp_path / "s.duckdb"
    ingest(db, NVSMI, zone="UTC")
    reports = ingest(db, dcgm, again)
    assert [(r.rows, r.duplicates) for r in reports] == [(1, 0), (0, 1)]
    assert rows(
        db,
        "SELECT util_pct FROM gpu_samples WHERE machine_id = 'gpu001' AND gpu_index = 0"
        " AND sample_at = '2017-11-03 00:00:00.001' ORDER BY 1",
    ) == [(0.0,), (42.0,)]
    assert count(db, "gpu_samples") == len(nvsmi_lines(NVSMI)) + 1


def test_philly_cpu_and_memory_of_one_machine_and_minute_are_both_kept(tmp_path: Path) -> None:
    """cluster_cpu_util and cluster_mem_util fill different columns of host_samples: two kinds."""
    db = tmp_path / "s.duckdb"
    ingest(db, PHILLY / "cluster_cpu_util", PHILLY / "cluster_mem_util")
    cpu, mem = philly_host_rows(PHILLY / "cluster_cpu_util"), philly_host_rows(PHILLY / "cluster_mem_util")
    assert count(db, "host_samples") == cpu + mem == 14_365 + 14_400


def test_the_first_file_of_each_kind_is_compared_with_nothing(tmp_path: Path) -> None:
    """The full-scale case (one big file per kind into an empty store) writes no spans: no
    summary of hundreds of millions of rows is computed unless another file of the kind comes."""
    db = tmp_path / "s.duckdb"
    ingest(db, PHILLY)
    assert count(db, "sample_spans") == 0
    ingest(
        db, write(tmp_path / "m9" / "cluster_gpu_util", "time,machineId,gpu0_util\n2017-11-03 00:00:00 PDT,m9,5.0,\n")
    )
    # now the trace's file is summarized too, once: one span per machine
    assert rows(db, "SELECT file_id, count(*) FROM sample_spans GROUP BY ALL ORDER BY 1") == [(2, 4), (80, 1)]


# ------------------------------------------------------------------ values that differ, --replace


# the first lines of the trace's GPU file (a test of a few seconds at most)
PART_LINES = 3001


def _part(tmp_path: Path, name: str, lines: int = PART_LINES) -> Path:
    """The trace's GPU file cut to its first `lines` lines, in tmp_path/name."""
    text = "".join((PHILLY / "cluster_gpu_util").read_text().splitlines(keepends=True)[:lines])
    return write(tmp_path / name / "cluster_gpu_util", text)


def _altered(tmp_path: Path, name: str, every: int, delta: float, lines: int = PART_LINES) -> Path:
    """_part with every `every`-th data row's gpu0 value moved by `delta`."""
    text = (PHILLY / "cluster_gpu_util").read_text().splitlines(keepends=True)
    out = [text[0]]
    for i, line in enumerate(text[1:lines]):
        fields = line.split(",")
        if i % every == 0 and fields[2] != "NA":
            value = float(fields[2])
            fields[2] = str(value + delta if value + delta <= 100 else value - delta)
        out.append(",".join(fields))
    return write(tmp_path / name / "cluster_gpu_util", "".join(out))


def _first_by_hash(*files: Path) -> list[tuple]:
    """What the store must hold: each sample's value from the file with the smallest sha256 among
    the files that have it."""
    best: dict[tuple, tuple[str, float]] = {}
    for path in files:
        digest = sha256(path)
        for key, value in philly_gpu_cells(path).items():
            if key not in best or digest < best[key][0]:
                best[key] = (digest, value)
    return sorted((*key, value) for key, (_, value) in best.items())


def test_differing_values_keep_the_same_row_whatever_the_order(tmp_path: Path) -> None:
    """Two files of the same samples, some values different: whichever is ingested first, the
    store holds the values of the file first by content hash, and says how many differed."""
    a, b = _part(tmp_path, "a"), _altered(tmp_path, "b", every=7, delta=1.5)
    original = philly_gpu_cells(a)
    changed = sum(1 for k, v in philly_gpu_cells(b).items() if original[k] != v)
    assert changed > 100
    stores = []
    for order in ((a, b), (b, a)):
        db = tmp_path / f"{order[0].parent.name}.duckdb"
        _, second = ingest(db, *order)
        assert (second.rows, second.duplicates, second.differing) == (0, len(original), changed)
        stores.append(stored_gpu_samples(db))
        assert count(db, "gpu_samples_duplicates") == len(original)
    assert stores[0] == stores[1] == _first_by_hash(a, b)


def test_replace_hands_samples_to_the_file_that_also_had_them(tmp_path: Path) -> None:
    """gca ingest trace/cluster_gpu_util; gca ingest copy/cluster_gpu_util.gz (all duplicates);
    then trace/cluster_gpu_util is cut to half its lines and ingested with --replace: the samples it
    no longer has are the copy's again, none twice."""
    trace = _part(tmp_path, "trace")
    copy = tmp_path / "copy" / "cluster_gpu_util.gz"
    copy.parent.mkdir()
    copy.write_bytes(gzip.compress(trace.read_bytes()))
    cells = philly_gpu_cells(trace)
    db = tmp_path / "s.duckdb"
    ingest(db, trace)
    ingest(db, copy)
    _part(tmp_path, "trace", PART_LINES // 2)
    (report,) = ingest(db, trace, replace=True)
    assert (report.status, report.rows, report.duplicates) == ("replaced", 0, len(philly_gpu_cells(trace)))
    assert stored_gpu_samples(db) == sorted((*k, v) for k, v in cells.items())
    assert rows(db, "SELECT DISTINCT f.path FROM gpu_samples s JOIN ingested_files f USING (file_id)") == [(str(copy),)]
    # taking back the copy now hands nothing back to the trace's file (it stored no sample):
    # the samples beyond its half go with the copy
    copy.write_bytes(gzip.compress(trace.read_bytes()))
    ingest(db, copy, replace=True)
    assert count(db, "gpu_samples") == len(philly_gpu_cells(trace))
    assert count(db, "gpu_samples_duplicates") == len(philly_gpu_cells(trace))


def test_replace_of_a_file_whose_values_won_keeps_the_order_of_files(tmp_path: Path) -> None:
    """Three versions of the trace's GPU file whose values differ here and there; the one first
    by content hash (whose differing values are the stored ones) is replaced by a shorter
    version of itself. After each step every sample holds the value of the file first by
    content hash among the files that have it."""
    versions = {
        "a": _part(tmp_path, "a"),
        "b": _altered(tmp_path, "b", every=5, delta=1.0),
        "c": _altered(tmp_path, "c", every=3, delta=2.0),
    }
    db = tmp_path / "s.duckdb"
    for name in ("c", "a", "b"):
        ingest(db, versions[name])
    assert stored_gpu_samples(db) == _first_by_hash(*versions.values())
    first = min(versions, key=lambda name: sha256(versions[name]))
    won = rows(
        db,
        "SELECT count(*) FROM gpu_samples s JOIN ingested_files f USING (file_id) WHERE f.path = ?",
        str(versions[first]),
    )[0][0]
    assert won > 0
    lines = versions[first].read_text().splitlines(keepends=True)
    write(versions[first], "".join(lines[: PART_LINES // 2]))
    (report,) = ingest(db, versions[first], replace=True)
    assert report.status == "replaced"
    assert stored_gpu_samples(db) == _first_by_hash(*versions.values())
    assert rows(db, f"SELECT count(*) FROM (SELECT {KEY} FROM gpu_samples GROUP BY ALL HAVING count(*) > 1)") == [(0,)]


# ------------------------------------------------------------------ coverage


def test_gpu_time_coverage_never_passes_100_percent(tmp_path: Path) -> None:
    """The trace's machine m0 also sampled by nvidia-smi, every minute at the trace's times: two
    measurements of its GPUs, both stored, so m0's jobs have twice the samples their GPU time
    holds. Coverage counts each job's samples only up to that, and stays at most 100%."""
    cells = philly_gpu_cells(PHILLY / "cluster_gpu_util")
    lines = ["timestamp, index, utilization.gpu [%]\n"]
    lines += [
        f"{at:%Y/%m/%d %H:%M:%S}.000, {gpu}, {value:.0f} %\n"
        for (at, machine, gpu), value in sorted(cells.items())
        if machine == "m0"
    ]
    nvsmi = write(tmp_path / "nvsmi" / "m0.csv", "".join(lines))
    alone, both = tmp_path / "alone.duckdb", tmp_path / "both.duckdb"
    ingest(alone, PHILLY)
    ingest(both, PHILLY)
    (report,) = ingest(both, nvsmi, zone="UTC")
    assert report.rows == len(lines) - 1 and report.duplicates == 0  # another kind: kept
    single, double = coverage(alone), coverage(both)
    m0 = sum(1 for (_, machine, _) in cells if machine == "m0")
    assert count(both, "gpu_samples") == len(cells) + m0
    assert double["attributed_samples"] > single["attributed_samples"]
    uncapped = 100 * double["attributed_samples"] * 60 / (double["expected_samples"] * 60)
    assert uncapped > 110
    assert float(single["coverage_pct"]) <= float(double["coverage_pct"]) <= 100
