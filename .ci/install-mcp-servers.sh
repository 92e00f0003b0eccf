#!/usr/bin/env bash
# Installs the real MCP servers that troupe-mcp's tests talk to over stdio.
# Idempotent: a second run with everything in place does nothing but print.
#
#   PyPI mcp-server-time                        -> $DIR/venv/bin/mcp-server-time
#   PyPI mcp (the official Python SDK)          -> $DIR/venv (client of `troupe mcp serve` tests)
#   npm  @modelcontextprotocol/server-everything -> $DIR/npm/node_modules/.bin/mcp-server-everything
#   npm  @modelcontextprotocol/inspector         -> $DIR/npm/node_modules/.bin/mcp-inspector
#        (its CLI mode drives `troupe mcp serve` over stdio in crates/troupe-cli/tests/mcp_stdio.rs)
#   PyPI zippergen (the paper's reference implementation) -> $DIR/venv
#        (troupe-project's differential test of the projection, tests/it/zippergen.rs)
#
# DIR is $TROUPE_MCP_SERVERS, or ~/.cache/troupe/mcp-servers by default; the
# tests look in the same place (crates/troupe-mcp/tests/support/mod.rs). No
# test downloads anything: without these, they fail and say to run this script.
set -euo pipefail

TIME_VERSION="2026.10.19"
MCP_VERSION="2.3.0"
ZIPPERGEN_VERSION="0.1.0a5"
EVERYTHING_VERSION="2026.8.31"
INSPECTOR_VERSION="2.12.0"
DIR="${TROUPE_MCP_SERVERS:-$HOME/.cache/troupe/mcp-servers}"
mkdir -p "$DIR"

# mcp-server-time, in its own virtual environment.
if [ ! -x "$DIR/venv/bin/python" ]; then
  python3 -m venv "$DIR/venv"
fi
if ! "$DIR/venv/bin/python" -m pip show mcp-server-time 2>/dev/null | grep -qx "Version: $TIME_VERSION"; then
  "$DIR/venv/bin/python" -m pip install --disable-pip-version-check --quiet "mcp-server-time==$TIME_VERSION"
fi

# The Python SDK itself, pinned (crates/troupe-mcp/tests/python/ is its client code).
if ! "$DIR/venv/bin/python" -m pip show mcp 2>/dev/null | grep -qx "Version: $MCP_VERSION"; then
  "$DIR/venv/bin/python" -m pip install --disable-pip-version-check --quiet "mcp==$MCP_VERSION"
fi

# ZipperGen, pinned exactly (the version the differential test expects).
if ! "$DIR/venv/bin/python" -m pip show zippergen 2>/dev/null | grep -qx "Version: $ZIPPERGEN_VERSION"; then
  "$DIR/venv/bin/python" -m pip install --disable-pip-version-check --quiet "zippergen==$ZIPPERGEN_VERSION"
fi

# server-everything and the Inspector, pinned exactly, in a private npm prefix.
npm_version() {
  local manifest="$DIR/npm/node_modules/$1/package.json"
  if [ -f "$manifest" ]; then node -p "require('$manifest').version"; fi
}
if [ "$(npm_version @modelcontextprotocol/server-everything)" != "$EVERYTHING_VERSION" ] ||
   [ "$(npm_version @modelcontextprotocol/inspector)" != "$INSPECTOR_VERSION" ]; then
  mkdir -p "$DIR/npm"
  npm install --prefix "$DIR/npm" --save-exact --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" \
    "@modelcontextprotocol/inspector@$INSPECTOR_VERSION"
fi

echo "TROUPE_MCP_SERVERS=$DIR"
echo "mcp-server-time: $DIR/venv/bin/mcp-server-time"
echo "python mcp SDK: $DIR/venv/bin/python ($MCP_VERSION)"
echo "zippergen: $DIR/venv/bin/python ($ZIPPERGEN_VERSION)"
echo "server-everything: $DIR/npm/node_modules/.bin/mcp-server-everything"
echo "MCP Inspector: $DIR/npm/node_modules/.bin/mcp-inspector ($INSPECTOR_VERSION)"
