#!/usr/bin/env bash
# `just upstream-corpus`: the whole corpus on upstream's own controller code (the adapter the
# justfile builds first). Every case an implementation sees must run there: the only skips allowed
# are the rejections (kind-validation confirms those on the API server), so every expectation is
# confirmed by running upstream (cases/COVERAGE.md, "Every expectation confirmed by running upstream").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo run -q -p hpa-harness -- run cases --target exec:adapters/upstream/bin/hpa-upstream-adapter --report target/upstream-corpus
python3 - <<'PY'
import json, sys
r = json.load(open("target/upstream-corpus/report.json"))
bad = [c["name"] + ": " + c["skip_reason"] for c in r["cases"]
       if c["skipped"] and not c["skip_reason"].startswith("the API server rejects this HPA")]
if bad:
    sys.exit("skipped on upstream, so not confirmed by running it:\n" + "\n".join(bad))
print("upstream-corpus: %d cases, %d skipped, each a rejection"
      % (len(r["cases"]), sum(c["skipped"] for c in r["cases"])))
PY
