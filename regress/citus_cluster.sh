#!/usr/bin/env bash
# Runs a command against a throwaway Citus cluster on this machine: a
# coordinator and two workers (GJ_CITUS_WORKERS, 1 to 8), PostgreSQL instances of the server
# whose pg_config is $PG_CONFIG (default: Debian's 15), each on its own
# port with shared_preload_libraries = 'citus' (jit off: the GPU host has
# no LLVM), sockets in a temporary
# directory, trust authentication for the local superuser (as root, the
# servers run as GJ_CLUSTER_OWNER, default postgres); the database
# citus_check made on each with the citus and gpujoin extensions, the
# workers added to the coordinator.  Removed afterwards whatever the
# command did.  The command gets PGHOST, PGPORT (the coordinator's), PGUSER, PGDATABASE, and
# GJ_WORKER_PORTS (the workers' ports, space-separated).
#   citus_cluster.sh command...
set -euo pipefail
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
bindir=$("$PG_CONFIG" --bindir)
[ -f "$("$PG_CONFIG" --pkglibdir)/citus.so" ] || { echo "citus_cluster: Citus is not installed for $PG_CONFIG"; exit 2; }
owner=$(id -un)
[ "$(id -u)" -ne 0 ] || owner=${GJ_CLUSTER_OWNER:-postgres}
dir=$(mktemp -d /tmp/gjcitus.XXXXXX)
chown "$owner" "$dir"
# su drops LD_LIBRARY_PATH (a server unpacked outside the system paths needs it)
as_owner() {
	if [ "$owner" = "$(id -un)" ]; then
		"$@"
	else
		su "$owner" -s /bin/sh -c "$(printf '%q ' env LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" "$@")"
	fi
}
nworkers=${GJ_CITUS_WORKERS:-2}
[[ "$nworkers" =~ ^[1-8]$ ]] || { echo "citus_cluster: GJ_CITUS_WORKERS must be 1 to 8"; exit 2; }
nodes=(coord)
for ((w = 1; w <= nworkers; w++)); do nodes+=("w$w"); done
cleanup() {
	for n in "${nodes[@]}"; do
		as_owner "$bindir/pg_ctl" -D "$dir/$n" -m immediate stop >/dev/null 2>&1 || true
	done
	rm -rf "$dir"
}
trap cleanup EXIT
# a step that fails says which, with the server's last words
trap 'echo "citus_cluster: failed at line $LINENO"; tail -5 "$dir"/*.log 2>/dev/null' ERR
port=$(( (RANDOM % 2000) + 56000 ))
ports=()
for n in "${nodes[@]}"; do
	as_owner "$bindir/initdb" -D "$dir/$n" -U postgres -A trust --no-sync >/dev/null
	# the workers reach each other and the coordinator over local TCP; a port
	# taken between the probe and the start: the next one (five tries)
	for try in 1 2 3 4 5; do
		while (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; do port=$((port + 1)); done
		as_owner "$bindir/pg_ctl" -D "$dir/$n" -l "$dir/$n.log" -w \
			-o "-p $port -k $dir -c listen_addresses=localhost -c fsync=off -c shared_preload_libraries=citus -c max_worker_processes=16 -c jit=off" \
			start >/dev/null && break
		[ "$try" -lt 5 ] || { echo "citus_cluster: $n did not start"; tail -5 "$dir/$n.log"; exit 1; }
		port=$((port + 1))
	done
	ports+=("$port")
	as_owner "$bindir/psql" -X -q -h "$dir" -p "$port" -U postgres -d postgres \
		-c "CREATE DATABASE citus_check" >/dev/null
	as_owner "$bindir/psql" -X -q -h "$dir" -p "$port" -U postgres -d citus_check \
		-c "CREATE EXTENSION citus" -c "CREATE EXTENSION gpujoin" >/dev/null
	port=$((port + 1))
done
as_owner "$bindir/psql" -X -q -h "$dir" -p "${ports[0]}" -U postgres -d citus_check \
	-c "SELECT citus_set_coordinator_host('localhost', ${ports[0]})" >/dev/null
for p in "${ports[@]:1}"; do
	as_owner "$bindir/psql" -X -q -h "$dir" -p "${ports[0]}" -U postgres -d citus_check \
		-c "SELECT citus_add_node('localhost', $p)" >/dev/null
done
export PGHOST=$dir PGPORT=${ports[0]} PGUSER=postgres PGDATABASE=citus_check PATH=$bindir:$PATH
export GJ_WORKER_PORTS="${ports[*]:1}"
"$@"
