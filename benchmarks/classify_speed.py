"""Failure-classification speed: MB/s and files/s of `classify_file` on realistic logs.

Writes a few hundred MB of job logs into a temporary directory, then classifies every
file with the shipped signatures:

* long training runs (2-40 MB): tqdm bars redrawn with carriage returns, logger lines
  with timestamps and ranks, NCCL INFO chatter, metric dicts, ending in a failure
  taken from one of the real excerpts in tests/data/classify/real;
* huge logs (150-250 MB) where only the bounded head and tail are read;
* many small logs (4-40 KB), for the per-file overhead.

Every file's expected reason is known (the excerpt it ends with), so the run also
reports how many came out right. Prints a Markdown table to paste into RESULTS.md.

    python benchmarks/classify_speed.py               # ~1.4 GB on disk, ~260 MB of it read
    python benchmarks/classify_speed.py --scale 0.25  # a quicker look
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

from gpucluster_analysis.classify import classify_file, load_signatures
from gpucluster_analysis.classify.engine import HEAD_BYTES, TAIL_BYTES

REAL = Path(__file__).resolve().parent.parent / "tests" / "data" / "classify" / "real"


def _excerpts() -> list[tuple[bytes, str]]:
    out = []
    for exp in sorted(REAL.glob("*.expected")):
        out.append((exp.with_suffix(".log").read_bytes(), exp.read_text().strip()))
    return out


def _training_chunk(rng: random.Random, lines: int, rank_prefix: bool) -> bytes:
    """`lines` lines of ordinary training output (no failure in it)."""
    parts = []
    step = rng.randrange(100_000)
    for _ in range(lines):
        step += 1
        r = rng.random()
        prefix = f"[rank{rng.randrange(8)}]: " if rank_prefix else ""
        if r < 0.35:  # a tqdm bar redrawn 20 times on one line
            bar = "\r".join(
                f"Epoch {step // 1000}: {p:3d}%|{'█' * (p // 10):10s}| {p * 25}/2500 [07:30<34:12,  4.77it/s, "
                f"loss={rng.random() * 3:.3f}, v_num=95nc]"
                for p in range(0, 100, 5)
            )
            parts.append(prefix + bar)
        elif r < 0.65:
            parts.append(
                f"{prefix}[2024-05-01 12:{step % 60:02d}:{step % 59:02d},123] [INFO] [logging.py:96:log_dist] "
                f"[Rank 0] step={step}, skipped=0, lr=[{rng.random() * 1e-4:.3e}], mom=[(0.9, 0.999)]"
            )
        elif r < 0.75:
            parts.append(
                f"gpu-node-{rng.randrange(64):02d}:{rng.randrange(99999)}:{rng.randrange(99999)} [{rng.randrange(8)}] "
                f"NCCL INFO Channel {step % 32:02d}/0 : 0[0] -> 1[0] [send] via NET/IB/{step % 4}"
            )
        elif r < 0.9:
            parts.append(
                f"{prefix}{{'loss': {rng.random():.4f}, 'grad_norm': {rng.random() * 10:.3f}, "
                f"'learning_rate': {rng.random() * 1e-5:.3e}, 'epoch': {step / 1000:.2f}}}"
            )
        else:
            parts.append(
                f"I0501 12:00:{step % 60:02d}.{step % 999999:06d} 140213 trainer.py:412] global step {step}: "
                f"loss = {rng.random():.3f} ({rng.random():.3f} sec/step), throughput "
                f"{rng.random() * 900:.1f} samples/s"
            )
    return ("\n".join(parts) + "\n").encode()


def generate(root: Path, scale: float, seed: int) -> list[tuple[Path, str]]:
    rng = random.Random(seed)
    excerpts = _excerpts()
    chunk = [_training_chunk(rng, 4000, rank_prefix=bool(i % 2)) for i in range(6)]  # ~1 MB each, reused
    files: list[tuple[Path, str]] = []

    def write(name: str, megabytes: float) -> None:
        failure, reason = rng.choice(excerpts)
        path = root / name
        with open(path, "wb") as f:
            written = 0
            target = int(megabytes * 1e6)
            while written < target:
                piece = rng.choice(chunk)
                f.write(piece)
                written += len(piece)
            f.write(failure)
        files.append((path, reason))

    for i in range(max(1, int(40 * scale))):
        write(f"train_{i:03d}.log", rng.uniform(2, 40))
    for i in range(max(1, int(2 * scale))):
        write(f"huge_{i:02d}.log", rng.uniform(150, 250))
    for i in range(max(1, int(2000 * scale))):
        failure, reason = rng.choice(excerpts)
        path = root / f"small_{i:04d}.log"
        path.write_bytes(chunk[i % len(chunk)][: rng.randrange(4_000, 40_000)] + b"\n" + failure)
        files.append((path, reason))
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the default corpus (~1.4 GB on disk)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    sigs = load_signatures()
    with tempfile.TemporaryDirectory(prefix="gca-classify-speed-") as tmp:
        t0 = time.perf_counter()
        files = generate(Path(tmp), args.scale, args.seed)
        print(f"generated {len(files)} files in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        rows = []
        groups = {"long (2-40 MB)": "train_", "huge (150-250 MB)": "huge_", "small (4-40 KB)": "small_"}
        total = {"files": 0, "disk": 0, "read": 0, "seconds": 0.0, "right": 0}
        for label, prefix in groups.items():
            group = [(p, r) for p, r in files if p.name.startswith(prefix)]
            disk = sum(os.path.getsize(p) for p, _ in group)
            read = right = 0
            t = time.perf_counter()
            for path, reason in group:
                result = classify_file(path, sigs)
                read += result.bytes_read or 0
                right += result.reason == reason
            seconds = time.perf_counter() - t
            rows.append((label, len(group), disk, read, seconds, right))
            for key, value in zip(
                ("files", "disk", "read", "seconds", "right"), (len(group), disk, read, seconds, right), strict=True
            ):
                total[key] += value
        rows.append(("all", total["files"], total["disk"], total["read"], total["seconds"], total["right"]))
    print(
        f"Python {platform.python_version()}, {os.cpu_count()} cores, head {HEAD_BYTES >> 20} MiB + tail "
        f"{TAIL_BYTES >> 20} MiB\n"
    )
    print("| logs | files | on disk MB | read MB | seconds | disk MB/s | read MB/s | files/s | right reason |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, n, disk, read, seconds, right in rows:
        print(
            f"| {label} | {n} | {disk / 1e6:.0f} | {read / 1e6:.0f} | {seconds:.1f} | {disk / 1e6 / seconds:.0f} | "
            f"{read / 1e6 / seconds:.0f} | {n / seconds:.0f} | {right}/{n} |"
        )


if __name__ == "__main__":
    main()
