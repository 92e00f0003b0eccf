#!/usr/bin/env bash
# Installs `promtool` (Debian's `prometheus` package), with which the tests
# check that `/metrics` of `troupe worker --health` and `troupe serve` is
# valid Prometheus text. Idempotent. The package's own server is not used.
set -euo pipefail
if ! command -v promtool >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
promtool --version | head -1
