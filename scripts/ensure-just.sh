# Sourced, from the repository's root (`. scripts/ensure-just.sh`), by ./test and .ci/run: puts
# `just` on PATH, installing it when it is missing. The pinned version is stated here only.
#   1. a `just` already on PATH is used as it is;
#   2. else .cache/venv/bin/just (git-ignored), installed from PyPI (rust-just, a prebuilt wheel)
#      into a virtualenv there;
#   3. else, without Python's venv or pip, `cargo install` of the same version into .cache/just
#      (cargo is needed anyway; this compiles just, a minute or two).
JUST_VERSION=1.59.0
if ! command -v just >/dev/null 2>&1; then
  if [ ! -x .cache/venv/bin/just ] && command -v python3 >/dev/null 2>&1; then
    echo "installing just $JUST_VERSION from PyPI into .cache/venv" >&2
    { python3 -m venv .cache/venv \
        && .cache/venv/bin/pip install --quiet --disable-pip-version-check "rust-just==$JUST_VERSION"; } \
      || { echo "(no venv/pip here; trying cargo install)" >&2; rm -rf .cache/venv; }
  fi
  if [ -x .cache/venv/bin/just ]; then
    export PATH="$PWD/.cache/venv/bin:$PATH"
  else
    if [ ! -x .cache/just/bin/just ]; then
      echo "installing just $JUST_VERSION with cargo into .cache/just" >&2
      cargo install --locked --quiet --root .cache/just "just@$JUST_VERSION"
    fi
    export PATH="$PWD/.cache/just/bin:$PATH"
  fi
fi
