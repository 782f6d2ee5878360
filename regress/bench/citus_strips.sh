#!/usr/bin/env bash
# A prototype of issue 45's distributed eps_join, in SQL only, to measure the
# design before it is built into gpujoin (not a test: make test does not run
# it).  On two tables distributed by id (300K 2-D rows each): strips of x,
# 1/64 wide, r's rows repartitioned by Citus into their strip and s's rows
# into every strip within eps (the halo), intermediate tables distributed
# by strip and co-located; then one pushed-down query whose tasks run
# gpujoin's eps_join_sql over each strip's own shards on the workers
# (shards named from the coordinator: a distributed query from a shard's
# task is refused), all in one transaction that is rolled back; the rows
# compared with eps_join on the coordinator.
#   regress/citus_cluster.sh regress/bench/citus_strips.sh
psql -X -q <<'SQL'
SET citus.shard_count = 32;
CREATE TABLE r (id bigint PRIMARY KEY, x float8, y float8);
CREATE TABLE s (id bigint PRIMARY KEY, x float8, y float8);
SELECT create_distributed_table('r', 'id');
SELECT create_distributed_table('s', 'id');
INSERT INTO r SELECT i, random(), random() FROM generate_series(1, 300000) i;
INSERT INTO s SELECT i, random(), random() FROM generate_series(1, 300000) i;
-- a strip's pairs by gpujoin's own engine on the worker, over the strip's shards
CREATE FUNCTION strip_pairs(rs text, ss text, st int, eps float8) RETURNS TABLE (r bigint, s bigint, dist float8) LANGUAGE plpgsql STABLE AS
$$ BEGIN RETURN QUERY SELECT * FROM eps_join_sql(format('SELECT id, x, y FROM %s WHERE strip = %s', rs, st),
                                              format('SELECT id, x, y FROM %s WHERE strip = %s', ss, st), eps); END $$;
\timing on
BEGIN;
CREATE TABLE gj_cells (strip int PRIMARY KEY, rs text, ss text);
CREATE TABLE gj_r (strip int, id bigint, x float8, y float8);
CREATE TABLE gj_s (strip int, id bigint, x float8, y float8);
SELECT create_distributed_table('gj_cells', 'strip', shard_count => 16);
SELECT create_distributed_table('gj_r', 'strip', colocate_with => 'gj_cells');
SELECT create_distributed_table('gj_s', 'strip', colocate_with => 'gj_cells');
INSERT INTO gj_r SELECT floor(x * 64)::int, id, x, y FROM r;
INSERT INTO gj_s SELECT st, id, x, y FROM s, generate_series(greatest(floor((x - 0.002) * 64)::int, 0), least(floor((x + 0.002) * 64)::int, 63)) st;
INSERT INTO gj_cells SELECT st, shard_name('gj_r', get_shard_id_for_distribution_column('gj_r', st)),
                               shard_name('gj_s', get_shard_id_for_distribution_column('gj_s', st)) FROM generate_series(0, 63) st;
CREATE TEMP TABLE dist_pairs AS SELECT j.* FROM gj_cells c, LATERAL strip_pairs(c.rs, c.ss, c.strip, 0.002) j;
CREATE TEMP TABLE one_node AS SELECT * FROM eps_join('r', 's', '{x,y}', 0.002);
SELECT (SELECT count(*) FROM dist_pairs) AS distributed, (SELECT count(*) FROM one_node) AS one_node,
       (SELECT count(*) FROM (SELECT * FROM dist_pairs EXCEPT ALL SELECT * FROM one_node) a) AS extra,
       (SELECT count(*) FROM (SELECT * FROM one_node EXCEPT ALL SELECT * FROM dist_pairs) b) AS missing;
ROLLBACK;
SQL
