"""Synthetic cluster traces in the Philly formats, with exact ground truth.

`generate_trace(out, jobs=..., machines=..., days=..., seed=..., log=...)`
simulates a gang-scheduled GPU cluster (VC quotas, locality, failures and
retries, kills) and writes what Philly publishes: `cluster_job_log`,
`cluster_machine_list`, per-minute `cluster_gpu_util`, `cluster_cpu_util`
and `cluster_mem_util`, the stdout/stderr of failed attempts under `logs/`
(with the training speed they print; a few machines run slower by a known
factor), and `truth.json` with the jobs.csv every correct reader must derive
from them and the slow machines (docs/synth.md). The library reports progress only through `log`; it
never prints. Bad arguments or an unsafe output directory raise InputError.

Pipeline: workload (who submits what) -> scheduler (what really happened) ->
record (what the job log says) -> writers/telemetry (the files) -> truth.
"""

from gpucluster_analysis.synth.trace import SYNTH_VERSION, SynthResult, generate_trace

__all__ = ["SYNTH_VERSION", "SynthResult", "generate_trace"]
