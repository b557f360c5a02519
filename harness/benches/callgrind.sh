#!/usr/bin/env bash
# `just bench callgrind [N]`: the decision benchmark's instruction count per decision under
# callgrind, stable on a noisy machine, and the same for the core-vs-upstream benchmark's
# reconcile from objects. Runs the bench binary's `decision-loop 0` (setup only) and
# `decision-loop N` (setup and N decisions, default 1000) and prints (total(N) - total(0)) / N;
# then the same with `tick-loop`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
n="${1:-1000}"
if ! command -v valgrind >/dev/null 2>&1; then
    # Debian's valgrind; needs root or sudo, like `apt-get install`.
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends valgrind >/dev/null
fi
bin="$(cargo bench -p hpa-harness --bench corpus --no-run --message-format=json 2>/dev/null \
    | grep '"kind":\["bench"\]' | grep '"name":"corpus"' \
    | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)"
[[ -x "$bin" ]] || { echo "callgrind: the bench binary was not built" >&2; exit 1; }
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1 \
        | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
per() {
    local base total
    base="$(count "$1" 0)"
    total="$(count "$1" "$n")"
    [[ -n "$base" && -n "$total" ]] || { echo "callgrind: no instruction count in valgrind's output" >&2; exit 1; }
    echo "$(( (total - base) / n )) instructions per $2 ($n: $total - $base setup)"
}
echo "callgrind: decision (100 pods x 3 metrics, behavior on, views in): $(per decision-loop decision)"
echo "callgrind: reconcile from objects (the same, Pods and metrics API answers in): $(per tick-loop reconcile)"
