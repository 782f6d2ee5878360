#!/usr/bin/env bash
# make demo: build, install and run a sample eps self-join on a throwaway
# cluster (pg_virtualenv -t: beside any other cluster), printing the result and its timing.
set -euo pipefail
cd "$(dirname "$0")/.."
PGVER=${PGVER:-15}
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
GJ_PG18=0 GJ_CITUS=0 regress/install-deps.sh	# the demo runs on 15 alone, without Citus
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/$PGVER/bin/pg_config}
make -s -j2 >/dev/null
$SUDO make -s install >/dev/null
demo=$(mktemp --suffix=.sql)
trap 'rm -f "$demo"' EXIT
cat > "$demo" <<'SQL'
\set ON_ERROR_STOP 1
\pset footer off
CREATE EXTENSION gpujoin;
SELECT * FROM gpujoin_info();
\echo '== 1,000,000 random points in [0,100]^2'
SELECT setseed(0.5);
CREATE TABLE places (id bigint PRIMARY KEY, x float8, y float8);
INSERT INTO places SELECT i, random() * 100, random() * 100 FROM generate_series(1, 1000000) i;
ANALYZE places;
\timing on
\echo '== every pair within 0.3 of each other (about 28 neighbours a point)'
SELECT count(*) AS pairs, round(avg(dist)::numeric, 4) AS avg_dist
FROM eps_selfjoin('places', '{x,y}', 0.3);
\echo '== the five closest pairs'
SELECT * FROM eps_selfjoin('places', '{x,y}', 0.3) ORDER BY dist, a LIMIT 5;
\echo '== the same join over a query (as with PostGIS: SELECT id, ST_X(g), ST_Y(g) ...)'
SELECT count(*) FROM eps_selfjoin_sql('SELECT id, x, y FROM places WHERE x < 50', 0.3);
\echo '== neighbour counts per point, without storing a pair'
SELECT n AS n_neighbours, count(*) AS points
FROM eps_neighbor_counts('places', '{x,y}', 0.3)
GROUP BY n ORDER BY n LIMIT 8;
\echo '== DBSCAN (as ST_ClusterDBSCAN): the largest clusters and the noise'
SELECT cluster, count(*) AS points, count(*) FILTER (WHERE is_core) AS core
FROM dbscan('places', '{x,y}', 0.1, 5)
GROUP BY cluster ORDER BY count(*) DESC LIMIT 5;
\echo '== the neighbours of one point, nearest first'
SELECT id, neighbors[1:5] AS nearest, dists[1:5] AS dists FROM eps_neighbors('places', '{x,y}', 0.3) WHERE id = 42;
SQL
pg_virtualenv -t -v "$PGVER" -o jit=off psql -X -f "$demo" postgres
