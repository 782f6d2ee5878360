#!/usr/bin/env bash
# Installs what building and testing gpujoin needs on Debian/Ubuntu, if missing:
# a C toolchain, PostgreSQL 15 server and its headers (PGXS), postgresql-common
# (pg_virtualenv), and for the tests PostGIS (dbscan is checked against
# ST_ClusterDBSCAN) and pgvector (vector/halfvec input is checked against
# pgvector's own operators).  Runs apt-get as root, or through sudo.  CUDA is
# optional: the build uses nvcc when it is on PATH or in /usr/local/cuda.
#
# Debian does not package pgvector: it is built from the source the
# workplace provides beside this repository (../shared/deps/install-pgvector.sh,
# or the script GJ_PGVECTOR_SCRIPT names).  Without it the pgvector test
# does not run, and regress/run_tests.sh says so; everything else is
# independent of pgvector.
set -euo pipefail
PGVER=${PGVER:-15}
here=$(cd "$(dirname "$0")" && pwd)
need=()
command -v make >/dev/null || need+=(make)
command -v gcc >/dev/null || need+=(gcc)
dpkg -s "postgresql-server-dev-$PGVER" >/dev/null 2>&1 || need+=("postgresql-server-dev-$PGVER")
dpkg -s "postgresql-$PGVER" >/dev/null 2>&1 || need+=("postgresql-$PGVER")
command -v pg_virtualenv >/dev/null || need+=(postgresql-common)
# tests only: dbscan is checked against PostGIS ST_ClusterDBSCAN
dpkg -s "postgresql-$PGVER-postgis-3" >/dev/null 2>&1 || need+=("postgresql-$PGVER-postgis-3")
# the Debian package (make deb), which the tests install and run against
if command -v dpkg-buildpackage >/dev/null; then
	dpkg -s debhelper >/dev/null 2>&1 || need+=(debhelper)
	dpkg -s postgresql-server-dev-all >/dev/null 2>&1 || need+=(postgresql-server-dev-all)
fi
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
if [ ${#need[@]} -gt 0 ]; then
	echo "install-deps: installing ${need[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# The workplace's test dependencies: GJ_DEPS_DIR, else shared/deps beside
# the repository (../shared/deps), else the workplace's own copy.
deps=${GJ_DEPS_DIR:-}
for d in "$here/../../shared/deps" /work/shared/deps; do
	[ -n "$deps" ] || [ ! -d "$d" ] || deps=$d
done
# tests only: pgvector, from source
pg_config=/usr/lib/postgresql/$PGVER/bin/pg_config
script=${GJ_PGVECTOR_SCRIPT:-$deps/install-pgvector.sh}
if [ ! -f "$("$pg_config" --sharedir)/extension/vector.control" ] && [ -f "$script" ]; then
	echo "install-deps: building pgvector with $script"
	$SUDO env PATH="$(dirname "$pg_config"):$PATH" bash "$script" >/dev/null
fi
# tests only: Citus 13.0.5 for 15, from source (Debian does not package
# it; regress/citus_check.sh runs gpujoin on distributed tables). Nothing
# of it is linked or built into gpujoin. GJ_CITUS=0 skips it (2-3 minutes).
script_citus=${GJ_CITUS_SCRIPT:-$deps/install-citus.sh}
if [ "${GJ_CITUS:-1}" != 0 ] && [ -f "$script_citus" ] && [ ! -f "$("$pg_config" --pkglibdir)/citus.so" ]; then
	echo "install-deps: building Citus with $script_citus"
	# not fatal: without it run_tests.sh says the Citus check did not run (a failure on CI)
	$SUDO env PG_CONFIG="$pg_config" bash "$script_citus" >/dev/null ||
		echo "install-deps: Citus's build failed"
fi
# tests only: PostgreSQL 18, from source (Debian bookworm packages only 15),
# and pgvector for it; regress/run_tests.sh runs the suite on it too.
# GJ_PG18=0 skips it (about 7 minutes on 2 cores, once per prefix).
pg18=${GJ_PG18_PREFIX:-/opt/pg18}
script18=${GJ_PG18_SCRIPT:-$deps/install-postgresql18.sh}
if [ "${GJ_PG18:-1}" != 0 ] && [ -f "$script18" ]; then
	# built already: its server and contrib's file_fdw (in 18's pkglibdir)
	if [ ! -x "$pg18/bin/pg_config" ] || [ ! -f "$("$pg18/bin/pg_config" --pkglibdir)/file_fdw.so" ]; then
		echo "install-deps: building PostgreSQL 18 with $script18"
		# once more if the parallel build trips (seen once: a generated header not there yet)
		$SUDO bash "$script18" "$pg18" >/dev/null ||
			{ echo "install-deps: PostgreSQL 18's build failed, trying once more"; $SUDO bash "$script18" "$pg18" >/dev/null; }
	fi
	if [ ! -f "$("$pg18/bin/pg_config" --sharedir)/extension/vector.control" ] && [ -f "$script" ]; then
		echo "install-deps: building pgvector for PostgreSQL 18"
		$SUDO env PATH="$pg18/bin:$PATH" bash "$script" >/dev/null
	fi
fi
exit 0
