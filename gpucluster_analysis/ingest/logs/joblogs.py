"""Job logs (stdout/stderr) as an ingest format: which job and attempt a file belongs
to comes from its path, why the attempt failed from the failure classifier.

Layouts a path is matched against, most specific first:

* `gca synth` (and any tool that keeps one folder per attempt):
  `.../logs/<job_id>/attempt_<k>/<stream>.log`, k = the attempt's position in the
  scheduler's list (attempts.source_index), stream = stdout, stderr or combined.
* Slurm's default output names: `slurm-<jobid>.out` and, for array tasks,
  `slurm-<jobid>_<task>.out` (also `.err` when stderr was split with
  `--error=slurm-%j.err`). The file spans every requeue of the job, so it is filed
  under the job's last attempt.
* `--log-pattern TEMPLATE`: a template matched against the end of the path, with
  `{job_id}`, `{attempt}` (source_index), `{stream}` and `*` (any characters but /),
  e.g. `{job_id}/{attempt}/stderr.txt`. A given template is tried first.

A file is classified from a bounded head and tail (see classify.engine). Besides its
root cause, a log may say which GPUs the job was given (`CUDA_VISIBLE_DEVICES=0,1`);
integer indices become gpu_bindings rows for attributing samples to the job.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpucluster_analysis.bounds import DEFAULT_MAX_GPUS_PER_NODE
from gpucluster_analysis.classify import Signature, classify_bytes, load_signatures
from gpucluster_analysis.errors import InputError
from gpucluster_analysis.ingest.base import FileFormat, IngestOptions
from gpucluster_analysis.ingest.files import open_binary
from gpucluster_analysis.logscan import HEAD_BYTES, TAIL_BYTES
from gpucluster_analysis.speed import SpeedSummary, extract_speed_bytes

_STREAMS = {
    "stdout": "stdout",
    "out": "stdout",
    "stderr": "stderr",
    "err": "stderr",
    "combined": "combined",
    "log": "combined",
    "output": "combined",
}

_SYNTH = re.compile(
    r"(?:^|/)logs/(?P<job_id>[^/]+)/attempt_(?P<attempt>\d+)/(?P<stream>stdout|stderr|combined)\.(?:log|txt)(?:\.gz)?$"
)
_SLURM = re.compile(r"(?:^|/)slurm-(?P<job_id>\d+(?:_\d+)?)\.(?P<stream>out|err)(?:\.gz)?$")

# Suffixes that make an unmatched file in a walked directory look like a job log, so it
# is reported as such ("pass --log-pattern") instead of as an unknown file.
LOG_LIKE_SUFFIXES = (".log", ".out", ".err", ".stdout", ".stderr", ".log.gz", ".out.gz", ".err.gz")

_CUDA_VISIBLE = re.compile(rb"CUDA_VISIBLE_DEVICES\s*[=:]\s*['\"]?([0-9][0-9, ]*)")


@dataclass(frozen=True)
class LogPlace:
    job_id: str
    attempt_ref: int | None  # attempts.source_index; None: the job's last attempt
    stream: str
    layout: str  # synth, slurm, pattern


@lru_cache(maxsize=8)
def compile_log_pattern(template: str) -> re.Pattern[str]:
    """`{job_id}/{attempt}/stderr.txt` -> a regex matched against the end of a path
    (cached: every file of a walk is placed with it, twice)."""
    if "{job_id}" not in template:
        raise InputError(
            f"--log-pattern {template!r} has no {{job_id}}",
            hint="name where the job id is in the path, e.g. --log-pattern '{job_id}/{attempt}/stderr.txt'",
        )
    out = []
    for token in re.split(r"(\{job_id\}|\{attempt\}|\{stream\}|\*)", template.strip("/")):
        if token == "{job_id}":
            out.append(r"(?P<job_id>[^/]+?)")
        elif token == "{attempt}":
            out.append(r"(?P<attempt>\d+)")
        elif token == "{stream}":
            out.append(r"(?P<stream>stdout|stderr|out|err|combined|output|log)")
        elif token == "*":
            out.append(r"[^/]*")
        elif (bad_placeholder := re.search(r"\{[^{}]*+\}", token)) is not None:
            bad = bad_placeholder.group(0)
            raise InputError(
                f"--log-pattern {template!r}: unknown placeholder {bad}",
                hint="placeholders are {job_id}, {attempt} and {stream}; * matches within one folder name",
            )
        else:
            out.append(re.escape(token))
    try:
        return re.compile(r"(?:^|/)" + "".join(out) + r"(?:\.gz)?$")
    except re.error as e:  # e.g. a placeholder used twice
        raise InputError(f"--log-pattern {template!r}: {e}", hint="use each placeholder at most once") from None


def place_log(path: Path, options: IngestOptions) -> LogPlace | None:
    """The job and attempt a log file belongs to, from its path; None if no layout matches."""
    text = path.as_posix()
    candidates: list[tuple[str, re.Pattern[str]]] = []
    if options.log_pattern:
        candidates.append(("pattern", compile_log_pattern(options.log_pattern)))
    candidates += [("synth", _SYNTH), ("slurm", _SLURM)]
    for layout, regex in candidates:
        m = regex.search(text)
        if not m:
            continue
        groups = m.groupdict()
        attempt = groups.get("attempt")
        stream = _STREAMS.get(groups.get("stream") or "", "combined")
        if layout == "pattern" and not groups.get("stream"):
            stream = _stream_from_name(path.name)
        return LogPlace(groups["job_id"], int(attempt) if attempt is not None else None, stream, layout)
    return None


def _stream_from_name(name: str) -> str:
    lowered = name.lower()
    if "err" in lowered:
        return "stderr"
    if "out" in lowered:
        return "stdout"
    return "combined"


def claims(path: Path, options: IngestOptions) -> bool:
    return place_log(path, options) is not None


@lru_cache(maxsize=8)
def _signatures(extra: tuple[Path, ...]) -> list[Signature]:
    return load_signatures(list(extra))


def read_head_and_tail(path: Path, digest: Any = None) -> tuple[bytes, bytes | None, int]:
    """The (decompressed) file whole when it is at most HEAD_BYTES + TAIL_BYTES, else its
    first HEAD_BYTES and last TAIL_BYTES apart (tail None when whole), and its size.

    `digest` (a hashlib object), for an uncompressed file: fed every byte on the way, so
    that the file is read once for its content hash and its text."""
    hashing = digest is not None and path.suffix != ".gz"
    with open_binary(path) as f:
        head = f.read(HEAD_BYTES)
        if hashing:
            digest.update(head)
        size = len(head)
        rest = b""
        # Stream the rest, keeping a rolling tail: gzip files cannot seek cheaply.
        while chunk := f.read(1 << 20):
            if hashing:
                digest.update(chunk)
            size += len(chunk)
            rest = (rest + chunk)[-TAIL_BYTES:]
    if digest is not None and not hashing:  # a .gz: its hash is of the compressed bytes
        digest.update(Path(path).read_bytes())
    if size <= HEAD_BYTES + TAIL_BYTES:
        return head + rest, None, size
    return head, rest, size


def cuda_visible_indices(data: bytes, max_gpus_per_node: int = DEFAULT_MAX_GPUS_PER_NODE) -> list[int]:
    """Integer GPU indices from every CUDA_VISIBLE_DEVICES the log prints (UUIDs are ignored), below
    the bound of GPUs per node (bounds.py): a bigger number is not an index the job got."""
    found: set[int] = set()
    for m in _CUDA_VISIBLE.finditer(data):
        for part in m.group(1).decode().replace(" ", "").split(","):
            if part.isdigit() and int(part) < max_gpus_per_node:
                found.add(int(part))
    return sorted(found)


def _speed_columns(speed: SpeedSummary | None) -> dict[str, object]:
    """The job_logs speed_* columns of the training speed the log prints (all None when it prints none)."""
    if speed is None:
        return dict.fromkeys(SPEED_COLUMNS)
    return {
        "speed_metric": speed.metric,
        "speed_unit": speed.unit,
        "speed_pattern": speed.pattern_id,
        "speed_per_gpu": speed.per_gpu,
        "speed_median": speed.median,
        "speed_p25": speed.p25,
        "speed_p75": speed.p75,
        "speed_samples": speed.samples_used,
        "speed_samples_seen": speed.samples_seen,
    }


SPEED_COLUMNS = (
    "speed_metric",
    "speed_unit",
    "speed_pattern",
    "speed_per_gpu",
    "speed_median",
    "speed_p25",
    "speed_p75",
    "speed_samples",
    "speed_samples_seen",
)


def parse(path: Path, options: IngestOptions) -> dict[str, list[dict[str, object]]]:
    """The rows one log file contributes (without file_id), by table; no database I/O."""
    return _parse(path, options, None)


def parse_hashed(path: Path, options: IngestOptions) -> tuple[str, dict[str, list[dict[str, object]]]]:
    """`parse`, and the sha256 of the file's bytes, read once for both."""
    digest = hashlib.sha256()
    rows = _parse(path, options, digest)
    return digest.hexdigest(), rows


def _parse(path: Path, options: IngestOptions, digest: Any) -> dict[str, list[dict[str, object]]]:
    place = place_log(path, options)
    if place is None:  # forced with --format job_log on a path no layout explains
        raise InputError(
            f"{path}: cannot tell the job from this log's path",
            hint="name the layout with --log-pattern, e.g. '{job_id}/{attempt}/stderr.txt'",
        )
    head, tail, _size = read_head_and_tail(path, digest)
    sigs = _signatures(tuple(options.signatures))
    # line numbers in the tail of a cut file are unknown: a match there gets none
    data, tail_from_line = (head, None) if tail is None else (head + b"\n" + tail, head.count(b"\n") + 2)
    speed = extract_speed_bytes(data, tail_from_line=tail_from_line)
    result = classify_bytes(data, sigs, tail_from_line=tail_from_line)
    log = {
        "job_id": place.job_id,
        "attempt_ref": place.attempt_ref,
        "stream": place.stream,
        "layout": place.layout,
        "reason": result.reason,
        "category": result.category,
        "signature_id": result.signature_id,
        "priority": result.matched[0].priority if result.matched else None,
        "line_number": result.line_number,
        "line": (result.line or "")[:1000] or None,
        "other_signatures": [m.signature_id for m in result.matched[1:]],
        "bytes_read": len(head) + len(tail or b""),
        "truncated": tail is not None,
        **_speed_columns(speed),
    }
    bindings: list[dict[str, object]] = [
        {
            "source": None,
            "job_id": place.job_id,
            "attempt_ref": place.attempt_ref,
            "machine_id": None,
            "gpu_index": gpu,
            "origin": "cuda_visible_devices",
        }
        for gpu in cuda_visible_indices(data, options.max_gpus_per_node)
    ]
    return {"job_logs": [log], "gpu_bindings": bindings}


FORMATS = [
    FileFormat(
        name="job_log",
        source="logs",
        description="a job's stdout/stderr; job and attempt from the path (synth layout, slurm-<jobid>.out, "
        "--log-pattern)",
        file_names=(),
        sniff=lambda head: False,  # logs are recognized by their path, never by content
        load=None,
        parse=parse,
        parse_hashed=parse_hashed,
        main_table="job_logs",
        claims_path=claims,
    )
]
