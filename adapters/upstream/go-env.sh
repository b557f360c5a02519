# Sourced by build.sh and versions/gen.sh: the Go toolchain they run ($GO: `go` on the PATH, else
# /usr/local/go/bin/go), the local toolchain only, and GOFLAGS without a -mod flag (the scripts
# pass their own, which a caller's would fight).
GO="${GO:-}"
if [[ -z "$GO" ]]; then
    if command -v go >/dev/null 2>&1; then GO=go; else GO=/usr/local/go/bin/go; fi
fi
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
GOFLAGS="$(printf '%s' "${GOFLAGS:-}" | sed -E 's/(^| )-mod=[^ ]*//g')"
export GOFLAGS
# No cgo: the adapter and hpa-quantity are pure Go, and with CGO_ENABLED=0 and -trimpath their
# packages are the ones the kind node image's Kubernetes build compiles (kind-config/scripts/
# node-image.sh builds that way), so after a cold node-image build the Go build cache already holds
# them: the 1.37 adapter then built in 17 s instead of 195 s (docs/performance.md, 2026-12-06).
export CGO_ENABLED=0
