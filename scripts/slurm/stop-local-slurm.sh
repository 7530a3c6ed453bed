#!/bin/bash
# Stop the local test cluster that scripts/slurm/start-local-slurm.sh started.
#
# For tests on a Debian 12 machine, run as root. It kills exactly the daemons
# whose PIDs start-local-slurm.sh recorded in $SLURM_TEST_DIR/pids.txt (default
# /tmp/agon-slurm), newest first, waits up to 10 s, then SIGKILLs any left.
# Before that it cancels the jobs still in that (private) cluster.
# It never kills by name, so other Slurm/munge/MariaDB processes are untouched.
# It also removes /etc/slurm/slurm.conf when that is the start script's symlink
# into $SLURM_TEST_DIR. Safe to run twice, or when nothing was started.
B=${SLURM_TEST_DIR:-/tmp/agon-slurm}
if [ -f "$B/pids.txt" ]; then
  # Cancel jobs still queued or running (the cluster is private to $B, so every
  # job in it is the test's); slurmd's job steps would outlive slurmd otherwise.
  if [ -s "$B/pids.txt" ] && [ -f "$B/etc/slurm.conf" ] && command -v scancel >/dev/null; then
    export SLURM_CONF=$B/etc/slurm.conf
    if [ -n "$(timeout 10 squeue -h -o %i 2>/dev/null)" ]; then
      timeout 10 scancel --user "$(id -un)" 2>/dev/null
      for _ in $(seq 20); do [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.5; done
    fi
  fi
  pids=$(awk '{print $2}' "$B/pids.txt" | tac)
  for pid in $pids; do kill "$pid" 2>/dev/null; done
  for _ in $(seq 20); do
    alive=0; for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break; sleep 0.5
  done
  for pid in $pids; do kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null; done
  : > "$B/pids.txt"
fi
if [ "$(readlink /etc/slurm/slurm.conf 2>/dev/null)" = "$B/etc/slurm.conf" ]; then
  rm -f /etc/slurm/slurm.conf
fi
exit 0
