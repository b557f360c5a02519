#!/usr/bin/env bash
# Builds the project's container images: each a static (musl) binary alone in a FROM-scratch image
# run as a non-root numeric user. `image.sh [NAME...]` with NAME in:
#   metrics-stub  hpa-conformance/metrics-stub   (crate hpa-metrics-stub, metrics-stub/Dockerfile)
#   reference     hpa-conformance/hpa-reference  (crate hpa-reference, feature controller, reference/Dockerfile)
#   harness       hpa-conformance/harness        (crate hpa-harness, binary hpa-conformance, harness/Dockerfile):
#                 the corpus baked in at /cases, its commit (the last that changed cases/, -dirty
#                 with uncommitted changes) and fingerprint (`hpa-conformance corpus`) in the labels
#                 hpa-conformance.corpus.commit / .fingerprint / .cases and in every report it writes
# (default: all three). Each image is tagged :<12 hex of the binary's sha256>, :dev (what the manifests
# run, with imagePullPolicy Never) and :src-<12 hex of its inputs>: when an image with the inputs'
# tag exists nothing is built, so a warm run costs a hash. The binaries are built by
# kind-config/scripts/static-build.sh: one cargo invocation for all three (shared dependencies
# compile once), which installs the musl target and musl-tools when missing.
# Prints one line per image: `<repo>:<binary hash> (also :dev): <bytes> bytes (<KiB> KiB)`.
#
# `image.sh --binary NAME FILE` writes NAME's static binary for the current inputs to FILE, without
# building an image: copied out of the image with the inputs' tag when there is one (what a warm CI
# run has: the binary static-build.sh would compile again, ~6 min, since CI prunes the workspace's
# own artefacts), else built by static-build.sh. CI runs the upstream corpus and fuzzing with the
# harness it writes (scripts/harness-bin.sh, HPA_CONFORMANCE_BIN).
set -euo pipefail

binary_to=
if [ "${1:-}" = --binary ]; then
  [ $# = 3 ] || { echo "usage: image.sh --binary NAME FILE" >&2; exit 2; }
  binary_to=$(realpath -m -- "$3") # FILE as given, before the cd below
  set -- "$2"
fi
cd "$(dirname "$0")/../.."
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(metrics-stub reference harness)

# name -> image repository, binary, Dockerfile, input folders (the packages and features that build
# the binaries: static-build.sh)
spec() {
  case $1 in
    metrics-stub) echo "hpa-conformance/metrics-stub hpa-metrics-stub metrics-stub/Dockerfile metrics-stub reference/src reference/Cargo.toml" ;;
    reference) echo "hpa-conformance/hpa-reference hpa-reference reference/Dockerfile reference" ;;
    harness) echo "hpa-conformance/harness hpa-conformance harness/Dockerfile harness/src harness/Cargo.toml reference metrics-stub/src metrics-stub/Cargo.toml cases kind-config/metrics-stub/apiservices.yaml" ;;
    *) echo "image.sh: unknown image $1 (metrics-stub, reference, harness)" >&2; return 2 ;;
  esac
}

# Sets repo, binary, dockerfile and folders for image NAME (exits on an unknown one).
load_spec() {
  local line
  line=$(spec "$1") || exit 2
  read -r repo binary dockerfile folders <<<"$line"
}

# The inputs' key: the Rust sources, manifests and YAML (cases, embedded manifests) of the input
# folders and files, the Dockerfile, the workspace manifest and lockfile.
inputs_key() {
  local dockerfile=$1; shift
  { find "$@" -type f \( -name '*.rs' -o -name Cargo.toml -o -name '*.yaml' \) -print0 | sort -z | xargs -0 sha256sum
    sha256sum "$dockerfile" Cargo.toml Cargo.lock
    # The harness's corpus commit is in its labels: a new commit of cases/ is a new image.
    case " $* " in *" cases "*) git log -1 --format=%H -- cases ;; esac; } | sha256sum | cut -c1-12
}

report() {
  local ref=$1 size
  size=$(docker image inspect -f '{{.Size}}' "$ref")
  echo "${ref} (also :dev): $size bytes ($((size / 1024)) KiB)"
}

if [ -n "$binary_to" ]; then
  load_spec "${names[0]}"
  # shellcheck disable=SC2086
  image="$repo:src-$(inputs_key "$dockerfile" $folders)"
  mkdir -p "$(dirname "$binary_to")"
  if docker image inspect "$image" >/dev/null 2>&1; then
    container=$(docker create "$image")
    copied=0
    docker cp -q "$container:/$binary" "$binary_to.part" || copied=$?
    docker rm "$container" >/dev/null
    [ "$copied" = 0 ] || { echo "image.sh: could not copy /$binary out of $image" >&2; exit 1; }
    mv "$binary_to.part" "$binary_to"
    echo "image.sh: $binary_to copied out of $image (no build)" >&2
  else
    out=$(kind-config/scripts/static-build.sh)
    cp "$out/$binary" "$binary_to.part"
    mv "$binary_to.part" "$binary_to"
    echo "image.sh: no image $image: $binary_to built by static-build.sh" >&2
  fi
  echo "$binary_to"
  exit 0
fi

todo=()
declare -A key
for name in "${names[@]}"; do
  load_spec "$name"
  # shellcheck disable=SC2086
  key[$name]=$(inputs_key "$dockerfile" $folders)
  if docker image inspect "$repo:src-${key[$name]}" >/dev/null 2>&1; then
    hash=$(docker image inspect -f '{{index .Config.Labels "hpa-conformance.binary"}}' "$repo:src-${key[$name]}")
    docker tag "$repo:src-${key[$name]}" "$repo:dev"
    docker tag "$repo:src-${key[$name]}" "$repo:$hash"
    echo "image.sh: $name inputs unchanged (src-${key[$name]}): no build" >&2
  else
    todo+=("$name")
  fi
done

if [ ${#todo[@]} -gt 0 ]; then
  # All three binaries, whichever images need building: one set of packages and features, so the
  # build is the one static-build.sh (and CI's release harness) asks for.
  out=$(kind-config/scripts/static-build.sh)
  for name in "${todo[@]}"; do
    load_spec "$name"
    bin="$out/$binary"
    if file "$bin" 2>/dev/null | grep -q 'dynamically linked'; then
      echo "image.sh: $bin is not static" >&2
      exit 1
    fi
    hash=$(sha256sum "$bin" | cut -c1-12)
    context=$(mktemp -d)
    cp "$bin" "$context/$binary"
    extra=()
    if [ "$name" = harness ]; then
      # The corpus, its commit and fingerprint (asked of the binary just built, in the context
      # where the image will run it: `cases` relative to /).
      cp -r cases "$context/cases"
      commit=$(git log -1 --format=%H -- cases)
      [ -z "$(git status --porcelain -- cases)" ] || commit="$commit-dirty"
      id=$(cd "$context" && HPA_CONFORMANCE_CORPUS_COMMIT=$commit ./"$binary" corpus cases)
      extra=(--build-arg "CORPUS_COMMIT=$commit"
        --label "hpa-conformance.corpus.commit=$commit"
        --label "hpa-conformance.corpus.fingerprint=$(jq -r .fingerprint <<<"$id")"
        --label "hpa-conformance.corpus.cases=$(jq -r .cases <<<"$id")")
    fi
    docker build -q -f "$dockerfile" --label "hpa-conformance.binary=$hash" "${extra[@]}" \
      -t "$repo:$hash" -t "$repo:dev" -t "$repo:src-${key[$name]}" "$context" >/dev/null
    rm -rf "$context"
  done
fi

for name in "${names[@]}"; do
  load_spec "$name"
  hash=$(docker image inspect -f '{{index .Config.Labels "hpa-conformance.binary"}}' "$repo:src-${key[$name]}")
  report "$repo:$hash"
done
