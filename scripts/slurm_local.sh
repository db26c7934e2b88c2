#!/usr/bin/env bash
# A real single-node SLURM cluster on this machine, for `make test-cluster` (run as root).
#
#   scripts/slurm_local.sh up     install what is missing (Debian packages), write the configs, start the daemons
#   scripts/slurm_local.sh down   stop them, by the PIDs they wrote
#   eval "$(scripts/slurm_local.sh env)"   point sbatch/sinfo/sacct of this shell at the cluster
#
# Daemons: munged (authentication), MariaDB + slurmdbd (job accounting: submitit polls `sacct`
# for job states, so a cancelled or failed job is seen as finished), slurmctld and slurmd on the
# loopback host. Everything lives under $SLURM_LOCAL_DIR (default /tmp/chunkbench-slurm); the
# system's /etc/slurm is left alone (the tools find the cluster through SLURM_CONF).
set -euo pipefail

DIR=${SLURM_LOCAL_DIR:-/tmp/chunkbench-slurm}
CONF=$DIR/etc/slurm.conf
HOST=$(hostname -s)
PACKAGES="slurmctld slurmd slurm-client slurmdbd munge mariadb-server"

log() { echo "slurm_local: $*" >&2; }

install() {
    local missing=""
    for cmd in slurmctld slurmd sbatch sacct slurmdbd munged mariadbd; do
        command -v "$cmd" >/dev/null || missing=1
    done
    [ -z "$missing" ] && return
    [ "$(id -u)" = 0 ] || { log "SLURM is not installed and this is not root: sudo apt-get install $PACKAGES"; exit 1; }
    log "installing $PACKAGES"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends $PACKAGES >/dev/null 2>&1 || {
        apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $PACKAGES >/dev/null; }
}

write_configs() {
    mkdir -p "$DIR"/{etc,state,spool,log,mysql} /run/munge /run/mysqld
    local cpus mem
    cpus=$(nproc)
    mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
    cat > "$CONF" <<EOF
ClusterName=chunkbench
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
# no cgroups in a container: processes are tracked by the kernel's process table
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
    cat > "$DIR/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
SlurmUser=root
PidFile=$DIR/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=root
StorageLoc=chunkbench_acct
EOF
    chmod 600 "$DIR/etc/slurmdbd.conf"
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local seconds=$1 what=$2; shift 2
    for _ in $(seq "$seconds"); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 1
    done
    log "$what did not come up in ${seconds}s; logs: $DIR/log"
    exit 1
}

up() {
    install
    write_configs
    export SLURM_CONF=$CONF
    # munge: the key the package made, else a new one
    [ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key
    chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
    munge -n >/dev/null 2>&1 || runuser -u munge -- munged
    wait_for 20 munged munge -n
    # MariaDB for slurmdbd, in a data folder of its own, reached by root over the default socket
    if [ ! -d "$DIR/mysql/mysql" ]; then
        mariadb-install-db --user=root --datadir="$DIR/mysql" --auth-root-authentication-method=socket \
            >"$DIR/log/mariadb-install.log" 2>&1
    fi
    if [ ! -s "$DIR/mysqld.pid" ] || ! kill -0 "$(cat "$DIR/mysqld.pid")" 2>/dev/null; then
        mariadbd --user=root --datadir="$DIR/mysql" --pid-file="$DIR/mysqld.pid" --skip-networking \
            --log-error="$DIR/log/mariadb.log" &
        disown
    fi
    wait_for 60 MariaDB mariadb -e "select 1"
    pgrep -x slurmdbd >/dev/null || slurmdbd
    wait_for 60 slurmdbd sacctmgr --immediate list cluster
    sacctmgr --immediate add cluster chunkbench >/dev/null 2>&1 || true
    pgrep -x slurmctld >/dev/null || slurmctld
    pgrep -x slurmd >/dev/null || slurmd
    wait_for 60 "the node $HOST" bash -c "sinfo --noheader --format=%T | grep -q idle"
    log "up: $HOST ($(nproc) CPUs), partition debug; export SLURM_CONF=$CONF"
}

stop() {  # stop PIDFILE: the daemon that wrote it, waiting until it has exited
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 0
    if kill "$pid" 2>/dev/null; then
        for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    fi
    rm -f "$1"
}

down() {
    for name in slurmd slurmctld slurmdbd mysqld; do stop "$DIR/$name.pid"; done
    stop /run/munge/munged.pid
    log "down"
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    *) echo "usage: $0 up|down|env" >&2; exit 2 ;;
esac
