#!/usr/bin/env bash
# `just kind-sonobuoy [SCALE] [CASE...]`: hpa-conformance as a Sonobuoy plugin on the running kind
# cluster (any of kind-config/*.yaml with the metrics stub deployed: `just kind-stub`, or the
# reference's `just kind-deploy`). Builds the Sonobuoy CLI and image at v0.57.5 (build.sh) and the
# harness image, loads both, runs the plugin (kind-config/sonobuoy/hpa-conformance.yaml with
# --time-scale SCALE, default 5, the cluster's release, HPAScaleToZero=true and the cases: default
# kind-config/in-cluster/cases.txt), waits, retrieves the results tarball into
# target/kind-sonobuoy/, and checks that `sonobuoy results` shows the pass/fail/skip counts the
# harness's own report.json (in the tarball) says; then deletes Sonobuoy's namespace and roles.
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
use_cluster
here=$(cd "$(dirname "$0")" && pwd)
cd "$REPO_ROOT"
out=target/kind-sonobuoy
ns=sonobuoy
scale=${1:-5}
[ $# -eq 0 ] || shift
cases=("$@")
[ ${#cases[@]} -gt 0 ] || mapfile -t cases < <(grep -v '^#' kind-config/in-cluster/cases.txt | grep .)

sonobuoy=$("$here/build.sh" | tail -1)
built=$(kind-config/scripts/image.sh harness | tail -1)
hash=${built%% *}; hash=${hash##*:}
kind load docker-image --name "$cluster" "hpa-conformance/harness:$hash" hpa-conformance/harness:dev \
  hpa-conformance/sonobuoy:v0.57.5 >/dev/null
version=$(kind-config/scripts/cluster-version.sh)

# The plugin with this run's args (the definition's own lines replaced: it is this project's file).
rm -rf "$out"; mkdir -p "$out"
{
  sed -e "s#^    - --time-scale=1\$#    - --time-scale=$scale\n    - --kubernetes-version=$version\n    - --feature-gates=HPAScaleToZero=true#" \
      -e '/^    - cases$/d' "$here/hpa-conformance.yaml" |
    awk -v cases="$(printf '%s\n' "${cases[@]}")" '
      { print }
      /^    - --done-file=/ { n = split(cases, c, "\n"); for (i = 1; i <= n; i++) if (c[i] != "") print "    - " c[i] }'
} >"$out/plugin.yaml"
grep -q -- "--time-scale=$scale" "$out/plugin.yaml" || die "the plugin's args were not set (see $out/plugin.yaml)"

"$sonobuoy" delete --namespace "$ns" --wait >/dev/null 2>&1 || true
t0=$SECONDS
log "sonobuoy run: ${#cases[@]} cases at x$scale, Kubernetes $version"
"$sonobuoy" run --namespace "$ns" --plugin "$out/plugin.yaml" \
  --sonobuoy-image hpa-conformance/sonobuoy:v0.57.5 --image-pull-policy IfNotPresent \
  --wait=20 >"$out/run.log" 2>&1 || { cat "$out/run.log" >&2; die "sonobuoy run failed"; }
log "sonobuoy run done after $((SECONDS - t0)) s"
tarball=$("$sonobuoy" retrieve --namespace "$ns" "$out")
log "results: $tarball"
"$sonobuoy" results "$tarball" | tee "$out/results.txt"
"$sonobuoy" results "$tarball" --mode detailed >"$out/detailed.jsonl"
# The harness's own report, as the plugin's worker collected it.
mkdir -p "$out/tarball"
tar -xzf "$tarball" -C "$out/tarball"
inner=$(find "$out/tarball/plugins/hpa-conformance" -name '*.tar.gz' | head -1)
[ -z "$inner" ] || tar -xzf "$inner" -C "$(dirname "$inner")"
report=$(find "$out/tarball/plugins/hpa-conformance" -name report.json | head -1)
[ -n "$report" ] || die "no report.json of the harness in $tarball"
want=$(jq -r '.summary | "Passed: \(.passed) Failed: \(.failed) Skipped: \(.skipped)"' "$report")
got=$(grep -E '^(Passed|Failed|Skipped):' "$out/results.txt" | tr '\n' ' ' | sed 's/ $//')
log "harness report.json: $want; sonobuoy results: $got"
[ "$want" = "$got" ] || die "sonobuoy results ($got) differ from the harness's report ($want)"
grep -q '^Status: passed' "$out/results.txt" || die "the plugin's status is not passed (see $out/results.txt)"
"$sonobuoy" delete --namespace "$ns" --wait >/dev/null 2>&1
log "kind-sonobuoy: the plugin's results match the harness's report; Sonobuoy removed"
