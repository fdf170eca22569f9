#!/bin/bash
# A real Slurm on this machine, a few minutes of GPU jobs, and gca's wait split checked
# against Slurm's own pending reasons (issue #15, part 4).
#
#   scripts/slurm_live.sh [OUT_DIR]          (as root, on Debian 12; default OUT_DIR ./slurm-live)
#
# Installs slurm-wlm, slurmdbd, mariadb-server and munge where missing, then starts, from a
# temporary directory and on 127.0.0.1 only: munged, MariaDB (its own datadir), slurmdbd,
# slurmctld and five slurmd (gpu1..gpu5, 4 fake GPUs each). A system Slurm, munge or MariaDB
# is not touched: every file is in the temporary directory, SLURM_CONF points at it, and
# ports are 16817-16819, 17001-17005 and 13306. Accounts carry GrpTRES=gres/gpu=N, the QOS
# "capped" MaxTRESPerUser=gres/gpu=2; jobs are submitted as the Linux users gcauser1..4.
# squeue's pending reasons are logged every 2 s as README's logger does. The dumps
# (sacct.txt, nodes.txt, assoc.txt, qos.txt, squeue.log) go to OUT_DIR, then gca ingests
# them, writes its report (OUT_DIR/report, OUT_DIR/summary.json) and
# scripts/slurm_live_compare.py prints gca's causes beside Slurm's reasons per job.
# Every process it started is stopped by PID on exit.
#
# Environment: GCA (default "gca") and PYTHON (default python3) name the commands to run;
# KEEP_WORK=1 keeps the temporary directory (configs, daemon logs) for a look afterwards.
set -euo pipefail

STARTED=$(date +%s)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$(realpath -m "${1:-slurm-live}")
GCA=${GCA:-gca}
PYTHON=${PYTHON:-python3}
export TZ=UTC  # sacct prints times in the local zone; one zone for every daemon and dump

die() { echo "slurm_live: error: $*" >&2; exit 1; }
say() { echo "slurm_live: $(date -u +%H:%M:%S) $*" >&2; }

[[ $(id -u) == 0 ]] || die "run as root (it starts daemons, creates users gcauser1..4 and installs packages)"
for port in 13306 16817 16819 17001 17002 17003 17004 17005; do
    # bash's /dev/tcp connects: a listener there means another service holds the port
    if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then die "port $port on 127.0.0.1 is in use"; fi
done

# --- packages ---------------------------------------------------------------------------
export PATH=$PATH:/usr/sbin  # the daemons live there, outside some root shells' PATH
need=()
for pair in slurmctld:slurm-wlm slurmd:slurm-wlm sbatch:slurm-wlm slurmdbd:slurmdbd mariadbd:mariadb-server munged:munge; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
done
if ((${#need[@]})); then
    say "installing ${need[*]}"
    # Debian starts services from maintainer scripts; policy-rc.d 101 stops that, so that
    # no system daemon runs that this script did not start (kept if the machine has one).
    made_policy=
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && made_policy=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        slurm-wlm slurmdbd mariadb-server munge >&2 || { [[ -n $made_policy ]] && rm -f /usr/sbin/policy-rc.d; die "apt-get install failed"; }
    [[ -n $made_policy ]] && rm -f /usr/sbin/policy-rc.d
fi
SLURM_VERSION=$(slurmctld -V)  # sinfo -V would look for a slurm.conf first

# --- users ------------------------------------------------------------------------------
USERS=(gcauser1 gcauser2 gcauser3 gcauser4)
for u in "${USERS[@]}"; do
    id -u "$u" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin "$u"
done

# --- the temporary cluster ---------------------------------------------------------------
W=$(mktemp -d /tmp/gca-slurm-live.XXXXXX)
chmod 755 "$W"  # the job users reach the munge socket and slurm.conf through it
mkdir -p "$W"/{etc,log,run,munge,dev,jobs,spool/ctld} "$OUT"
chmod 1777 "$W/jobs"
HOST=$(hostname -s)
export SLURM_CONF=$W/etc/slurm.conf

PIDS=()       # every daemon started, in start order
LOGGER_PID=
cleanup() {
    local rc=$?
    set +e
    if [[ -n $LOGGER_PID ]]; then kill "$LOGGER_PID" 2>/dev/null; wait "$LOGGER_PID" 2>/dev/null; fi
    # jobs still queued or running (a failed run): cancel them while slurmctld is up, so no
    # slurmstepd outlives its slurmd
    if [[ -n ${CTLD_PID:-} ]] && kill -0 "$CTLD_PID" 2>/dev/null && [[ -n $(squeue -h -o %i 2>/dev/null) ]]; then
        scancel --full $(squeue -h -o %i) 2>/dev/null
        for _ in $(seq 30); do [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break; sleep 1; done
    fi
    local i pid
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do  # the reverse of the start order
        pid=${PIDS[i]}
        kill "$pid" 2>/dev/null || continue
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    if ((rc)) && [[ -d $W/log ]]; then
        for f in "$W"/log/* "$W"/mysql-run/*.log; do echo "--- last lines of $f" >&2; tail -n 15 "$f" >&2; done
    fi
    if [[ -n ${KEEP_WORK:-} ]]; then say "kept $W"; else rm -rf "$W"; fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start() {  # start NAME CMD...: a daemon in the foreground of a background job, its PID kept
    local name=$1; shift
    "$@" >>"$W/log/$name.out" 2>&1 &
    PIDS+=($!)
    eval "${name//-/_}_PID=$!"
}

wait_for() {  # wait_for SECONDS WHAT CMD...: until CMD succeeds, while every daemon lives
    local limit=$1 what=$2 pid; shift 2
    for _ in $(seq $((limit * 2))); do
        "$@" >/dev/null 2>&1 && return 0
        for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null || die "a daemon (PID $pid) died while waiting for $what (logs in $W/log)"; done
        sleep 0.5
    done
    die "$what did not come up within $limit s (logs in $W/log)"
}

say "Slurm: $SLURM_VERSION; work directory $W"

# munge: its own key and socket
dd if=/dev/urandom of="$W/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$W/munge/munge.key"
start MUNGE munged --foreground --force --key-file="$W/munge/munge.key" --socket="$W/munge/socket" \
    --pid-file="$W/run/munged.pid" --log-file="$W/log/munged.log" --seed-file="$W/munge/seed"
wait_for 10 munged test -S "$W/munge/socket"

# MariaDB: a datadir of its own, TCP on 127.0.0.1 only
DB_PASS=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
mkdir -p "$W/mysql" "$W/mysql-run" && chown mysql:mysql "$W/mysql" "$W/mysql-run"  # mariadbd runs as mysql
mariadb-install-db --no-defaults --user=mysql --datadir="$W/mysql" --auth-root-authentication-method=socket \
    --skip-test-db >"$W/log/mariadb-install.log" 2>&1 || die "mariadb-install-db failed (see $W/log/mariadb-install.log)"
start MARIADB mariadbd --no-defaults --user=mysql --datadir="$W/mysql" --socket="$W/mysql-run/sock" \
    --port=13306 --bind-address=127.0.0.1 --pid-file="$W/mysql-run/pid" --log-error="$W/mysql-run/mariadb.log" \
    --skip-name-resolve --innodb-buffer-pool-size=64M
wait_for 60 MariaDB mariadb --no-defaults -S "$W/mysql-run/sock" -u root -e 'SELECT 1'
mariadb --no-defaults -S "$W/mysql-run/sock" -u root -e "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"

# Slurm's configuration
# GPUs without devices: Slurm 22.05 wants character devices in gres.conf's File= (a regular
# file is logged as an error); NVIDIA's major number, never opened (no cgroups, sleep jobs)
for n in 0 1 2 3; do mknod "$W/dev/gpu$n" c 195 "$n"; done
cat > "$W/etc/slurm.conf" <<EOF
ClusterName=gcalive
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=16817
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$W/munge/socket
CredType=cred/munge
StateSaveLocation=$W/spool/ctld
SlurmdSpoolDir=$W/spool/slurmd.%n
SlurmctldPidFile=$W/run/slurmctld.pid
SlurmdPidFile=$W/run/slurmd.%n.pid
SlurmctldLogFile=$W/log/slurmctld.log
SlurmdLogFile=$W/log/slurmd.%n.log
# no cgroups: jobs are sleeps, and a container may have no writable cgroup tree
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
# the nodes claim the CPUs and memory below whatever the host has: GPUs are what runs out
SlurmdParameters=config_overrides
ReturnToService=2
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=16819
# for slurmdbd, the "password" is the munge socket (clients talk to slurmdbd through it)
AccountingStoragePass=$W/munge/socket
AccountingStorageTRES=gres/gpu
AccountingStorageEnforce=associations,limits,qos
JobCompType=jobcomp/none
PriorityType=priority/basic
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=5
KillWait=5
MinJobAge=600
NodeName=gpu[1-5] NodeHostname=$HOST NodeAddr=127.0.0.1 Port=[17001-17005] CPUs=32 RealMemory=256000 Gres=gpu:4 State=UNKNOWN
PartitionName=gpu Nodes=gpu[1-5] Default=YES MaxTime=10 State=UP
EOF
cat > "$W/etc/gres.conf" <<EOF
NodeName=gpu[1-5] Name=gpu File=$W/dev/gpu[0-3]
EOF
cat > "$W/etc/cgroup.conf" <<EOF
CgroupPlugin=autodetect
IgnoreSystemd=yes
EOF
cat > "$W/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$W/munge/socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=16819
SlurmUser=root
LogFile=$W/log/slurmdbd.log
PidFile=$W/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=13306
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
chmod 600 "$W/etc/slurmdbd.conf"
chmod 644 "$W/etc/slurm.conf" "$W/etc/gres.conf" "$W/etc/cgroup.conf"

start SLURMDBD slurmdbd -D
wait_for 60 slurmdbd sacctmgr -n show cluster
sacctmgr -i add cluster gcalive >/dev/null
start CTLD slurmctld -D -c
wait_for 60 slurmctld scontrol ping
for n in 1 2 3 4 5; do
    mkdir -p "$W/spool/slurmd.gpu$n"
    start "SLURMD$n" slurmd -D -N "gpu$n"
done
all_idle() { [[ $(sinfo -h -N -o '%N %T' | grep -c ' idle$') == 5 ]]; }
wait_for 60 "five idle nodes" all_idle

# Limits: two accounts that bursts push over their GPU quota, one roomy enough for the
# 8-GPU job, and a QOS that caps each user at 2 GPUs
sacctmgr -i add qos capped MaxTRESPerUser=gres/gpu=2 >/dev/null
sacctmgr -i add account vision GrpTRES=gres/gpu=6 >/dev/null
sacctmgr -i add account nlp GrpTRES=gres/gpu=8 >/dev/null
sacctmgr -i add account infra GrpTRES=gres/gpu=16 >/dev/null
sacctmgr -i add user gcauser1 account=vision,infra >/dev/null
sacctmgr -i add user gcauser2 account=vision,infra >/dev/null
sacctmgr -i add user gcauser3,gcauser4 account=nlp qos=normal,capped defaultqos=normal >/dev/null
# slurmctld learns associations from slurmdbd: wait until it knows the last one
wait_for 30 "the associations in slurmctld" bash -c "scontrol show assoc_mgr users=gcauser4 flags=assoc | grep -q 'Account=nlp'"
say "cluster up: $(sinfo -h -o '%D nodes, %G')"

# --- the workload ------------------------------------------------------------------------
: > "$OUT/squeue.log"
( while true; do
      { date -u +'# %Y-%m-%dT%H:%M:%SZ'; squeue -h -t PD -o '%i|%r'; } >> "$OUT/squeue.log"
      sleep 2
  done ) &
LOGGER_PID=$!

SINCE=$(date +%Y-%m-%dT%H:%M:%S)
T0=$(date +%s)
at() { local wait=$((T0 + $1 - $(date +%s))); ((wait > 0)) && sleep "$wait"; return 0; }
sub() {  # sub USER ACCOUNT QOS GPUS SECONDS NAME [sbatch options...]: prints the job id
    local user=$1 account=$2 qos=$3 gpus=$4 secs=$5 name=$6; shift 6
    runuser -u "$user" -- env SLURM_CONF="$SLURM_CONF" TZ=UTC sbatch --parsable -p gpu -A "$account" -q "$qos" \
        --gres="gpu:$gpus" -t 2 -J "$name" -o /dev/null --chdir="$W/jobs" "$@" --wrap "sleep $secs"
}
state_of() { squeue -h -j "$1" -o %T 2>/dev/null; }

say "wave 1: over-quota bursts in vision, an array over the QOS cap, fillers in infra"
for i in 1 2 3 4; do sub gcauser1 vision normal 2 40 "vision-burst" >/dev/null; done
for i in 1 2 3 4; do sub gcauser2 vision normal 1 30 "vision-burst" >/dev/null; done
sub gcauser3 nlp capped 1 25 "nlp-array" --array=0-5 >/dev/null
for i in 1 2 3; do sub gcauser4 nlp capped 1 30 "nlp-capped" >/dev/null; done
for i in 1 2 3 4; do sub gcauser1 infra normal 1 70 "infra-filler" >/dev/null; done
REQUEUE=$(sub gcauser4 nlp normal 1 35 "requeue-me")
at 5
say "a job too big for any one node: 2 nodes x 4 GPUs"
sub gcauser2 infra normal 4 30 "too-big" -N 2 >/dev/null
wait_for 60 "requeue-me running" bash -c "[[ \$(squeue -h -j $REQUEUE -o %T) == RUNNING ]]"
at 20
say "requeue job $REQUEUE while it runs"
scontrol requeue "$REQUEUE"

at 60
say "wave 2: another vision burst, a job to be cancelled while pending, more capped jobs"
for i in 1 2 3 4; do sub gcauser2 vision normal 2 30 "vision-burst" >/dev/null; done
CANCEL=$(sub gcauser1 vision normal 2 30 "cancel-pending")
for i in 1 2 3; do sub gcauser3 nlp capped 1 20 "nlp-capped" >/dev/null; done
sub gcauser4 nlp normal 2 30 "nlp-normal" >/dev/null
at 80
[[ $(state_of "$CANCEL") == PENDING ]] || say "note: job $CANCEL is $(state_of "$CANCEL"), not pending, when cancelled"
say "cancel job $CANCEL while it is pending"
scancel "$CANCEL"

at 130
say "wave 3: both accounts' users again, over quota and over the cap"
for i in 1 2 3; do sub gcauser1 vision normal 2 25 "vision-burst" >/dev/null; done
for i in 1 2 3; do sub gcauser2 vision normal 1 25 "vision-burst" >/dev/null; done
sub gcauser4 nlp capped 1 20 "nlp-array" --array=0-3 >/dev/null
for i in 1 2; do sub gcauser3 nlp capped 1 20 "nlp-capped" >/dev/null; done
sub gcauser1 infra normal 1 20 "infra-small" >/dev/null

queue_empty() { [[ -z $(squeue -h -o %i) ]]; }
wait_for 400 "an empty queue" queue_empty
sleep 3  # one more empty snapshot
kill "$LOGGER_PID"; wait "$LOGGER_PID" 2>/dev/null || true; LOGGER_PID=
say "workload done in $(($(date +%s) - T0)) s"

# --- the dumps: README's nightly recipe ---------------------------------------------------
FORMAT=JobID,JobName,User,Account,Partition,QOS,State,ExitCode,Submit,Eligible,Start,End,Timelimit,NNodes,ReqTRES,AllocTRES,NodeList
finished() {  # slurmdbd has every job's final record (slurmctld sends them a moment later)
    local states
    states=$(sacct -a -D -n -X -P -S "$SINCE" -E now -o State) && ! grep -qE '^(PENDING|RUNNING)$' <<<"$states"
}
wait_for 60 "sacct's final records" finished
sacct -a -D -P -S "$SINCE" -E now --format "$FORMAT" > "$OUT/sacct.txt"
scontrol show node -o > "$OUT/nodes.txt"
sacctmgr -P show assoc format=Account,User,GrpTRES > "$OUT/assoc.txt"
sacctmgr -P show qos format=Name,MaxTRESPU,GrpTRES > "$OUT/qos.txt"
echo "$SLURM_VERSION" > "$OUT/slurm_version.txt"

# --- gca ----------------------------------------------------------------------------------
rm -f "$OUT/gca.duckdb"
$GCA ingest "$OUT/sacct.txt" "$OUT/nodes.txt" "$OUT/assoc.txt" "$OUT/qos.txt" "$OUT/squeue.log" \
    --tz UTC --db "$OUT/gca.duckdb" >&2
$GCA report --db "$OUT/gca.duckdb" --out "$OUT/report" --json --quiet > "$OUT/summary.json"
$PYTHON "$HERE/slurm_live_compare.py" "$OUT"
say "done: $(($(date +%s) - STARTED)) s in all, $(($(date +%s) - T0)) s from the first job"
