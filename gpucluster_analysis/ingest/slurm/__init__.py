"""Slurm: sacct accounting dumps (read exactly or typed in bulk, then linked), scontrol job snapshots,
squeue snapshots, node lists (sinfo, scontrol show node), sacctmgr limits, and the hostlist syntax they share."""
