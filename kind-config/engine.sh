#!/usr/bin/env bash
# `just engine`: make a Docker engine available for kind on this machine, idempotently.
#  1. If `docker info` fails: install Debian's docker.io and the node-image build tools with apt
#     (non-interactive), then start dockerd in the background if no service manager runs it.
#  2. Detect whether the capability bounding set lacks capabilities the kernel knows. Only then
#     install the capability-filtering runc wrapper (scripts/runc-capfilter.sh) as dockerd's
#     default runtime, merged into /etc/docker/daemon.json, and reload dockerd with SIGHUP.
# Running it again when all is in place changes nothing.
set -euo pipefail
source "$(dirname "$0")/scripts/common.sh"

# Tools the node-image build needs besides docker (Debian package names).
BUILD_PKGS=(debootstrap jq zstd pigz gcc libc6-dev ca-certificates)
DOCKERD_LOG=/var/log/hpa-conformance-dockerd.log
CAPFILTER=/usr/local/libexec/hpa-conformance/runc-capfilter
DAEMON_JSON=/etc/docker/daemon.json

[ "$(id -u)" = 0 ] || die "engine.sh needs root (apt-get, dockerd)"

apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  apt-get update -qq
  # Keep package scripts from starting services: this script starts dockerd itself.
  local blocked=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    blocked=1
  fi
  local rc=0
  apt-get install -y -qq --no-install-recommends -o Dpkg::Options::=--force-confold "${missing[@]}" \
    </dev/null >/dev/null || rc=$?
  [ -n "$blocked" ] && rm -f /usr/sbin/policy-rc.d
  [ $rc -eq 0 ] || die "apt-get install failed ($rc)"
}

dockerd_running() { pidof dockerd >/dev/null 2>&1; }

wait_docker() {
  for _ in $(seq 1 60); do
    pick_docker && return 0
    sleep 1
  done
  die "dockerd did not answer within 60 s (log: $DOCKERD_LOG)"
}

start_dockerd() {
  if [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ]; then
    log "starting docker with systemctl"
    systemctl start docker
  else
    log "no service manager: starting dockerd in the background (log: $DOCKERD_LOG)"
    setsid dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &
  fi
  wait_docker
}

# --- 1. engine and build tools --------------------------------------------------------------------
# docker.io only when no engine answers (a machine with another Docker, e.g. docker-ce, keeps it).
if pick_docker; then
  apt_install "${BUILD_PKGS[@]}"
else
  command -v dockerd >/dev/null 2>&1 || apt_install docker.io
  apt_install "${BUILD_PKGS[@]}"
  dockerd_running || start_dockerd
  wait_docker
fi

# --- 2. capability bounding set ------------------------------------------------------------------
last_cap=$(cat /proc/sys/kernel/cap_last_cap)
full=$(((1 << (last_cap + 1)) - 1))
bnd=$((16#$(awk '/^CapBnd:/ {print $2}' /proc/self/status)))
if [ "$bnd" -eq "$full" ]; then
  log "capability bounding set is full (cap_last_cap=$last_cap): no runtime wrapper needed"
else
  log "capability bounding set $(printf '%x' "$bnd") lacks bits $(printf '%x' $((full & ~bnd))) of $(printf '%x' "$full"):" \
    "privileged containers need the capability-filtering runc wrapper"
  real_runc=$(command -v runc || true)
  [ -n "$real_runc" ] || die "runc not found"
  # Install (or update) the wrapper only when its content differs.
  tmp=$(mktemp)
  sed "s|@REAL_RUNC@|$real_runc|" "$KIND_CONFIG_DIR/scripts/runc-capfilter.sh" >"$tmp"
  if ! cmp -s "$tmp" "$CAPFILTER" 2>/dev/null; then
    install -D -m 0755 "$tmp" "$CAPFILTER"
    log "installed $CAPFILTER (execs $real_runc)"
  fi
  rm -f "$tmp"
  # Merge into daemon.json. Declaring `runtimes` drops dockerd's built-in aliases on a SIGHUP
  # reload, so they are re-declared too (pointing at the real runc).
  mkdir -p /etc/docker
  current='{}'
  [ -s "$DAEMON_JSON" ] && current=$(cat "$DAEMON_JSON")
  wanted=$(jq --arg w "$CAPFILTER" --arg r "$real_runc" '
    .runtimes = ((.runtimes // {}) + {
      "hpa-capfilter": {path: $w},
      "io.containerd.runc.v2": {path: $r},
      "io.containerd.runtime.v1.linux": {path: $r}})
    | ."default-runtime" = "hpa-capfilter"' <<<"$current")
  if [ "$(jq -S . <<<"$current")" != "$(jq -S . <<<"$wanted")" ]; then
    [ -s "$DAEMON_JSON" ] && cp "$DAEMON_JSON" "$DAEMON_JSON.before-hpa-conformance"
    printf '%s\n' "$wanted" >"$DAEMON_JSON"
    log "merged the wrapper into $DAEMON_JSON; reloading dockerd (SIGHUP)"
    kill -HUP "$(pidof dockerd)"
    for _ in $(seq 1 20); do
      [ "$("$DOCKER" info --format '{{.DefaultRuntime}}' 2>/dev/null)" = hpa-capfilter ] && break
      sleep 0.5
    done
  fi
  [ "$("$DOCKER" info --format '{{.DefaultRuntime}}')" = hpa-capfilter ] \
    || die "dockerd did not take the default runtime from $DAEMON_JSON"
fi

log "docker engine ready: client $DOCKER ($("$DOCKER" version --format '{{.Client.Version}}')), server $("$DOCKER" version --format '{{.Server.Version}}'), default runtime $("$DOCKER" info --format '{{.DefaultRuntime}}'), cgroup v$("$DOCKER" info --format '{{.CgroupVersion}}')"
