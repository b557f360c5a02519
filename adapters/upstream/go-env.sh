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
