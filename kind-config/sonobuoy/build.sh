#!/usr/bin/env bash
# The Sonobuoy CLI and image, built here from the Go module proxy (no registry): Sonobuoy
# v0.57.5, one static binary that is both the CLI and what runs in the cluster (the aggregator
# and each plugin's worker sidecar run `/sonobuoy aggregator|worker`, no shell).
#   $CACHE/bin/sonobuoy-v0.57.5       the CLI (built once; `go install` is refused here because the
#                                      proxy does not list the module's versions, so the module is
#                                      downloaded at its exact version and built in place)
#   hpa-conformance/sonobuoy:v0.57.5   that binary alone FROM scratch, non-root (built once)
# Prints the CLI's path. `build.sh --cli-only` builds the CLI alone, with no Docker engine needed
# (CI's Go prebuild: scripts/go-prebuild.sh).
set -euo pipefail
cli_only=false
if [ "${1:-}" = --cli-only ]; then cli_only=true; fi
source "$(dirname "$0")/../scripts/common.sh"
version=v0.57.5
module=github.com/vmware-tanzu/sonobuoy
bin=$CACHE_BIN/sonobuoy-$version
image=hpa-conformance/sonobuoy:$version
mkdir -p "$CACHE_BIN"
if [ "$("$bin" version --short 2>/dev/null)" != "$version" ]; then
  t=$(date +%s)
  log "building sonobuoy $version into $CACHE_BIN"
  dir=$(cd / && go mod download -json "$module@$version" | jq -r .Dir)
  [ -d "$dir" ] || die "go mod download $module@$version gave no module folder"
  tmp=$(mktemp -d "$CACHE_BIN/.sonobuoy-build.XXXXXX")
  # The module's own version file says v0.57.4: the release stamps its version at link time.
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
    -ldflags "-s -w -X $module/pkg/buildinfo.Version=$version" -o "$tmp/sonobuoy" .)
  mv "$tmp/sonobuoy" "$bin"
  rm -rf "$tmp"
  log "sonobuoy built in $(since "$t") s"
fi
if ! $cli_only && ! docker image inspect "$image" >/dev/null 2>&1; then
  context=$(mktemp -d)
  cp "$bin" "$context/sonobuoy"
  cat >"$context/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY sonobuoy /sonobuoy
WORKDIR /
USER 65532:65532
CMD ["/sonobuoy", "aggregator", "--no-exit"]
DOCKERFILE
  docker build -q -t "$image" "$context" >/dev/null
  rm -rf "$context"
  log "image $image built"
fi
echo "$bin"
