#!/usr/bin/env bash
# Installs PostgreSQL (Debian's `postgresql`) for the tests of the PostgreSQL
# store, and starts the test server (start-postgres.sh): a cluster of its
# own in a temporary directory, on 127.0.0.1 and a Unix socket there.
# Idempotent: with the server installed and running, it only says so.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
bash "$here/start-postgres.sh"
