#!/usr/bin/env bash
# Installs what building and testing gpujoin needs on Debian/Ubuntu, if missing:
# a C toolchain, PostgreSQL 15 server and its headers (PGXS), postgresql-common
# (pg_virtualenv), and for the tests PostGIS (dbscan is checked against
# ST_ClusterDBSCAN).  Runs apt-get as root, or through sudo.  CUDA is optional:
# the build uses nvcc when it is on PATH or in /usr/local/cuda.
set -euo pipefail
PGVER=${PGVER:-15}
need=()
command -v make >/dev/null || need+=(make)
command -v gcc >/dev/null || need+=(gcc)
dpkg -s "postgresql-server-dev-$PGVER" >/dev/null 2>&1 || need+=("postgresql-server-dev-$PGVER")
dpkg -s "postgresql-$PGVER" >/dev/null 2>&1 || need+=("postgresql-$PGVER")
command -v pg_virtualenv >/dev/null || need+=(postgresql-common)
# tests only: dbscan is checked against PostGIS ST_ClusterDBSCAN
dpkg -s "postgresql-$PGVER-postgis-3" >/dev/null 2>&1 || need+=("postgresql-$PGVER-postgis-3")
[ ${#need[@]} -eq 0 ] && exit 0
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing ${need[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
