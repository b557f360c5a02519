#!/usr/bin/env bash
# Installs Debian's chromium (headless use only) for the HTML report's browser test
# (tests/report_browser.rs). Does nothing when a chromium is already on PATH.
# Needs root or sudo, like `apt-get install`.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
  chromium --version
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# fonts-dejavu-core: a font for the page's text and the timelines' labels in screenshots.
$sudo apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
chromium --version
