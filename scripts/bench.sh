#!/usr/bin/env bash
# `just bench [WHICH…]`: printed figures, no assertions (docs/performance.md).
#   just bench                      every benchmark of harness/benches/corpus.rs, then the heap
#                                   allocations of the same work (harness/benches/allocations.rs)
#   just bench corpus decision …    those named: corpus, decision, upstream, upstream-corpus, fuzz
#   just bench callgrind [N]        instructions per decision under valgrind (harness/benches/callgrind.sh)
#   just bench kind-scale [HPAS]    the scale benchmark on kind, kube-controller-manager's HPA
#                                   controller vs the deployed reference (kind-config/scripts/kind-scale.sh;
#                                   ~25 min for 1,000 HPAs)
#   just bench kind-jobs [JOBS] [CASES…]
#                                   the corpus on a three-node kind cluster at --jobs JOBS (8) and
#                                   at --jobs 1: wall time and where the limit is
#                                   (kind-config/scripts/kind-jobs.sh; ~2.5 h for the whole corpus)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
case "${1:-}" in
  kind-scale) shift; exec kind-config/scripts/kind-scale.sh "$@" ;;
  kind-jobs) shift; exec kind-config/scripts/kind-jobs.sh "$@" ;;
  callgrind) shift; exec harness/benches/callgrind.sh "$@" ;;
  *) exec cargo bench -p hpa-harness --bench corpus --bench allocations -- "$@" ;;
esac
