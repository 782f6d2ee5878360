-- dbscan against PostGIS ST_ClusterDBSCAN (needs PostGIS: regress/install-deps.sh
-- installs it with the other test dependencies).  PostGIS numbers clusters in
-- its own, row-order-dependent way, so the check is the rule the issue sets:
-- the same noise rows, and the same partition of the core rows.
CREATE EXTENSION IF NOT EXISTS postgis;
SELECT setseed(0.5);
CREATE TABLE p_rand AS
  SELECT i AS id,
         CASE WHEN i % 5 = 0 THEN round(random() * 40) / 4 ELSE random() * 10 END AS x,
         CASE WHEN i % 5 = 0 THEN round(random() * 40) / 4 ELSE random() * 10 END AS y
  FROM generate_series(1, 4000) i;
ALTER TABLE p_rand ADD PRIMARY KEY (id);
CREATE FUNCTION pg_temp.compare(eps float8, minpts int)
RETURNS TABLE (rows bigint, noise bigint, noise_differs bigint, core_clusters bigint,
               pairs bigint, postgis_core_clusters bigint, border bigint,
               border_unreached bigint)
LANGUAGE sql AS $$
  WITH cmp AS (
    SELECT d.id, d.cluster, d.is_core,
           ST_ClusterDBSCAN(ST_MakePoint(r.x, r.y), eps, minpts) OVER () AS pg
    FROM p_rand r JOIN dbscan('p_rand', '{x,y}', eps, minpts) d USING (id))
  SELECT count(*),
         count(*) FILTER (WHERE cluster IS NULL),
         count(*) FILTER (WHERE (cluster IS NULL) <> (pg IS NULL)),
         count(DISTINCT cluster) FILTER (WHERE is_core),
         (SELECT count(*) FROM (SELECT DISTINCT cluster, pg FROM cmp WHERE is_core) p),
         count(DISTINCT pg) FILTER (WHERE is_core),
         count(*) FILTER (WHERE NOT is_core AND cluster IS NOT NULL),
         -- border rows whose cluster has no core row within eps of them
         (SELECT count(*) FROM cmp b WHERE NOT b.is_core AND b.cluster IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM cmp c JOIN p_rand pc ON pc.id = c.id, p_rand pb
                        WHERE pb.id = b.id AND c.is_core AND c.cluster = b.cluster
                          AND (pb.x - pc.x) * (pb.x - pc.x) + (pb.y - pc.y) * (pb.y - pc.y) <= eps * eps))
  FROM cmp
$$;
SELECT * FROM pg_temp.compare(0.1, 5);
SELECT * FROM pg_temp.compare(0.25, 5);
SELECT * FROM pg_temp.compare(0.25, 1);
SELECT * FROM pg_temp.compare(0.25, 2);
SELECT * FROM pg_temp.compare(0.5, 20);
