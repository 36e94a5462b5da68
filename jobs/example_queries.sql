-- Example queries over the tables of `flink-jobgraph compute`. {out} is the --output folder.
-- Run them all with: python -m pipeline.queries OUT

-- 1. Which operator is 77fec41789154996bfa76055dea29472 (e.g. from a failed restore's log)?
SELECT graph_id, node_id, name, uid, hash_source, jobvertex_id
FROM delta.`{out}/operators`
WHERE operator_id = '77fec41789154996bfa76055dea29472';

-- 2. Which vertices (chains) will a job run as, in JobGraph order?
SELECT name, parallelism, slot_sharing_group, size(operator_ids) AS operators
FROM delta.`{out}/job_vertices`
WHERE graph_id = 'orders-enricher@v2'
ORDER BY vertex_order;

-- 3. Will v2 restore from v1's savepoint? Operators of v1 whose ID is gone in v2 would
--    leave their state behind (a restore fails without --allowNonRestoredState).
SELECT old.node_id, old.name, old.uid, old.operator_id
FROM delta.`{out}/operators` AS old
LEFT ANTI JOIN delta.`{out}/operators` AS new
  ON new.graph_id = 'orders-enricher@v2' AND new.operator_id = old.operator_id
WHERE old.graph_id = 'orders-enricher@v1'
ORDER BY old.node_id;

-- 4. Why were graphs rejected?
SELECT error_code, count(*) AS graphs, min(message) AS example
FROM delta.`{out}/graph_errors`
GROUP BY error_code
ORDER BY error_code;
