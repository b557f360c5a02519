#!/usr/bin/env bash
# `just upstream-corpus [RELEASE…]`: the whole corpus on upstream's own controller code of each
# release (default: every release in adapters/upstream/versions/, 1.32 … 1.37), each judged at
# its own Kubernetes version (`--kubernetes-version`): the adapter of that release is built first
# (cached by its inputs). Every case the reference core runs at that release must run on upstream
# too and pass: the only extra skips allowed are the rejections (kind-validation confirms those on
# the API server), so every expectation, on every release, is confirmed by running upstream
# (cases/COVERAGE.md, "Every expectation confirmed by running upstream"). Prints the corpus time
# per release.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ $# -eq 0 ]; then
  mapfile -t releases < <(cd adapters/upstream/versions && ls -d 1.*/ | tr -d / | sort -V)
else
  releases=("$@")
fi
bin=$(scripts/harness-bin.sh)
status=0
for release in "${releases[@]}"; do
  adapters/upstream/build.sh "$release"
  patch=$(cd adapters/upstream/versions && ls -d "${release}"*/ | tr -d / | sort -V | tail -1)
  minor=${patch%.*}
  out=target/upstream-corpus/$minor
  rm -rf "$out"
  "$bin" run cases --kubernetes-version "$minor" --report "$out/core" --format json >/dev/null || true
  start=$(date +%s.%N)
  code=0
  "$bin" run cases --kubernetes-version "$minor" \
    --target "exec:adapters/upstream/bin/$patch/hpa-upstream-adapter" --report "$out/upstream" >"$out.txt" || code=$?
  took=$(python3 -c "import time; print('%.1f' % (time.time() - $start))")
  python3 - "$out" "$minor" "$took" "$code" <<'PY' || status=1
import json, sys
out, minor, took, code = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
up = json.load(open(out + "/upstream/report.json"))["cases"]
core = {c["name"]: c for c in json.load(open(out + "/core/report.json"))["cases"]}
bad = [c["name"] + ": " + c["skip_reason"] for c in up
       if c["skipped"] and not core[c["name"]]["skipped"]
       and not c["skip_reason"].startswith("the API server rejects this HPA")]
failed = [c["name"] for c in up if not c["passed"] and not c["skipped"]]
print("upstream-corpus %s: %d cases, %d passed, %d failed, %d skipped (%d as on the core at %s, the rest rejections); %s s"
      % (minor, len(up), sum(c["passed"] for c in up), len(failed), sum(c["skipped"] for c in up),
         sum(c["skipped"] and core[c["name"]]["skipped"] for c in up), minor, took))
if bad:
    sys.exit("skipped on upstream %s, so not confirmed by running it:\n" % minor + "\n".join(bad))
if failed or code != 0:
    sys.exit("failed on upstream %s: %s (target/upstream-corpus/%s.txt)" % (minor, ", ".join(failed) or "exit %d" % code, minor))
PY
done
exit $status
