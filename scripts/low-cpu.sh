#!/usr/bin/env bash
# Runs a command on the CPU the rest of the machine leaves: CI's steps beside the kind lane
# (.ci/run), whose cluster and controller must come first because the lane judges their timing.
#
# Usage: scripts/low-cpu.sh COMMAND [ARGS...]
#
# A priority inside the process's own scheduling group is not enough. The kernel schedules groups
# first and tasks inside them second: the kind node is a container in Docker's cpu cgroup, and with
# autogroup on (kernel.sched_autogroup_enabled, the default of these machines) every session of the
# root cgroup is a group of its own at full weight — whatever nice or SCHED_IDLE its tasks have,
# such a group weighs as much as Docker's whole cgroup. Measured on a 2-core VM with a fuzz batch
# beside a 10 ms sleep-and-work probe: as SCHED_IDLE in its session, the probe's work took 6.4x as
# long and its wake-ups 245 ms at p99 (the kind smoke had 11 of 41 cases late); in a cpu cgroup of
# weight 2, 1.07x and 0.19 ms (the smoke 41/41).
#
# So the command runs in the cpu cgroup `hpa-conformance-low-cpu` of weight 2 (cgroup v1
# cpu.shares 2; cgroup v2 cpu.idle 1, or cpu.weight 1 where there is no cpu.idle), created when
# absent, and as SCHED_IDLE inside it. Where no cgroup can be written (not root, a read-only
# cgroupfs) it runs in a session of its own whose autogroup is at nice 19 (weight 15; the probe's
# wake-ups 17 ms at p99), and says so on stderr.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }

group=hpa-conformance-low-cpu
root=/sys/fs/cgroup

# Moves this shell into the low-weight cgroup; fails (status 1) when none can be made or joined.
enter_cgroup() {
  local dir
  if [ -f "$root/cpu/cpu.shares" ]; then # cgroup v1, the cpu controller mounted on its own
    dir=$root/cpu/$group
    mkdir -p "$dir" && echo 2 >"$dir/cpu.shares" || return 1
  elif [ -f "$root/cgroup.controllers" ] && grep -qw cpu "$root/cgroup.controllers"; then # v2
    grep -qw cpu "$root/cgroup.subtree_control" ||
      echo +cpu >"$root/cgroup.subtree_control" || return 1
    dir=$root/$group
    mkdir -p "$dir" || return 1
    if [ -f "$dir/cpu.idle" ]; then
      echo 1 >"$dir/cpu.idle" || return 1
    else
      echo 1 >"$dir/cpu.weight" || return 1
    fi
  else
    return 1
  fi
  echo $$ >"$dir/cgroup.procs"
}

if enter_cgroup 2>/dev/null; then
  exec chrt --idle 0 "$@"
fi
echo "low-cpu.sh: no cpu cgroup could be written here: $1 runs in a session of its own at autogroup nice 19" >&2
# shellcheck disable=SC2016 # expanded by the inner shell
exec setsid -w bash -c 'echo 19 2>/dev/null >/proc/self/autogroup || true; exec chrt --idle 0 "$@"' low-cpu "$@"
