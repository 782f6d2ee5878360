#!/usr/bin/env bash
# SQL benchmark on a throwaway cluster, on the data sets bench_core wrote:
#   SELECT count(*) FROM eps_selfjoin(...)              (gpujoin, CPU engine here)
#   PostGIS ST_DWithin self-join with a GiST index       (2-D cases)
#   cube self-join with a GiST index                     (6-D, 200K points)
#   SELECT count(*) FROM gj_bench_emit_rows(pairs)       (executor ceiling, same rows)
# usage: regress/bench/bench_sql.sh DATA_DIR [--no-postgis]
# Installs postgresql-15-postgis-3 (benchmark only) and the helper module.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=$(realpath "$1")
POSTGIS=1
[ "${2:-}" = "--no-postgis" ] && POSTGIS=0
PGVER=${PGVER:-15}
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/$PGVER/bin/pg_config}
if [ $POSTGIS = 1 ] && ! dpkg -s "postgresql-$PGVER-postgis-3" >/dev/null 2>&1; then
	$SUDO apt-get install -y -qq "postgresql-$PGVER-postgis-3" >/dev/null
fi
$SUDO make -s install >/dev/null
$SUDO make -s -C regress/bench/bench_srf install >/dev/null
chmod -R a+rX "$DATA"

cat > "$DATA/bench.sql" <<SQL
\set ON_ERROR_STOP 1
\pset footer off
SET client_min_messages = warning;
CREATE EXTENSION gpujoin;
CREATE EXTENSION cube;
$( [ $POSTGIS = 1 ] && echo "CREATE EXTENSION postgis;" )
CREATE FUNCTION gj_bench_emit_rows(bigint) RETURNS TABLE (a bigint, b bigint, dist float8)
    AS 'gj_bench_srf', 'gj_bench_emit_rows' LANGUAGE C STRICT;
CREATE TABLE results (case_name text, method text, seconds float8, result bigint);
CREATE FUNCTION bench(c text, m text, q text) RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; n bigint;
BEGIN
    t0 := clock_timestamp();
    EXECUTE q INTO n;
    INSERT INTO results VALUES (c, m, extract(epoch FROM clock_timestamp() - t0), n);
    RAISE WARNING '% % % s, % rows', c, m, round(extract(epoch FROM clock_timestamp() - t0)::numeric, 2), n;
END \$\$;
CREATE FUNCTION ceiling(c text) RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE n bigint;
BEGIN
    SELECT result INTO n FROM results WHERE case_name = c AND method = 'gpujoin';
    PERFORM bench(c, 'ceiling', format('SELECT count(*) FROM gj_bench_emit_rows(%s)', n));
END \$\$;

CREATE TABLE u2 (id int PRIMARY KEY, x float8, y float8);
\copy u2 FROM '$DATA/unif2d_eps0.1.csv' CSV
CREATE TABLE u6 (id int PRIMARY KEY, x1 float8, x2 float8, x3 float8, x4 float8, x5 float8, x6 float8);
\copy u6 FROM '$DATA/unif6d_eps11.2.csv' CSV
CREATE TABLE u6s (id int PRIMARY KEY, x1 float8, x2 float8, x3 float8, x4 float8, x5 float8, x6 float8);
\copy u6s FROM '$DATA/unif6d_200k_eps14.6.csv' CSV
CREATE TABLE e2 (id int PRIMARY KEY, x float8, y float8);
\copy e2 FROM '$DATA/expo2d_eps0.00015.csv' CSV
CREATE TABLE c3 (id int PRIMARY KEY, x float8, y float8, z float8);
\copy c3 FROM '$DATA/clusters3d_eps0.3.csv' CSV
CREATE TABLE u6s_cube AS SELECT id, cube(ARRAY[x1, x2, x3, x4, x5, x6]) AS c FROM u6s;
CREATE INDEX ON u6s_cube USING gist (c);
$( [ $POSTGIS = 1 ] && echo "CREATE TABLE u2_geo AS SELECT id, ST_MakePoint(x, y) AS g FROM u2; CREATE INDEX ON u2_geo USING gist (g);" )
VACUUM ANALYZE;

SELECT bench('unif2d_eps0.1', 'gpujoin', \$q\$SELECT count(*) FROM eps_selfjoin('u2', '{x,y}', 0.1)\$q\$);
SELECT ceiling('unif2d_eps0.1');
SELECT bench('unif2d_eps0.3', 'gpujoin', \$q\$SELECT count(*) FROM eps_selfjoin('u2', '{x,y}', 0.3)\$q\$);
SELECT ceiling('unif2d_eps0.3');
SELECT bench('unif2d_eps1.0', 'gpujoin', \$q\$SELECT count(*) FROM eps_selfjoin('u2', '{x,y}', 1.0)\$q\$);
SELECT ceiling('unif2d_eps1.0');
SELECT bench('unif6d_eps11.2', 'gpujoin', \$q\$SELECT count(*) FROM eps_selfjoin('u6', '{x1,x2,x3,x4,x5,x6}', 11.2)\$q\$);
SELECT ceiling('unif6d_eps11.2');
SELECT bench('unif6d_200k_eps14.6', 'gpujoin', \$q\$SELECT count(*) FROM eps_selfjoin('u6s', '{x1,x2,x3,x4,x5,x6}', 14.6)\$q\$);
SELECT ceiling('unif6d_200k_eps14.6');
SELECT bench('expo2d_eps0.00015', 'gpujoin', \$q\$SELECT count(*) FROM eps_selfjoin('e2', '{x,y}', 0.00015)\$q\$);
SELECT ceiling('expo2d_eps0.00015');
SELECT bench('clusters3d_eps0.3', 'gpujoin', \$q\$SELECT count(*) FROM eps_selfjoin('c3', '{x,y,z}', 0.3)\$q\$);
SELECT ceiling('clusters3d_eps0.3');
SELECT bench('unif6d_200k_eps14.6', 'cube', \$q\$SELECT count(*) FROM u6s_cube a JOIN u6s_cube b
    ON b.c <@ cube_enlarge(a.c, 14.6, 6) AND a.id < b.id AND cube_distance(a.c, b.c) <= 14.6\$q\$);
$( [ $POSTGIS = 1 ] && for e in 0.1 0.3 1.0; do echo "SELECT bench('unif2d_eps$e', 'postgis', \$q\$SELECT count(*) FROM u2_geo a JOIN u2_geo b ON ST_DWithin(a.g, b.g, $e) AND a.id < b.id\$q\$);"; done )

SELECT case_name,
       max(result) FILTER (WHERE method = 'gpujoin') AS pairs,
       round(max(seconds) FILTER (WHERE method = 'gpujoin')::numeric, 2) AS gpujoin_s,
       round(max(seconds) FILTER (WHERE method = 'ceiling')::numeric, 2) AS ceiling_s,
       round((max(result) FILTER (WHERE method = 'gpujoin') / max(seconds) FILTER (WHERE method = 'gpujoin') / 1e6)::numeric, 2) AS gj_mrows_s,
       round((max(seconds) FILTER (WHERE method = 'gpujoin') / max(seconds) FILTER (WHERE method = 'ceiling'))::numeric, 2) AS vs_ceiling,
       round(max(seconds) FILTER (WHERE method IN ('postgis', 'cube'))::numeric, 1) AS alt_s,
       max(method) FILTER (WHERE method IN ('postgis', 'cube')) AS alt,
       max(result) FILTER (WHERE method IN ('postgis', 'cube')) AS alt_pairs,
       round((max(seconds) FILTER (WHERE method IN ('postgis', 'cube')) / max(seconds) FILTER (WHERE method = 'gpujoin'))::numeric, 1) AS speedup
FROM results GROUP BY case_name ORDER BY case_name;
SQL
pg_virtualenv -t -v "$PGVER" -o jit=off -o shared_buffers=2GB psql -X -f "$DATA/bench.sql" postgres
