#!/usr/bin/env bash
# Installs the Mermaid renderer (the npm package, pinned) for the test that
# renders troupe's Mermaid charts in headless Chromium
# (crates/troupe-msc/tests/mermaid_render.rs). Idempotent: does nothing when
# the pinned version is there. The test finds it at the same default path,
# or at $TROUPE_MERMAID_JS.
set -euo pipefail
version="11.17.2"
dir="${TROUPE_MERMAID_DIR:-$HOME/.cache/troupe/mermaid-$version}"
js="$dir/node_modules/mermaid/dist/mermaid.min.js"
if [ -f "$js" ]; then
  echo "mermaid $version is installed: $js"
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends nodejs npm
fi
mkdir -p "$dir"
npm install --prefix "$dir" --no-audit --no-fund --silent "mermaid@$version"
test -f "$js"
echo "installed: $js"
