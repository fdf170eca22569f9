"""Training-speed extraction: MB/s and files/s of `read_speed` on realistic job logs.

Writes a corpus of job logs into a temporary directory, then reads the speed of every
file with the shipped patterns. Each log mixes ordinary noise (NCCL INFO chatter, logger
lines with timestamps and ranks, warnings) with the speed lines of one format:

* HF Trainer: a tqdm bar redrawn with \\r, step dicts glued to it, an unnamed eval bar
  on the same line, the final train_samples_per_second dict and table;
* PyTorch Lightning: one \\r-redrawn bar per epoch with v_num, validation bars;
* Megatron-LM, Megatron-DeepSpeed with DeepSpeed's timer lines, nanoGPT, torchtitan,
  Keras model.fit; and logs with no speed at all.

Sizes: many small logs (5-40 KB, like the synthetic trace's failure logs), medium ones
(0.1-2 MB) and big ones (5-10 MB; over 5 MiB only a 1 MiB head and a 4 MiB tail are
read). Every log's format is known, so the run also counts how many got the expected
winning pattern. Prints a Markdown table to paste into RESULTS.md.

    python benchmarks/speed_extract.py               # ~250 MB on disk
    python benchmarks/speed_extract.py --scale 0.25  # a quicker look
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gpucluster_analysis.classify.engine import HEAD_BYTES, TAIL_BYTES
from gpucluster_analysis.speed import default_patterns, read_speed


def _noise(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.4:
            out.append(
                f"gpu-node-{rng.randrange(64):02d}:{rng.randrange(99999)}:{rng.randrange(99999)} [{rng.randrange(8)}] "
                f"NCCL INFO Channel {rng.randrange(32):02d}/0 : 0[0] -> 1[0] [send] via NET/IB/{rng.randrange(4)}"
            )
        elif r < 0.7:
            out.append(
                f"[2024-05-01 12:{rng.randrange(60):02d}:{rng.randrange(60):02d},123] [INFO] [logging.py:96:log_dist] "
                f"[Rank 0] step={rng.randrange(10**5)}, skipped=0, lr=[{rng.random() * 1e-4:.3e}], mom=[(0.9, 0.999)]"
            )
        elif r < 0.85:
            out.append(
                f"[rank{rng.randrange(8)}]: /usr/lib/python3.10/site-packages/torch/utils/checkpoint.py:429: "
                "UserWarning: "
                "torch.utils.checkpoint: please pass in use_reentrant=True or use_reentrant=False explicitly."
            )
        else:
            out.append(
                f"I0501 12:00:{rng.randrange(60):02d}.{rng.randrange(10**6):06d} 140213 trainer.py:412] "
                f"saving checkpoint to /ckpt/step_{rng.randrange(10**5)}"
            )
    return out


def _bar(desc: str, n: int, total: int, sec: int, rate: float, post: str = "") -> str:
    pct = 100 * n // total
    return (
        f"{desc}{pct:3d}%|{'█' * (pct // 10):10s}| {n}/{total} "
        f"[{sec // 60:02d}:{sec % 60:02d}<{(total - n) // 60:02d}:00, {rate:.2f}it/s{post}]"
    )


def hf(rng: random.Random, k: int) -> list[str]:
    states = [_bar(" ", 10 * k + j, 100_000, 5 * k + j, rng.uniform(1.8, 2.2)) for j in range(10)]
    evals = "\r".join(_bar("", j * 7, 63, j, 11.0) for j in range(1, 10))
    line = "\r".join(states) + (f"\r{evals}\r{states[-1]}" if k % 20 == 0 else "")
    return [
        line + f"{{'loss': {rng.uniform(0.5, 3):.4f}, 'grad_norm': {rng.uniform(0, 5):.3f}, 'learning_rate': 5e-05, "
        f"'epoch': {k / 1000:.3f}}}"
    ]


def hf_end() -> list[str]:
    return [
        "{'train_runtime': 5000.1, 'train_samples_per_second': 15.997, 'train_steps_per_second': 2.0, "
        "'train_loss': 2.4, 'epoch': 1.0}",
        "***** train metrics *****",
        "  train_samples_per_second =     15.997",
    ]


def lightning(rng: random.Random, k: int) -> list[str]:
    bar = "\r".join(
        _bar(f"Epoch {k}: ", j, 1000, j // 3, rng.uniform(3, 3.4), f", loss={rng.random():.3f}, v_num=7")
        for j in range(0, 1000, 25)
    )
    val = "\r".join(_bar("Validation DataLoader 0: ", j, 100, j // 10, 20.0) for j in range(0, 101, 20))
    return [bar, val]


def megatron(rng: random.Random, k: int) -> list[str]:
    return [
        f" [2024-04-06 03:02:12] iteration {k:8d}/  500000 | consumed samples: {128 * k:12d} | elapsed time "
        "per iteration (ms): "
        f"{rng.uniform(5300, 5500):.1f} | throughput per GPU (TFLOP/s/GPU): {rng.uniform(235, 245):.1f} | "
        "learning rate: 1.420000E-05 | "
        "global batch size:   128 | lm loss: 1.818812E+00 | loss scale: 1.0 | grad norm: 1.300 | number of "
        "skipped iterations:   0 |"
    ]


def megatron_deepspeed(rng: random.Random, k: int) -> list[str]:
    return [
        f"[2024-03-07 15:27:17,188] [INFO] [timer.py:260:stop] epoch=0/micro_step={k}/global_step={k}, "
        "RunningAvgSamplesPerSec=53.1, "
        f"CurrSamplesPerSec={rng.uniform(52, 55):.4f}, MemAllocated=20.1GB, MaxMemAllocated=30.2GB",
        f" iteration {k:8d}/ 1000 | consumed samples: {768 * k:12d} | elapsed time per iteration (ms): "
        "14287.5 | samples per second: 53.753 | "
        f"tokens per gpu per second (tgs): 1146.733 | TFLOPs: {rng.uniform(69, 71):.2f} |",
    ]


def nanogpt(rng: random.Random, k: int) -> list[str]:
    return [
        f"iter {k}: loss {rng.uniform(2, 4):.4f}, time {rng.uniform(880, 900):.2f}ms, mfu {rng.uniform(16, 17):.2f}%"
    ]


def torchtitan(rng: random.Random, k: int) -> list[str]:
    return [
        f"[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: {k}  loss:  6.1384  memory: 49.66GiB(52.28%)  "
        f"tps: 5,{rng.randrange(800, 900)}  tflops: {rng.uniform(330, 340):.2f}  mfu: 34.29%"
    ]


def keras(rng: random.Random, k: int) -> list[str]:
    return [
        f"Epoch {k}/1000",
        f"423/423 [==============================] - 192s {rng.randrange(440, 460)}ms/step - loss: 1.8386 - acc: 0.61",
    ]


def nothing(rng: random.Random, k: int) -> list[str]:
    return []


FORMATS: dict[str, tuple[Callable[[random.Random, int], list[str]], str | None]] = {
    "hf": (hf, "hf_train_samples_per_second"),
    "lightning": (lightning, "lightning_tqdm_bar"),
    "megatron": (megatron, "megatron_tflops_per_gpu"),
    "megatron_deepspeed": (megatron_deepspeed, "megatron_deepspeed_tflops"),
    "nanogpt": (nanogpt, "nanogpt_ms_per_iter"),
    "torchtitan": (torchtitan, "torchtitan_tflops"),
    "keras": (keras, "keras_time_per_step"),
    "none": (nothing, None),
}


def write_log(path: Path, fmt: str, size: int, rng: random.Random) -> None:
    make, _ = FORMATS[fmt]
    parts: list[str] = []
    written, k = 0, 0
    while written < size:
        k += 1
        chunk = _noise(rng, rng.randrange(2, 12)) + make(rng, k)
        text = "\n".join(chunk) + "\n"
        parts.append(text)
        written += len(text.encode())
    if fmt == "hf":
        parts.append("\n".join(hf_end()) + "\n")
    path.write_text("".join(parts), encoding="utf-8")


def generate(root: Path, scale: float, seed: int) -> list[tuple[Path, str, str]]:
    rng = random.Random(seed)
    files = []
    groups = [
        ("small (5-40 KB)", int(2000 * scale), 5_000, 40_000),
        ("medium (0.1-2 MB)", int(60 * scale), 100_000, 2_000_000),
        ("big (5-10 MB)", max(1, int(12 * scale)), 5_000_000, 10_000_000),
    ]
    for label, count, lo, hi in groups:
        for i in range(max(1, count)):
            fmt = list(FORMATS)[i % len(FORMATS)]
            path = root / f"{label.split()[0]}_{i:04d}_{fmt}.log"
            write_log(path, fmt, rng.randrange(lo, hi), rng)
            files.append((path, fmt, label))
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the default corpus (~250 MB on disk)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    default_patterns()  # load and validate once, outside the timing
    with tempfile.TemporaryDirectory(prefix="gca-speed-") as tmp:
        t0 = time.perf_counter()
        files = generate(Path(tmp), args.scale, args.seed)
        print(f"generated {len(files)} files in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        rows = []
        total = {"files": 0, "disk": 0, "read": 0, "seconds": 0.0, "right": 0}
        for label in dict.fromkeys(label for _, _, label in files):
            group = [(p, fmt) for p, fmt, lab in files if lab == label]
            disk = sum(os.path.getsize(p) for p, _ in group)
            read = right = 0
            t = time.perf_counter()
            for path, fmt in group:
                summary = read_speed(path)
                read += (
                    summary.bytes_read
                    if summary is not None and summary.bytes_read
                    else min(os.path.getsize(path), HEAD_BYTES + TAIL_BYTES)
                )
                right += (summary.pattern_id if summary else None) == FORMATS[fmt][1]
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
    print("| logs | files | on disk MB | read MB | seconds | read MB/s | files/s | ms/file | right winner |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, n, disk, read, seconds, right in rows:
        print(
            f"| {label} | {n} | {disk / 1e6:.1f} | {read / 1e6:.1f} | {seconds:.2f} | {read / 1e6 / seconds:.0f} | "
            f"{n / seconds:.0f} | {1000 * seconds / n:.2f} | {right}/{n} |"
        )


if __name__ == "__main__":
    main()
