#!/usr/bin/env bash
# Runs a command against a throwaway PostgreSQL cluster of the server whose
# pg_config is $PG_CONFIG, for servers that Debian's pg_virtualenv does not
# know (one built from source, such as ../shared/deps' PostgreSQL 18): a
# temporary data directory, a socket there and a free port, trust
# authentication for the local superuser; removed afterwards whatever the
# command did.  As root, the cluster runs as the postgres user (initdb
# refuses root) and the command as root, with PGHOST, PGPORT and PGUSER set
# and the server's programs first on PATH.
#   PG_CONFIG=/opt/pg18/bin/pg_config pg_cluster.sh [-o 'name=value' ...] command...
set -euo pipefail
bindir=$("${PG_CONFIG:?PG_CONFIG names the server}" --bindir)
opts=()
while [ "${1:-}" = -o ]; do
	opts+=(-c "$2")
	shift 2
done
owner=$(id -un)
[ "$(id -u)" -ne 0 ] || owner=postgres
dir=$(mktemp -d /tmp/gjcluster.XXXXXX)
chown "$owner" "$dir"
as_owner() { if [ "$owner" = "$(id -un)" ]; then "$@"; else su "$owner" -s /bin/sh -c "$(printf '%q ' "$@")"; fi; }
cleanup() {
	as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
port=$(( (RANDOM % 2000) + 54000 ))
while (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; do port=$((port + 1)); done
as_owner "$bindir/initdb" -D "$dir/data" -U postgres -A trust --no-sync >/dev/null
as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
	-o "-p $port -k $dir -c listen_addresses='' -c fsync=off ${opts[*]:-}" start >/dev/null
export PGHOST=$dir PGPORT=$port PGUSER=postgres PGDATABASE=postgres PATH=$bindir:$PATH
"$@"
