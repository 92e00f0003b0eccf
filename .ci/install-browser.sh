#!/usr/bin/env bash
# Installs headless Chromium and chromedriver (Debian packages) for the
# browser test of troupe-web. Idempotent: does nothing when both are there.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  echo "chromium and chromedriver are installed: $(chromium --version 2>/dev/null | head -1)"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends chromium chromium-driver
command -v chromium >/dev/null && command -v chromedriver >/dev/null
echo "installed: $(chromium --version 2>/dev/null | head -1)"
