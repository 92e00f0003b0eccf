#!/usr/bin/env bash
# Starts the PostgreSQL server the tests use, unless it runs already:
# a cluster in $TROUPE_PG_DIR (default /tmp/troupe-test-postgres), listening
# on 127.0.0.1:$TROUPE_PG_PORT (default 54329) and on a Unix socket in that
# directory, with the superuser `troupe` trusted on loopback only. The tests
# connect to postgres://troupe@127.0.0.1:54329/postgres (or to
# $TROUPE_TEST_POSTGRES) and create a database of their own per test; they
# run this script themselves when the server is not up, so `cargo test`
# works on a machine where only install-postgres.sh ever ran.
set -euo pipefail
dir="${TROUPE_PG_DIR:-/tmp/troupe-test-postgres}"
port="${TROUPE_PG_PORT:-54329}"
bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
if [ -z "$bin" ]; then
  echo "PostgreSQL is not installed: run .ci/install-postgres.sh" >&2
  exit 1
fi
mkdir -p "$dir"
# One starter at a time (test binaries start in parallel).
exec 9>"$dir.lock"
flock 9
if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
  echo "PostgreSQL runs on 127.0.0.1:$port"
  exit 0
fi
# The server refuses to run as root: run it as the `postgres` user Debian's
# package creates.
if [ "$(id -u)" = 0 ]; then
  chown postgres "$dir"
  as=(runuser -u postgres --)
else
  as=()
fi
if [ ! -f "$dir/data/PG_VERSION" ]; then
  "${as[@]}" "$bin/initdb" -D "$dir/data" -U troupe --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log"
fi
rm -f "$dir/data/postmaster.pid"
# The server must not inherit the lock (fd 9) or this script's output:
# it would hold the one and keep the other open for ever.
"${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=400" start \
  >/dev/null 2>"$dir/pg_ctl.err" 9>&- </dev/null
echo "PostgreSQL started on 127.0.0.1:$port (data in $dir/data)"
