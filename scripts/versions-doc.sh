#!/usr/bin/env bash
# `just versions-doc [--check]`: the version matrix of the reference core (`hpa-conformance matrix
# --format markdown`: the corpus at every release 1.32 … 1.37, and what changed for the HPA
# release by release, from the cases' `changedIn`) written between the `<!-- matrix:begin -->` and
# `<!-- matrix:end -->` markers of README.md and docs/versions.md. With --check nothing is
# written: exit 1 when either file's section is not what the corpus gives now (CI runs it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
check=false
[ "${1:-}" = --check ] && check=true
generated=$(mktemp)
trap 'rm -f "$generated"' EXIT
cargo run -q -p hpa-harness -- matrix --format markdown >"$generated"
status=0
for doc in README.md docs/versions.md; do
  python3 - "$doc" "$generated" "$check" <<'PY' || status=1
import sys
doc, gen, check = sys.argv[1], sys.argv[2], sys.argv[3] == "true"
text = open(doc).read()
begin, end = "<!-- matrix:begin -->\n", "<!-- matrix:end -->"
if begin not in text or end not in text:
    sys.exit(f"{doc}: the markers {begin.strip()} and {end} are missing")
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
new = head + begin + open(gen).read() + end + tail
if new == text:
    print(f"{doc}: the version matrix is current")
elif check:
    sys.exit(f"{doc}: the version matrix is stale: run `just versions-doc`")
else:
    open(doc, "w").write(new)
    print(f"{doc}: the version matrix written")
PY
done
exit $status
