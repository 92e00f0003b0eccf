#!/usr/bin/env bash
# Makes docs/editor.png: Neovim with `troupe lsp` in xterm under Xvfb, on
# examples/consensus.troupe with one line that reads Alice's `round` at Bob
# (E0301 shown as a diagnostic) and the hover of a variable. Debian packages
# only: xvfb, xterm, imagemagick, neovim, gcc. Run from anywhere; it builds
# `troupe` (debug) and the tree-sitter parser first.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
need=()
for cmd in Xvfb:xvfb xterm:xterm import:imagemagick nvim:neovim cc:gcc; do
  command -v "${cmd%%:*}" >/dev/null 2>&1 || need+=("${cmd#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" fonts-dejavu-core
fi
target="${CARGO_TARGET_DIR:-$repo/target}"
(cd "$repo" && cargo build -q -p troupe-cli)
work="$(mktemp -d)"
trap 'kill "${xvfb_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/rt/parser" "$work/rt/queries/troupe" "$work/examples"
cc -shared -fPIC -O2 -I "$repo/editors/tree-sitter-troupe/src" \
  "$repo/editors/tree-sitter-troupe/src/parser.c" -o "$work/rt/parser/troupe.so"
cp "$repo/editors/tree-sitter-troupe/queries/highlights.scm" "$work/rt/queries/troupe/"
python3 - "$repo/examples/consensus.troupe" "$work/examples/consensus.troupe" <<'PY'
import sys
text = open(sys.argv[1]).read()
anchor = "    act Bob: b, b_reason = reconsider(case, b, a, a_reason)\n"
assert anchor in text
text = text.replace(anchor, "    act Bob: late = round > 3\n" + anchor)
open(sys.argv[2], "w").write(text)
PY
display=":77"
Xvfb "$display" -screen 0 1100x1010x24 >/dev/null 2>&1 &
xvfb_pid=$!
sleep 1
DISPLAY="$display" TROUPE_BIN="$target/debug/troupe" TROUPE_NVIM_RUNTIME="$work/rt" TROUPE_SCREENSHOT=1 \
  XDG_STATE_HOME="$work" XDG_DATA_HOME="$work" XDG_CACHE_HOME="$work" \
  xterm -geometry 120x53+0+0 -fa 'DejaVu Sans Mono' -fs 11 -bg '#1e1e1e' -fg '#d4d4d4' \
  -title 'nvim examples/consensus.troupe' \
  -e sh -c "cd '$work' && exec nvim --clean -u '$repo/editors/screenshot/init.lua' examples/consensus.troupe" &
sleep 6
DISPLAY="$display" import -window root "$repo/docs/editor.png"
echo "wrote $repo/docs/editor.png"
