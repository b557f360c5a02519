#!/usr/bin/env bash
# `just kind-faults [FAULT…]`: the fault matrix on a ×5 kind cluster, kube-controller-manager's HPA
# controller first, then the deployed reference in its place: the same cases, the same fault at the
# same moment of the case, one table (docs/kind.md, "Faults").
#
# For each controller: each case's fault-free run (the baseline), then per fault a run of its case
# with the fault injected mid-case by this script, judged against that baseline
# (`hpa-conformance kind-faults judge`): the case passed or not (every expectation, timing
# included), wrong scale decisions (a replica value the fault-free run never takes, a rescale it
# does not make), the time from the fault's end to the controller's first metric read
# (`kind-faults first-read`, from the stub's request times), and what was left behind (the fault's
# own objects, the lane's namespaces, the controller not Ready).
#
# FAULT (default: all):
#   apiserver-restart    kube-apiserver's static pod manifest moved out of the manifests folder
#                        and back (docs-cpu-halving, mid-stabilization: the restart takes ~40 s,
#                        the scale-down is due ~60 s in)
#   etcd-restart         the same with etcd's (docs-cpu-halving, mid-stabilization)
#   throttle             API Priority and Fairness squeezes the controller's service account for
#                        12 s (failover case): a PriorityLevelConfiguration of one seat that
#                        rejects (429) what does not fit, shared with a flood of requests from
#                        another user that keeps the seat busy; the 429s the controller got are
#                        counted from the API server's metrics
#   watch-loss           the controller's watches lost with their place gone: the API server runs
#                        the case without its watch cache (watches are served by etcd, which
#                        answers a watch from a compacted revision with 410 Gone; set up before
#                        the case and undone after it, a restart each); mid-stabilization etcd is
#                        compacted to its current revision and the controller process's TCP
#                        connections to the API server are reset (ss -K in its network
#                        namespace), so every watch it resumes must relist (docs-cpu-halving); how
#                        it got its HPAs back (resumed watches, LISTs, streaming lists) is read
#                        from the API server's audit log (faults/watch-audit.yaml, on stdout
#                        while the watch cache is off)
#   sigkill              the controller's process (the Lease holder's) killed with SIGKILL, the
#                        container restarted in place (docs-cpu-halving, mid-stabilization)
#   metrics-unavailable  the stub's Service selects no pod for 8 s (failover case)
#   scale-refused        a ValidatingAdmissionPolicy refuses the case's scale updates for 10 s,
#                        across its second scale-up (failover case)
# CONTROLLERS (default "kcm reference"); the cluster is $KIND_CLUSTER_NAME (default
# hpa-conformance-faults, beside the project's own), made from cluster-x5.yaml and deleted
# afterwards (KEEP=1 keeps it). FAULTS_CLUSTER=current instead uses the cluster as it runs (an x5
# one with the stub; the controller is the one it runs, KCM's or the deployed reference) and
# leaves it be: CI's short version (kind-ci.sh). BASELINE=core takes each case's fault-free run
# from the reference core in virtual time (what the case expects, in no time) instead of a
# fault-free run on the cluster. Reports and rows in target/kind-faults/; the table in
# target/kind-faults/table.txt (APPEND=1 adds to the rows there). REPEAT=N runs each fault N times
# per controller (one row each): the recovery figure depends on where the sync period happens to
# be, so one run says little about it. Exit 1 when the reference made a wrong scale decision or left
# something behind.
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
all_faults=(apiserver-restart etcd-restart throttle watch-loss sigkill metrics-unavailable scale-refused)
faults=("$@")
[ ${#faults[@]} -gt 0 ] || faults=("${all_faults[@]}")
for f in "${faults[@]}"; do
  [[ " ${all_faults[*]} " == *" $f "* ]] || die "unknown fault $f (known: ${all_faults[*]})"
done
current=${FAULTS_CLUSTER:-}
[ -z "$current" ] || [ "$current" = current ] || die "FAULTS_CLUSTER is 'current' or unset"
baseline_on=${BASELINE:-cluster}
repeat=${REPEAT:-1}
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "REPEAT is a count of runs (1, 2, …)"
[ "$baseline_on" = cluster ] || [ "$baseline_on" = core ] || die "BASELINE is 'cluster' or 'core'"
[ -n "$current" ] || export KIND_CLUSTER_NAME=${KIND_CLUSTER_NAME:-hpa-conformance-faults}
out=$REPO_ROOT/target/kind-faults
# APPEND=1 adds to the rows of an earlier run (its baselines reused) instead of starting afresh.
[ "${APPEND:-0}" = 1 ] || rm -rf "$out"
mkdir -p "$out"
bin=$REPO_ROOT/target/debug/hpa-conformance
manifests=/etc/kubernetes/manifests
now_ms() { date +%s%3N; }

(cd "$REPO_ROOT" && cargo build -q -p hpa-harness)
[ -n "$current" ] || "$KIND_CONFIG_DIR/scripts/cluster.sh" up cluster-x5.yaml
use_cluster
pick_docker || die "docker is not answering: run \`just engine\` first"
node=${cluster}-control-plane
cleanup() {
  restore_all || true
  if [ -z "$current" ] && [ "${KEEP:-0}" != 1 ]; then "$KIND_CONFIG_DIR/scripts/cluster.sh" down; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
stub_selector=
if [ -n "$current" ]; then
  kcm_args=$(kcm_field '.spec.containers[0].command')
  grep -q -- 'horizontal-pod-autoscaler-sync-period=3s' <<<"$kcm_args" || die "the cluster is not an x5 one"
  if kcm_hpa_is_off "$kcm_args"; then
    controllers=reference
  else
    controllers=kcm
  fi
else
  controllers=${CONTROLLERS:-kcm reference}
  "$KIND_CONFIG_DIR/metrics-stub/deploy.sh"
fi
minor=$(cluster_minor)
stub_selector=$(kubectl -n hpa-conformance-system get svc hpa-metrics-stub -o jsonpath='{.spec.selector}')

# The case of each fault and the moment it is injected: after the HPA's first scale-up (`up`) or
# once it holds a scale-down (`stabilized`), plus a delay in seconds.
case_of() {
  case $1 in
    apiserver-restart | etcd-restart | watch-loss | sigkill) echo cases/algorithm/docs-cpu-halving.yaml ;;
    *) echo cases/lifecycle/controller-failover-scales-again.yaml ;;
  esac
}
moment_of() {
  case $1 in
    apiserver-restart) echo "stabilized 2" ;;
    etcd-restart | watch-loss | sigkill) echo "stabilized 8" ;;
    scale-refused) echo "up 22" ;;
    *) echo "up 3" ;;
  esac
}
prefix_of() { # the lane's namespace prefix of a case file (cluster::namespace_name)
  local name
  name=$(awk '/^name:/ { print $2; exit }' "$REPO_ROOT/$1" | tr -c 'a-zA-Z0-9\n' '-' | tr 'A-Z' 'a-z')
  name=${name:0:34}
  name=${name%%-}
  echo "hpa-$name-"
}

# --- the controllers -------------------------------------------------------------------------
sa_of() { # the service account whose requests the controller's HPA work makes
  case $1 in
    kcm) echo kube-system:horizontal-pod-autoscaler ;;
    reference) echo hpa-reference:hpa-reference ;;
  esac
}
controller_ready() {
  case $1 in
    kcm) [ "$(kcm_field '.status.containerStatuses[0].ready')" = true ] ;;
    reference)
      [ "$(kubectl -n hpa-reference get deploy hpa-reference -o jsonpath='{.status.readyReplicas}' 2>/dev/null)" = 2 ] &&
        [ -n "$(kubectl -n hpa-reference get lease hpa-reference -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)" ] ;;
  esac
}
wait_controller() {
  for _ in $(seq 180); do controller_ready "$1" && return 0; sleep 1; done
  return 1
}
# The pid, in the node, of the controller process holding its Lease.
leader_pid() {
  case $1 in
    kcm) "$DOCKER" exec "$node" sh -c 'for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = kube-controller ] && echo ${p#/proc/}; done; true' | head -1 ;;
    reference) reference_leader_pid "$node" ;;
  esac
}
switch_to_reference() {
  log "switching kube-controller-manager's HPA controller off, deploying the reference"
  kcm_hpa_is_off || kcm_hpa_off "$node"
  "$KIND_CONFIG_DIR/reference/deploy.sh" 5
}

# --- the faults --------------------------------------------------------------------------------
apiserver_up() { kubectl get --raw /readyz >/dev/null 2>&1; }
wait_apiserver() {
  for _ in $(seq 480); do apiserver_up && return 0; sleep 0.5; done
  return 1
}
# Moves a static pod's manifest out of the folder until its container has stopped, then back.
# Prints how long each part took, for the row's note: the kubelet starts the new container a few
# seconds to half a minute after the manifest is back, and the API server's clients of etcd
# reconnect on a back-off, so a restart's length varies from run to run.
restart_static() {
  local name=$1 comm=$2 t0 t1 t2 t3
  t0=$(now_ms)
  "$DOCKER" exec "$node" mv "$manifests/$name.yaml" "/root/$name.yaml"
  for _ in $(seq 120); do
    running "$comm" || break
    sleep 0.5
  done
  t1=$(now_ms)
  "$DOCKER" exec "$node" mv "/root/$name.yaml" "$manifests/$name.yaml"
  for _ in $(seq 240); do
    ! running "$comm" || break
    sleep 0.5
  done
  t2=$(now_ms)
  wait_apiserver || die "the API server did not come back after $name's restart"
  t3=$(now_ms)
  echo "$name away $(seconds $((t3 - t0))) s (stopped after $(seconds $((t1 - t0))) s, running again $(seconds $((t2 - t1))) s after its manifest came back, the API server Ready $(seconds $((t3 - t2))) s after that)"
}
running() { # a process of that command name runs in the node
  "$DOCKER" exec "$node" sh -c "for p in /proc/[0-9]*; do [ \"\$(cat \$p/comm 2>/dev/null)\" = $1 ] && exit 0; done; exit 1"
}
seconds() { awk -v ms="$1" 'BEGIN { printf "%.1f", ms / 1000 }'; }
# The FlowSchema (and PLC) of the squeeze: $1 names it, $2 is the service account it matches.
squeeze() {
  local sa=$1
  squeeze_schema hpa-conformance-squeeze "$sa"
  squeeze_schema hpa-conformance-squeeze-noise "$noise"
}
# The other user of the squeezed level: requests impersonating it keep the level's one seat busy.
noise=kube-system:hpa-conformance-noise
squeeze_rejected() { # the controller's requests the squeeze rejected so far
  kubectl get --raw /metrics | awk '/^apiserver_flowcontrol_rejected_requests_total\{/ && /flow_schema="hpa-conformance-squeeze"/ { n += $NF } END { print n + 0 }'
}
# What the noise user lists: 300 ConfigMaps of 4 KiB in a namespace of their own, readable by it
# alone — a LIST of about 1.2 MiB holds the seat for some milliseconds, so the seat is busy
# nearly all the time (a request the API server refuses at once would leave it free).
noise_ns=hpa-conformance-noise
noise_setup() {
  kubectl get ns "$noise_ns" >/dev/null 2>&1 && return 0
  {
    printf 'apiVersion: v1\nkind: List\nitems:\n'
    printf -- '- {apiVersion: v1, kind: Namespace, metadata: {name: %s}}\n' "$noise_ns"
    printf -- '- {apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: noise, namespace: %s}, rules: [{apiGroups: [""], resources: [configmaps], verbs: [list]}]}\n' "$noise_ns"
    printf -- '- {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: noise, namespace: %s}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: noise}, subjects: [{kind: ServiceAccount, namespace: %s, name: %s}]}\n' "$noise_ns" "${noise%%:*}" "${noise#*:}"
    local pad
    pad=$(head -c 3072 /dev/zero | tr '\0' 'x')
    for i in $(seq 300); do
      printf -- '- {apiVersion: v1, kind: ConfigMap, metadata: {name: noise-%03d, namespace: %s}, data: {pad: %s}}\n' "$i" "$noise_ns" "$pad"
    done
  } | kubectl apply -f - >/dev/null
}
# Floods the squeezed level for $1 seconds: many LISTs at once over HTTP/2, as the noise user.
flood() {
  local until=$(( $(date +%s) + $1 )) d server
  d=$(mktemp -d)
  kubectl config view --raw --minify -o jsonpath='{.users[0].user.client-certificate-data}' | base64 -d >"$d/crt"
  kubectl config view --raw --minify -o jsonpath='{.users[0].user.client-key-data}' | base64 -d >"$d/key"
  kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$d/ca"
  server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  for _ in $(seq 200); do printf 'url = "%s/api/v1/namespaces/%s/configmaps"\noutput = /dev/null\n' "$server" "$noise_ns"; done >"$d/urls"
  while [ "$(date +%s)" -lt "$until" ]; do
    curl -s --no-progress-meter --http2 --parallel --parallel-max 32 --cacert "$d/ca" --cert "$d/crt" --key "$d/key" \
      -H "Impersonate-User: system:serviceaccount:${noise%%:*}:${noise#*:}" -K "$d/urls" || true
  done
  rm -rf "$d"
}
squeeze_schema() {
  local name=$1 sa=$2
  kubectl apply -f - >/dev/null <<EOF
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: hpa-conformance-squeeze
spec:
  type: Limited
  limited:
    # No share of its own and none borrowed: the API server's minimum, one seat; what does not
    # find it free is rejected with 429 at once.
    nominalConcurrencyShares: 0
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse:
      type: Reject
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: $name
spec:
  priorityLevelConfiguration:
    name: hpa-conformance-squeeze
  # Before every suggested schema but exempt (1) and probes (2).
  matchingPrecedence: 50
  rules:
    - subjects:
        - kind: ServiceAccount
          serviceAccount: {namespace: ${sa%%:*}, name: ${sa#*:}}
      resourceRules:
        - verbs: ["*"]
          apiGroups: ["*"]
          resources: ["*"]
          namespaces: ["*"]
          clusterScope: true
      nonResourceRules:
        - verbs: ["*"]
          nonResourceURLs: ["*"]
EOF
}
unsqueeze() {
  kubectl delete flowschema hpa-conformance-squeeze hpa-conformance-squeeze-noise --ignore-not-found >/dev/null
  kubectl delete prioritylevelconfiguration hpa-conformance-squeeze --ignore-not-found >/dev/null
}
refuse_scales() {
  local ns=$1
  kubectl apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: hpa-conformance-refuse-scale
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: ["apps"]
        apiVersions: ["v1"]
        # A patch of the scale is an UPDATE to admission.
        operations: ["UPDATE"]
        resources: ["deployments/scale"]
  validations:
    - expression: "false"
      message: "scale updates refused by the fault matrix (kind-config/faults/run.sh)"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: hpa-conformance-refuse-scale
spec:
  policyName: hpa-conformance-refuse-scale
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: $ns
EOF
}
allow_scales() {
  kubectl delete validatingadmissionpolicybinding hpa-conformance-refuse-scale --ignore-not-found >/dev/null
  kubectl delete validatingadmissionpolicy hpa-conformance-refuse-scale --ignore-not-found >/dev/null
}
# The API server without its watch cache, for the watch-loss fault's case: its manifest edited
# (the original kept in the node's /root) and the restarted API server Ready, then the controller.
# The same restart turns on an audit log of lists and watches of HPAs (faults/watch-audit.yaml,
# put in the pki folder the API server's pod mounts already), written to its stdout.
watch_cache_backup=/root/kube-apiserver.watch-cache.yaml
watch_audit_policy=/etc/kubernetes/pki/hpa-conformance-watch-audit.yaml
apiserver_args() {
  "$DOCKER" exec "$node" sh -c 'for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = kube-apiserver ] && tr "\0" " " <$p/cmdline && echo; done; true'
}
# Waits until the API server runs with (on) or without (off) its watch cache and is Ready.
wait_watch_cache() {
  local want=$1 args
  for _ in $(seq 240); do
    args=$(apiserver_args)
    if [ -n "$args" ] && apiserver_up; then
      case $want in
        off) [[ "$args" != *--watch-cache=false* ]] || return 0 ;;
        on) [[ "$args" == *--watch-cache=false* ]] || return 0 ;;
      esac
    fi
    sleep 0.5
  done
  return 1
}
watch_cache_off() {
  local controller=$1
  log "$controller/watch-loss: restarting the API server without its watch cache"
  "$DOCKER" exec -i "$node" sh -c "cat >$watch_audit_policy" <"$KIND_CONFIG_DIR/faults/watch-audit.yaml"
  "$DOCKER" exec "$node" cp "$manifests/kube-apiserver.yaml" "$watch_cache_backup"
  "$DOCKER" exec "$node" sed -i "s#^\(    - kube-apiserver\)\$#\1\n    - --watch-cache=false\n    - --audit-policy-file=$watch_audit_policy\n    - --audit-log-path=-\n    - --audit-log-format=json#" "$manifests/kube-apiserver.yaml"
  "$DOCKER" exec "$node" grep -q -- '--watch-cache=false' "$manifests/kube-apiserver.yaml" ||
    die "could not edit kube-apiserver's manifest"
  wait_watch_cache off || die "the API server did not come back without its watch cache"
  sleep 5
  wait_controller "$controller" || die "$controller is not Ready after the API server's restart"
}
watch_cache_on() {
  "$DOCKER" exec "$node" test -f "$watch_cache_backup" || return 0
  log "restarting the API server with its watch cache"
  "$DOCKER" exec "$node" mv "$watch_cache_backup" "$manifests/kube-apiserver.yaml"
  wait_watch_cache on || die "the API server did not come back with its watch cache"
  "$DOCKER" exec "$node" rm -f "$watch_audit_policy"
}
# etcd compacted to its current revision, through its HTTP gateway from here (the node has no
# curl) with the API server's etcd client certificate: every resourceVersion before it is gone.
compact_etcd() {
  local d ip rev
  d=$(mktemp -d)
  "$DOCKER" exec "$node" cat /etc/kubernetes/pki/etcd/ca.crt >"$d/ca"
  "$DOCKER" exec "$node" cat /etc/kubernetes/pki/apiserver-etcd-client.crt >"$d/crt"
  "$DOCKER" exec "$node" cat /etc/kubernetes/pki/apiserver-etcd-client.key >"$d/key"
  ip=$("$DOCKER" inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$node")
  rev=$(curl -s --fail --cacert "$d/ca" --cert "$d/crt" --key "$d/key" -X POST -d '{"key":"AA=="}' \
    "https://$ip:2379/v3/kv/range" | jq -r .header.revision)
  local compacted=false
  if [[ "$rev" =~ ^[0-9]+$ ]] &&
    curl -s --fail --cacert "$d/ca" --cert "$d/crt" --key "$d/key" -X POST \
      -d "{\"revision\":\"$rev\",\"physical\":true}" "https://$ip:2379/v3/kv/compaction" >/dev/null; then
    compacted=true
  fi
  rm -rf "$d"
  $compacted || die "etcd did not compact (revision '$rev')"
  echo "$rev"
}
# The controller process's established TCP connections reset (ss -K in its network namespace,
# its own sockets only); prints how many it had and how many are left. Its HTTP/2 connections
# to the API server carry every watch it has.
reset_connections() {
  local pid=$1
  "$DOCKER" exec "$node" sh -c '
    pid=$1
    mine() { nsenter -t "$pid" -n ss -tnpH state established | grep "pid=$pid,"; }
    ports=$(mine | awk "{ n = split(\$3, a, \":\"); print a[n] }" | sort -u)
    [ -n "$ports" ] || { echo 0 0; exit 0; }
    filter=$(for p in $ports; do printf "sport = :%s or " "$p"; done)
    nsenter -t "$pid" -n ss -K -tnH state established "( ${filter% or } )" >/dev/null
    echo "$(echo $ports | wc -w) $(mine | wc -l)"' sh "$pid"
}
# How each user got HPAs after $1 (ms since the epoch), from the audit log on the API server's
# stdout: one request per audit ID, as a LIST, a streaming list (a watch with
# sendInitialEvents=true), a watch from a resourceVersion (one resumed, or the one after a LIST),
# or a watch from now. Prints "user: LIST × 1, watch from a resourceVersion × 2; user: …"
# ("none" when nobody asked).
hpa_reads_since() {
  kubectl -n kube-system logs "kube-apiserver-$node" 2>/dev/null | jq -nRr --argjson since "$1" '
    def ms: (.[0:19] + "Z" | fromdateiso8601) * 1000 + (.[20:23] | tonumber);
    def kind: if .verb == "list" then "LIST"
      elif (.requestURI | test("sendInitialEvents=true")) then "streaming list"
      elif (.requestURI | test("resourceVersion=[1-9]")) then "watch from a resourceVersion"
      else "watch from now" end;
    [inputs | fromjson? | select(.kind == "Event" and .objectRef.resource == "horizontalpodautoscalers")
      | select(.requestReceivedTimestamp | ms > $since)]
    | unique_by(.auditID) | group_by(.user.username)
    | map("\(.[0].user.username): " + (group_by(kind) | map("\(.[0] | kind) × \(length)") | join(", ")))
    | if length == 0 then "none" else join("; ") end' 2>/dev/null || echo "not read"
}
stub_away() {
  kubectl -n hpa-conformance-system patch svc hpa-metrics-stub --type merge \
    -p '{"spec":{"selector":{"app.kubernetes.io/name":"hpa-metrics-stub-away"}}}' >/dev/null
}
stub_back() {
  [ -n "$stub_selector" ] || return 0
  kubectl -n hpa-conformance-system patch svc hpa-metrics-stub --type merge -p "{\"spec\":{\"selector\":$stub_selector}}" >/dev/null
}
# Everything a fault may have changed, put back (also on exit).
restore_all() {
  for m in kube-apiserver etcd; do
    "$DOCKER" exec "$node" sh -c "[ -f /root/$m.yaml ] && mv /root/$m.yaml $manifests/$m.yaml" 2>/dev/null || true
  done
  wait_apiserver || return 1
  watch_cache_on || true
  unsqueeze
  allow_scales
  stub_back
}
# What a fault left behind, one item a line.
left_behind() {
  local controller=$1
  for m in kube-apiserver etcd kube-controller-manager kube-scheduler; do
    "$DOCKER" exec "$node" test -f "$manifests/$m.yaml" || echo "$m's manifest missing"
  done
  [[ "$(apiserver_args)" != *--watch-cache=false* ]] || echo "the API server without its watch cache"
  kubectl get flowschema hpa-conformance-squeeze >/dev/null 2>&1 && echo "the FlowSchema"
  kubectl get flowschema hpa-conformance-squeeze-noise >/dev/null 2>&1 && echo "the noise FlowSchema"
  kubectl get validatingadmissionpolicy hpa-conformance-refuse-scale >/dev/null 2>&1 && echo "the admission policy"
  [ "$(kubectl -n hpa-conformance-system get svc hpa-metrics-stub -o jsonpath='{.spec.selector}')" = "$stub_selector" ] || echo "the stub's Service selector"
  local active
  active=$(kubectl get ns -l app.kubernetes.io/managed-by=hpa-conformance-lane --no-headers 2>/dev/null | awk '$2 == "Active"' | wc -l)
  [ "$active" = 0 ] || echo "$active lane namespaces"
  wait_controller "$controller" || echo "$controller not Ready"
}

# --- one run -----------------------------------------------------------------------------------
# run_case CONTROLLER FAULT CASE [N]: the case's run on the lane with FAULT (none: the baseline)
# injected at its moment; writes the judged row to $out/rows.jsonl.
run_case() {
  local controller=$1 fault=$2 case_file=$3
  local dir=$out/$controller/$fault-$(basename "$case_file" .yaml)${4:+-$4} prefix
  prefix=$(prefix_of "$case_file")
  mkdir -p "$dir"
  # Namespaces of earlier runs of the case (still terminating) are not this run's.
  kubectl get ns -o name | sed 's#^namespace/##' | { grep "^$prefix" || true; } >"$dir/earlier-namespaces"
  [ "$fault" != watch-loss ] || watch_cache_off "$controller"
  "$bin" run --target cluster --kubeconfig "$KUBECONFIG" --kubernetes-version "$minor" --time-scale 5 \
    --feature-gates HPAScaleToZero=true --report "$dir" "$case_file" >"$dir/run.txt" 2>&1 &
  local run=$! end= first= ns= note= compacted_at=
  if [ "$fault" != none ]; then
    read -r moment delay < <(moment_of "$fault")
    # The case's namespace, once the moment has come.
    for _ in $(seq 480); do
      case $moment in
        up) ns=$(kubectl get hpa -A -o jsonpath='{range .items[?(@.status.lastScaleTime)]}{.metadata.namespace}{"\n"}{end}' 2>/dev/null || true) ;;
        stabilized) ns=$(kubectl get hpa -A -o json 2>/dev/null |
          jq -r '.items[] | select(any(.status.conditions[]?; .reason == "ScaleDownStabilized")) | .metadata.namespace' || true) ;;
      esac
      ns=$(grep "^$prefix" <<<"$ns" | grep -vxF -f "$dir/earlier-namespaces" | head -1 || true)
      [ -n "$ns" ] && break
      kill -0 $run 2>/dev/null || break
      sleep 0.25
    done
    if [ -z "$ns" ]; then
      log "$controller/$fault: the moment ($moment) did not come"
    else
      sleep "$delay"
      log "$controller/$fault: injecting in $ns"
      case $fault in
        apiserver-restart) note=$(restart_static kube-apiserver kube-apiserver) ;;
        etcd-restart) note=$(restart_static etcd etcd) ;;
        throttle)
          noise_setup
          rejected=$(squeeze_rejected)
          squeeze "$(sa_of "$controller")"
          flood 12
          unsqueeze
          note="$(( $(squeeze_rejected) - rejected )) requests of the controller rejected (429)" ;;
        watch-loss)
          pid=$(leader_pid "$controller")
          [ -n "$pid" ] || die "no $controller process holding the Lease"
          compacted_at=$(now_ms)
          rev=$(compact_etcd)
          read -r conns still < <(reset_connections "$pid")
          [ "${still:-0}" = 0 ] || die "ss -K left $still of the controller's connections open"
          note="etcd compacted at revision $rev, $conns connections of the controller reset" ;;
        sigkill)
          pid=$(leader_pid "$controller")
          [ -n "$pid" ] || die "no $controller process holding the Lease"
          "$DOCKER" exec "$node" kill -KILL "$pid" ;;
        metrics-unavailable) stub_away; sleep 8; stub_back ;;
        scale-refused) refuse_scales "$ns"; sleep 10; allow_scales ;;
      esac
      end=$(now_ms)
      first=$("$bin" kind-faults --kubeconfig "$KUBECONFIG" first-read --namespace-prefix "$prefix" \
        --since-ms "$end" --timeout-seconds 90 2>"$dir/first-read.txt" || true)
      log "$controller/$fault: fault ended; first metric read $( [ -n "$first" ] && echo "$(( first - end )) ms later" || echo "not seen")"
    fi
  fi
  wait $run || true
  if [ "$fault" = watch-loss ]; then
    [ -z "$compacted_at" ] || note="$note; HPAs read again (audit log): $(hpa_reads_since "$compacted_at")"
    watch_cache_on
  fi
  local left=()
  mapfile -t left < <(left_behind "$controller")
  local args=(--fault "$fault" --controller "$controller" --baseline "$out/$controller/none-$(basename "$case_file" .yaml)/report.json" --run "$dir/report.json")
  [ -z "$end" ] || [ -z "$first" ] || args+=(--fault-end-ms "$end" --first-read-ms "$first")
  for l in "${left[@]}"; do args+=(--left-behind "$l"); done
  [ -z "$note" ] || args+=(--note "$note")
  [ -s "$dir/report.json" ] || { tail -5 "$dir/run.txt" >&2; die "$controller/$fault: the run wrote no report"; }
  "$bin" kind-faults judge "${args[@]}" | tee -a "$out/rows.jsonl" >/dev/null
  log "$controller/$fault: $(tail -1 "$out/rows.jsonl" | jq -c '{passed, wrong: ((.values_outside | length) + (.extra_rescales | length)), recovery_seconds, left_behind}')"
}

for controller in $controllers; do
  case $controller in
    kcm) ;;
    reference) [ -n "$current" ] || switch_to_reference ;;
    *) die "unknown controller $controller (kcm, reference)" ;;
  esac
  wait_controller "$controller" || die "$controller is not Ready"
  for c in $(for f in "${faults[@]}"; do case_of "$f"; done | sort -u); do
    if [ -s "$out/$controller/none-$(basename "$c" .yaml)/report.json" ]; then
      log "$controller: the fault-free run of $c is there already (APPEND)"
    elif [ "$baseline_on" = core ]; then
      dir=$out/$controller/none-$(basename "$c" .yaml)
      mkdir -p "$out/$controller"
      "$bin" run --target core --kubernetes-version "$minor" --feature-gates HPAScaleToZero=true --report "$dir" "$c" >"$dir.txt" 2>&1 ||
        die "$c fails on the core: $(tail -3 "$dir.txt")"
    else
      run_case "$controller" none "$c"
    fi
  done
  for f in "${faults[@]}"; do
    # A run's folder is numbered only when there are several.
    for i in $(seq "$repeat"); do
      run_case "$controller" "$f" "$(case_of "$f")" "$([ "$repeat" = 1 ] || echo "$i")"
    done
  done
done

"$bin" kind-faults table "$out/rows.jsonl" | tee "$out/table.txt"
bad=$(jq -s '[.[] | select(.controller == "reference" and (((.values_outside | length) + (.extra_rescales | length)) > 0 or (.left_behind | length) > 0))] | length' "$out/rows.jsonl")
[ "$bad" = 0 ] || { log "FAIL: the reference made a wrong scale decision or left something behind in $bad runs"; exit 1; }
