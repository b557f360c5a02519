#!/bin/bash
# Runs in the kind node before containerd starts (ExecStartPre drop-in). containerd's CRI lowers
# oom_score_adj of pod sandboxes (-998), which needs CAP_SYS_RESOURCE. Where the node's capability
# bounding set lacks it (some sandboxed VMs), sandboxes fail ("can't get final child's PID from
# pipe: EOF") unless restrict_oom_score_adj clamps the value; so detect and set it.
set -euo pipefail
config=/etc/containerd/config.toml
bnd=$((16#$(awk '/^CapBnd:/ {print $2}' /proc/self/status)))
if (( (bnd >> 24 & 1) == 0 )); then want=true; else want=false; fi   # 24 = CAP_SYS_RESOURCE
sed -i -E "s/^([[:space:]]*restrict_oom_score_adj[[:space:]]*=[[:space:]]*).*/\1$want/" "$config"
grep -q "restrict_oom_score_adj = $want" "$config"
