#!/usr/bin/env bash
# OCI runtime wrapper installed by kind-config/engine.sh as dockerd's default runtime, and only on a
# host whose capability bounding set lacks capabilities the kernel knows (some sandboxed VMs drop
# CAP_SYS_RESOURCE). Docker gives a --privileged container (every kind node) every capability the
# kernel knows, and runc cannot grant one the bounding set lacks ("unable to apply caps: operation
# not permitted"). This wrapper removes, from the bundle's config.json (create/run) or from the
# --process file (exec), every capability not in this process's bounding set, then execs the real
# runc with the same arguments. Containers that don't ask for a missing capability are untouched.
set -euo pipefail

REAL_RUNC="@REAL_RUNC@"

# Names of capability bits 0..40 (linux/capability.h). A name not in this table is left alone.
CAP_NAMES=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP
  LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE
  SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME
  SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG
  WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF CHECKPOINT_RESTORE)

# JSON array of the capability names ("CAP_…") that the bounding set lacks.
missing_caps() {
  local bnd i out=()
  bnd=$((16#$(awk '/^CapBnd:/ {print $2}' /proc/self/status)))
  for i in "${!CAP_NAMES[@]}"; do
    if (( (bnd >> i & 1) == 0 )); then out+=("\"CAP_${CAP_NAMES[$i]}\""); fi
  done
  local IFS=,
  printf '[%s]' "${out[*]}"
}

# Filter the capability lists (JQ path $2, e.g. .process.capabilities) in the JSON file $1.
filter_file() {
  local file=$1 caps=$2 missing tmp
  [ -f "$file" ] || return 0
  missing=$(missing_caps)
  [ "$missing" = "[]" ] && return 0
  tmp="$file.capfilter.$$"
  jq --argjson missing "$missing" "
    if $caps != null then
      $caps |= with_entries(.value |= (if type == \"array\" then map(select(. as \$c | \$missing | index(\$c) | not)) else . end))
    else . end" "$file" >"$tmp"
  cat "$tmp" >"$file"
  rm -f "$tmp"
}

# Find the subcommand and its --bundle / --process option among runc's arguments.
cmd="" bundle="" process=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  a=${args[$i]}
  if [ -z "$cmd" ]; then
    case "$a" in
      --root | --log | --log-format | --criu | --rootless) i=$((i + 1)) ;;
      -*) ;;
      *) cmd=$a ;;
    esac
    continue
  fi
  case "$a" in
    --bundle | -b) bundle=${args[$((i + 1))]:-} ;;
    --bundle=*) bundle=${a#--bundle=} ;;
    --process | -p) process=${args[$((i + 1))]:-} ;;
    --process=*) process=${a#--process=} ;;
  esac
done

case "$cmd" in
  create | run) filter_file "${bundle:-.}/config.json" '.process.capabilities' ;;
  exec) [ -n "$process" ] && filter_file "$process" '.capabilities' ;;
esac

exec "$REAL_RUNC" "$@"
