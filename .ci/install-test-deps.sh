#!/usr/bin/env bash
# Installs what the test suite needs beyond the Rust toolchain: the real MCP
# servers the MCP tests talk to and the MCP clients that drive `troupe mcp
# serve` (the Python SDK, the Inspector), Chromium for the browser tests,
# PostgreSQL for the PostgreSQL store's tests, and the Mermaid renderer that
# draws troupe's charts in Chromium, and promtool for the metrics.
# Idempotent; safe to run on every CI run and on a developer machine.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
for script in install-mcp-servers.sh install-browser.sh install-editor.sh install-postgres.sh install-mermaid.sh install-prometheus.sh; do
  if [ -f "$here/$script" ]; then
    echo "== $script"
    bash "$here/$script"
  fi
done
