"""stdout/stderr text of failed attempts, one generator per failure reason.

Contract: `render(reason, ctx, rng)` returns `(stdout, stderr)` for one failed
attempt whose root cause is `reason` (a domain.md taxonomy id listed in
`model.REASON_CATEGORY`). The text imitates real training jobs and carries
the noise a classifier must survive (input-formats.md section 1): progress
bars redrawn with carriage returns and glued to the next line, `[rankN]:`
prefixes from several ranks, chained exceptions whose first traceback is the
root cause, launcher summaries (torchrun's ChildFailedError, mpirun) and
NCCL timeouts that are only a consequence. A failure that strikes once training
runs first prints the attempt's training speed (`LogContext.speed`, rendered by
training_speed.py). Deterministic given the Generator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpucluster_analysis.synth.training_speed import AttemptSpeed
from gpucluster_analysis.synth.training_speed import render as render_speed


@dataclass(frozen=True)
class LogContext:
    job_id: str
    attempt: int  # position in the job log's attempts list
    gpus: int
    hosts: tuple[str, ...]  # machine ids, e.g. ("m12", "m40")
    user: str
    elapsed_s: int  # seconds from start to the failure
    speed: AttemptSpeed | None = None  # the training speed it prints before failing (reasons in TRAINED_REASONS)


def _pick(rng: np.random.Generator, options: list[str] | tuple[str, ...]) -> str:
    return options[int(rng.integers(len(options)))]


_SCRIPTS = ("train.py", "main.py", "run_pretraining.py", "train_imagenet.py", "trainer.py", "lm_train.py")
_FRAMEWORK_FRAMES = (
    (
        '/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", line 1518, in _wrapped_call_impl',
        "return self._call_impl(*args, **kwargs)",
    ),
    (
        '/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", line 1527, in _call_impl',
        "return forward_call(*args, **kwargs)",
    ),
    (
        '/usr/local/lib/python3.10/dist-packages/torch/nn/parallel/distributed.py", line 1519, in forward',
        "else self._run_ddp_forward(*inputs, **kwargs)",
    ),
)


def _preamble(ctx: LogContext, rng: np.random.Generator) -> list[str]:
    script = _pick(rng, _SCRIPTS)
    lines = [
        f"Container: container_e{int(rng.integers(10, 99))}_{ctx.job_id.removeprefix('application_')}"
        f"_{ctx.attempt + 1:02d}_000001 on {ctx.hosts[0] if ctx.hosts else 'unknown'}",
        f"LogType: stdout  User: {ctx.user}",
        f"+ python {script} --config configs/{_pick(rng, ('resnet50', 'bert_base', 'seq2seq', 'lstm_lm', 'vgg16'))}"
        f".yaml --batch-size {int(rng.choice([32, 64, 128, 256]))}",
        f"world_size={ctx.gpus} local_rank=0 master_addr={ctx.hosts[0] if ctx.hosts else 'localhost'}",
    ]
    return lines


def _training(ctx: LogContext, rng: np.random.Generator, glue_last: bool = True) -> str:
    """The training output before the failure: the speed lines of the attempt's format
    (training_speed.render); a progress bar's last redraw has no newline, so the next line
    glues to it. Empty when the attempt prints no speed."""
    return "" if ctx.speed is None else render_speed(ctx.speed, rng, glue_last)


def _traceback(rng: np.random.Generator, final_frames: list[tuple[str, str]], script: str | None = None) -> list[str]:
    script = script or _pick(rng, _SCRIPTS)
    lines = ["Traceback (most recent call last):"]
    lines.append(f'  File "/job/src/{script}", line {int(rng.integers(150, 400))}, in <module>')
    lines.append("    main()")
    lines.append(f'  File "/job/src/{script}", line {int(rng.integers(60, 149))}, in main')
    lines.append("    train(cfg, model, loaders)")
    for where, code in final_frames:
        lines.append(f'  File "{where}')
        lines.append(f"    {code}")
    return lines


def _ranked(lines: list[str], rank: int) -> list[str]:
    return [f"[rank{rank}]: {ln}" for ln in lines]


def _torchrun_summary(
    ctx: LogContext, rng: np.random.Generator, exitcode: int, rank: int, traceback: str | None = None
) -> list[str]:
    host = ctx.hosts[0] if ctx.hosts else "localhost"
    pid = int(rng.integers(1000, 99999))
    traceback = traceback.format(pid=pid) if traceback else None
    return [
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", line 797, in run',
        "    elastic_launch(",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        f"{_pick(rng, _SCRIPTS)} FAILED",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        f"  time      : 2017-11-{int(rng.integers(1, 28)):02d}_{int(rng.integers(0, 24)):02d}"
        f":{int(rng.integers(0, 60)):02d}:{int(rng.integers(0, 60)):02d}",
        f"  host      : {host}",
        f"  rank      : {rank} (local_rank: {rank % 8})",
        f"  exitcode  : {exitcode} (pid: {pid})",
        "  error_file: <N/A>",
        f"  traceback : {traceback or 'To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html'}",
        "============================================================",
    ]


def _gib(rng: np.random.Generator, lo: float, hi: float) -> str:
    return f"{float(rng.uniform(lo, hi)):.2f} GiB"


def _cuda_oom(ctx: LogContext, rng: np.random.Generator) -> tuple[str, str]:
    out = "\n".join(_preamble(ctx, rng)) + "\n" + _training(ctx, rng)
    gpu = int(rng.integers(0, 8))
    if rng.random() < 0.25:
        err = _traceback(
            rng,
            [
                (
                    '/usr/local/lib/python3.6/dist-packages/tensorflow/python/client/session.py", line 1350, '
                    "in _do_call",
                    "raise type(e)(node_def, op, message)",
                )
            ],
        )
        err.append(
            f"tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape"
            f"[{int(rng.choice([32, 64, 128]))},{int(rng.choice([256, 512, 1024]))},56,56] and type float on "
            f"/job:localhost/replica:0/task:0/device:GPU:{gpu} by allocator GPU_0_bfc"
        )
        err.append("\t [[{{node conv2d_41/Conv2D}}]]")
        return out, "\n".join(err) + "\n"
    frames = list(_FRAMEWORK_FRAMES[: int(rng.integers(1, 4))])
    frames.append(
        (
            '/usr/local/lib/python3.10/dist-packages/torch/nn/functional.py", line 2573, in layer_norm',
            "return torch.layer_norm(input, normalized_shape, weight, bias, eps, torch.backends.cudnn.enabled)",
        )
    )
    tb = _traceback(rng, frames)
    total = float(rng.choice([11.17, 15.78, 23.65, 31.74]))
    tb.append(
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {_gib(rng, 0.1, 4.0)}. "
        f"GPU {gpu} has a total capacity of {total:.2f} GiB of which {float(rng.uniform(0.01, 1.0)):.2f} GiB is free. "
        f"Including non-PyTorch memory, this process has {total - 0.5:.2f} GiB memory in use. Of the allocated memory "
        f"{_gib(rng, 5, total - 1)} is allocated by PyTorch, and {_gib(rng, 0.1, 1.5)} is reserved by "
        "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
        "fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )
    err = []
    if ctx.gpus > 1:
        rank = int(rng.integers(0, ctx.gpus))
        err += _ranked(tb, rank)
        err += _torchrun_summary(ctx, rng, 1, rank)
    else:
        err += tb
    return out, "\n".join(err) + "\n"


def _host_oom(ctx: LogContext, rng: np.random.Generator) -> tuple[str, str]:
    out = "\n".join(_preamble(ctx, rng)) + "\n" + _training(ctx, rng, glue_last=False)
    variant = int(rng.integers(0, 3))
    pid = int(rng.integers(1000, 99999))
    if variant == 0:
        err = [f"/bin/bash: line 1: {pid} Killed                  python {_pick(rng, _SCRIPTS)} --config job.yaml"]
        out += "Container exited with a non-zero exit code 137\n"
    elif variant == 1:
        err = ["Killed"]
        out += "Exit code: 137\nContainer killed on request. Exit code is 137\n"
    else:
        rank = int(rng.integers(0, max(1, ctx.gpus)))
        err = [
            f"WARNING:torch.distributed.elastic.multiprocessing.api:Sending process {pid + 1} closing signal SIGTERM"
        ]
        err += _torchrun_summary(ctx, rng, -9, rank, traceback="Signal 9 (SIGKILL) received by PID {pid}")
    return out, "\n".join(err) + "\n"


def _import_error(ctx: LogContext, rng: np.random.Generator) -> tuple[str, str]:
    out = "\n".join(_preamble(ctx, rng)) + "\n"
    module = _pick(
        rng,
        (
            "apex",
            "horovod.torch",
            "timm",
            "sentencepiece",
            "fairseq",
            "pycocotools",
            "cv2",
            "transformers.models.llama",
        ),
    )
    script = _pick(rng, _SCRIPTS)
    err = [
        "Traceback (most recent call last):",
        f'  File "/job/src/{script}", line {int(rng.integers(3, 30))}, in <module>',
        f"    import {module}",
        f"ModuleNotFoundError: No module named '{module.split('.')[0]}'",
    ]
    if rng.random() < 0.3:
        err[-2:] = [
            f"    from {module} import amp",
            f"ImportError: cannot import name 'amp' from '{module}' "
            f"(/usr/local/lib/python3.10/dist-packages/{module}/__init__.py)",
        ]
    if ctx.gpus > 1:
        err = [ln for r in range(min(ctx.gpus, 3)) for ln in _ranked(err, r)]
    return out, "\n".join(err) + "\n"


def _key_error(ctx: LogContext, rng: np.random.Generator) -> tuple[str, str]:
    out = "\n".join(_preamble(ctx, rng)) + "\n" + f"=> loading checkpoint '/hdfs/{ctx.user}/ckpt/model_best.pth.tar'\n"
    key = _pick(
        rng,
        (
            "model_state_dict",
            "optimizer",
            "epoch",
            "module.encoder.layer.11.output.dense.weight",
            "best_acc1",
            "vocab.pt",
        ),
    )
    err = _traceback(
        rng, [('/job/src/utils/checkpoint.py", line 48, in load_checkpoint', f"model.load_state_dict(state['{key}'])")]
    )
    err.append(f"KeyError: '{key}'")
    if rng.random() < 0.6:
        err += [
            "",
            "During handling of the above exception, another exception occurred:",
            "",
            *_traceback(
                rng,
                [
                    (
                        '/job/src/utils/checkpoint.py", line 55, in load_checkpoint',
                        'raise RuntimeError(f"failed to restore from {path}")',
                    )
                ],
            ),
            f"RuntimeError: failed to restore from /hdfs/{ctx.user}/ckpt/model_best.pth.tar",
        ]
    return out, "\n".join(err) + "\n"


def _file_not_found(ctx: LogContext, rng: np.random.Generator) -> tuple[str, str]:
    out = "\n".join(_preamble(ctx, rng)) + "\n" + _training(ctx, rng)
    path = _pick(
        rng,
        (
            f"/hdfs/{ctx.user}/data/imagenet/val_map.txt",
            f"/hdfs/{ctx.user}/data/wmt16/train.de-en.bin",
            "/philly/data/coco/annotations/instances_val2017.json",
            f"/hdfs/{ctx.user}/features/fbank_{int(rng.integers(1, 99))}.ark",
        ),
    )
    err = _traceback(rng, [('/job/src/data/dataset.py", line 77, in __init__', "with open(self.index_file) as f:")])
    err.append(f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'")
    if rng.random() < 0.4:
        err += [
            "",
            "The above exception was the direct cause of the following exception:",
            "",
            *_traceback(
                rng,
                [
                    (
                        '/job/src/data/loader.py", line 31, in build_loader',
                        'raise ValueError(f"cannot build dataset {name}") from e',
                    )
                ],
            ),
            "ValueError: cannot build dataset validation",
        ]
    return out, "\n".join(err) + "\n"


def _nan_loss(ctx: LogContext, rng: np.random.Generator) -> tuple[str, str]:
    lines = _preamble(ctx, rng)
    if training := _training(ctx, rng, glue_last=False):
        lines.append(training.removesuffix("\n"))
    step = int(rng.integers(1000, 90000))
    for i in range(int(rng.integers(3, 7))):
        lines.append(
            f"| epoch {int(rng.integers(1, 40)):03d} | step {step + 100 * i} | loss "
            f"{float(rng.uniform(2, 9)):.3f} | lr {float(rng.uniform(1e-5, 1e-3)):.2e}"
        )
    lines.append(
        f"| epoch {int(rng.integers(1, 40)):03d} | step {step + 900} | loss nan | lr "
        f"{float(rng.uniform(1e-5, 1e-3)):.2e}"
    )
    variant = int(rng.integers(0, 4))
    if variant == 3:
        # No traceback at all: the training loop notices and exits on its own.
        lines.append(f"ERROR: loss became NaN at step {step + 900} (grad norm inf); exiting with status 1")
        return "\n".join(lines) + "\n", f"[rank0]: loss is nan at step {step + 900}, aborting\n"
    if variant == 0:
        err = _traceback(
            rng,
            [
                (
                    '/usr/local/lib/python3.10/dist-packages/fairseq/optim/dynamic_loss_scaler.py", line 61, '
                    "in check_overflow",
                    "raise FloatingPointError(",
                )
            ],
        )
        err.append(
            "FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding. Try "
            "lowering the learning rate, using gradient clipping or increasing the batch size."
        )
    elif variant == 1:
        err = _traceback(
            rng,
            [
                (
                    '/usr/local/lib/python3.10/dist-packages/torch/autograd/__init__.py", line 251, in backward',
                    "Variable._execution_engine.run_backward(",
                )
            ],
        )
        err.append("RuntimeError: Function 'LogSoftmaxBackward0' returned nan values in its 0th output.")
    else:
        lines.append(f"WARNING: non-finite loss at step {step + 900}, gradients are inf/nan; stopping")
        err = _traceback(
            rng,
            [('/job/src/trainer.py", line 211, in train_step', 'raise ValueError("Loss is NaN; the model diverged")')],
        )
        err.append("ValueError: Loss is NaN; the model diverged")
    return "\n".join(lines) + "\n", "\n".join(err) + "\n"


def _nccl_error(ctx: LogContext, rng: np.random.Generator) -> tuple[str, str]:
    out = "\n".join(_preamble(ctx, rng)) + "\n" + _training(ctx, rng, glue_last=False)
    seq = int(rng.integers(1000, 900000))
    ranks = sorted({int(r) for r in rng.integers(0, max(2, ctx.gpus), size=min(3, max(2, ctx.gpus)))})
    err: list[str] = []
    for r in ranks:
        err.append(
            f"[rank{r}]:[E ProcessGroupNCCL.cpp:{int(rng.choice([563, 616, 1537]))}] [Rank {r}] Watchdog caught "
            f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, "
            f"NumelIn={int(rng.integers(1, 30_000_000))}, NumelOut=same, Timeout(ms)=1800000) ran for "
            f"{1800000 + int(rng.integers(1, 900))} milliseconds before timing out."
        )
    if rng.random() < 0.5:
        err.append(
            f"[rank{ranks[0]}]: RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, "
            "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1"
        )
        err.append(
            f"[rank{ranks[0]}]: ncclSystemError: System call (e.g. socket, malloc) or external library call "
            "failed or device error."
        )
    err.append(
        f"[rank{ranks[-1]}]:[E ProcessGroupNCCL.cpp:1182] [Rank {ranks[-1]}] NCCL watchdog thread terminated "
        "with exception: NCCL communicator was aborted"
    )
    err.append("terminate called after throwing an instance of 'c10::DistBackendError'")
    err += _torchrun_summary(ctx, rng, -6, ranks[0])
    return out, "\n".join(err) + "\n"


def _gpu_hw(ctx: LogContext, rng: np.random.Generator) -> tuple[str, str]:
    out = "\n".join(_preamble(ctx, rng)) + "\n" + _training(ctx, rng, glue_last=False)
    bus = _pick(rng, ("3b", "5e", "86", "af", "d8", "1a", "1c", "88"))
    pid = int(rng.integers(1000, 99999))
    variant = int(rng.integers(0, 3))
    stamp = f"[{float(rng.uniform(1e5, 9e6)):.6f}]"
    if variant == 0:
        kernel = f"{stamp} NVRM: Xid (PCI:0000:{bus}:00): 79, pid={pid}, GPU has fallen off the bus."
    elif variant == 1:
        kernel = (
            f"{stamp} NVRM: Xid (PCI:0000:{bus}:00): 48, pid={pid}, An uncorrectable double bit error (DBE) has been "
            "detected on GPU in the framebuffer at partition 0, subpartition 0."
        )
    else:
        kernel = (
            f"{stamp} NVRM: Xid (PCI:0000:{bus}:00): 74, pid={pid}, NVLink: fatal error detected on link 2(0x0, "
            "0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"
        )
    err = [kernel]
    tb = _traceback(rng, [('/job/src/trainer.py", line 140, in train_step', "loss.backward()")])
    tb.append(
        _pick(
            rng,
            (
                "RuntimeError: CUDA error: unspecified launch failure",
                "RuntimeError: CUDA error: an illegal memory access was encountered",
                "RuntimeError: CUDA error: uncorrectable ECC error encountered",
            ),
        )
    )
    tb.append(
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect."
    )
    if ctx.gpus > 1:
        rank = int(rng.integers(0, ctx.gpus))
        err += _ranked(tb, rank)
        other = (rank + 1) % ctx.gpus
        err.append(
            f"[rank{other}]:[E ProcessGroupNCCL.cpp:616] [Rank {other}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={int(rng.integers(100, 99999))}, OpType=ALLREDUCE, Timeout(ms)=1800000) ran "
            "for 1800377 milliseconds before timing out."
        )
        err += _torchrun_summary(ctx, rng, 1, rank)
    else:
        err += tb
    return out, "\n".join(err) + "\n"


def _mpi_failure(ctx: LogContext, rng: np.random.Generator) -> tuple[str, str]:
    out = "\n".join(_preamble(ctx, rng)) + "\n" + _training(ctx, rng, glue_last=False)
    rank = int(rng.integers(0, max(2, ctx.gpus)))
    host = ctx.hosts[-1] if ctx.hosts else "localhost"
    variant = int(rng.integers(0, 2))
    rule = "-" * 74
    if variant == 0:
        err = [
            rule,
            f"MPI_ABORT was invoked on rank {rank} in communicator MPI_COMM_WORLD",
            f"with errorcode {int(rng.integers(1, 5))}.",
            "",
            "NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.",
            "You may or may not see output from other processes, depending on",
            "exactly when Open MPI kills them.",
            rule,
        ]
    else:
        err = [
            rule,
            "ORTE has lost communication with a remote daemon.",
            "",
            f"  HNP daemon   : [[{int(rng.integers(10000, 65000))},0],0] on node "
            f"{ctx.hosts[0] if ctx.hosts else 'localhost'}",
            f"  Remote daemon: [[{int(rng.integers(10000, 65000))},0],1] on node {host}",
            "",
            "This is usually due to either a failure of the TCP network",
            "connection to the node, or possibly an internal failure of",
            "the daemon itself. We cannot recover from this failure, and",
            "therefore will terminate the job.",
            rule,
        ]
    err.append(
        "mpirun detected that one or more processes exited with non-zero status, thus causing the job to be "
        "terminated. The first process to do so was:\n\n  Process name: "
        f"[[{int(rng.integers(10000, 65000))},1],{rank}]\n  Exit code:    1"
    )
    return out, "\n".join(err) + "\n"


def _node_fail(ctx: LogContext, rng: np.random.Generator) -> tuple[str, str]:
    host = ctx.hosts[0] if ctx.hosts else f"m{int(rng.integers(0, 500))}"
    out = f"Launching container for {ctx.job_id} attempt {ctx.attempt}\n"
    err = [
        f"Container launch failed for container_e{int(rng.integers(10, 99))}_{ctx.job_id.removeprefix('application_')}"
        f"_{ctx.attempt + 1:02d}_000001 : "
        f"Node {host}:{int(rng.integers(30000, 60000))} lost: NodeManager heartbeat timed out after 600000 ms",
        "Diagnostics: Container released on a *lost* node",
    ]
    return out, "\n".join(err) + "\n"


_RENDERERS: dict[str, Callable[[LogContext, np.random.Generator], tuple[str, str]]] = {
    "cuda_oom": _cuda_oom,
    "host_oom": _host_oom,
    "import_error": _import_error,
    "key_error": _key_error,
    "file_not_found": _file_not_found,
    "nan_loss": _nan_loss,
    "nccl_error": _nccl_error,
    "gpu_hw": _gpu_hw,
    "mpi_failure": _mpi_failure,
    "node_fail": _node_fail,
}


def render(reason: str, ctx: LogContext, rng: np.random.Generator) -> tuple[str, str]:
    """(stdout, stderr) of one failed attempt whose root cause is `reason`."""
    return _RENDERERS[reason](ctx, rng)
