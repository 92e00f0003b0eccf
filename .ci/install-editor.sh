#!/usr/bin/env bash
# Installs what the editor tests need: Neovim (its built-in LSP client drives
# `troupe lsp` in crates/troupe-cli/tests/lsp_nvim.rs), Node.js and a C
# compiler (tree-sitter evaluates grammar.js with node and compiles the
# generated parser; npm brings VS Code's TextMate engine for the TextMate
# grammar test), and the tree-sitter CLI, built from crates.io source at
# a pinned version (the npm package downloads a prebuilt binary, which these
# machines cannot fetch). Idempotent: skips whatever is already installed.
#
# Building tree-sitter-cli from source takes about 4 minutes on a 2-core
# machine (measured: 3m44s with one build job); later runs skip it.
set -euo pipefail
TREE_SITTER_VERSION=0.25.10

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
command -v nvim >/dev/null 2>&1 || missing+=(neovim)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
echo "neovim: $(nvim --version | head -1)"
echo "node: $(node --version)"

# VS Code's TextMate engine for the TextMate grammar's snapshot test
# (crates/troupe-lsp/tests/textmate.rs): two small npm packages, pinned by
# the lock file.
textmate_test="$(cd "$(dirname "$0")/.." && pwd)/editors/textmate/test"
if [ ! -d "$textmate_test/node_modules/vscode-textmate" ] || [ ! -d "$textmate_test/node_modules/vscode-oniguruma" ]; then
  (cd "$textmate_test" && npm ci --no-audit --no-fund)
fi
echo "vscode-textmate: installed in $textmate_test/node_modules"

cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
ts="$(command -v tree-sitter || true)"
if [ -z "$ts" ] && [ -x "$cargo_bin/tree-sitter" ]; then ts="$cargo_bin/tree-sitter"; fi
if [ -n "$ts" ] && "$ts" --version 2>/dev/null | grep -q "^tree-sitter $TREE_SITTER_VERSION\b"; then
  echo "tree-sitter $TREE_SITTER_VERSION is installed: $ts"
  exit 0
fi
echo "building tree-sitter-cli $TREE_SITTER_VERSION from source (a few minutes)"
start=$(date +%s)
# Its own target directory: a CARGO_TARGET_DIR of the workspace would keep
# the build around and mix it with the project's.
env -u CARGO_TARGET_DIR cargo install tree-sitter-cli --locked --version "$TREE_SITTER_VERSION"
echo "built tree-sitter-cli in $(( $(date +%s) - start )) s"
"$cargo_bin/tree-sitter" --version
