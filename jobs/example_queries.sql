-- Example queries over the tables of `flink-jobgraph compute`. {out} is the --output folder.
-- Run them all with: python -m devtools.queries OUT

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

-- 5. Whose latency is this? Flink's latency metrics name the source and the operator only
--    by ID (operators.operator_id): docs/metrics.md has the view for every metric shape.
SELECT op.graph_id, src.name AS source, src.uid AS source_uid, op.name AS operator, op.uid AS operator_uid,
       int(regexp_extract(m.metric, 'operator_subtask_index[.]([0-9]+)', 1)) AS subtask
FROM (SELECT 'latency.source_id.c22cf63a4da6caf9dc3f39526c6a3188.source_subtask_index.0.operator_id.3445ba224980e9fc3baa88a69d32fea5.operator_subtask_index.3.latency_p99' AS metric) AS m
JOIN delta.`{out}/operators` AS op
  ON op.operator_id = regexp_extract(m.metric, 'operator_id[.]([0-9a-f]{32})', 1)
JOIN delta.`{out}/operators` AS src
  ON src.graph_id = op.graph_id AND src.operator_id = regexp_extract(m.metric, 'source_id[.]([0-9a-f]{32})', 1);

-- 6. Restore checks (flink-jobgraph check-restore, docs/restore-checks.md): jobs whose next
--    deploy will fail to restore from their latest savepoint, with Flink's own message.
SELECT c.graph_id, c.check_id, c.failure, c.operator_id, m.name AS operator_name, m.uid AS operator_uid, c.message
FROM delta.`{out}/restore_checks` AS c
LEFT JOIN delta.`{out}/restore_operator_matches` AS m
  ON m.check_id = c.check_id AND m.operator_id = c.operator_id
WHERE c.verdict = 'FAILS'
ORDER BY c.graph_id, c.check_id;

-- 7. Stateful operators without a uid: state in the latest savepoint, restored into an
--    operator whose ID is generated (any upstream edit will lose that state).
SELECT m.graph_id, m.node_id, m.name, m.operator_id, m.state_size
FROM delta.`{out}/restore_operator_matches` AS m
JOIN delta.`{out}/operators` AS op
  ON op.graph_id = m.graph_id AND op.node_id = m.node_id
WHERE m.has_state AND m.status = 'MATCHED' AND op.uid IS NULL AND op.user_operator_id IS NULL
ORDER BY m.graph_id, m.node_id;

-- 8. Savepoint operator IDs that map to no operator of any known job version (generated
--    or user-defined ID): whose state is it? Nobody's, as far as the fleet's specs go.
SELECT s.savepoint, s.operator_id, s.has_state, s.state_size, s.operator_name, s.operator_uid
FROM delta.`{out}/savepoint_operators` AS s
LEFT ANTI JOIN delta.`{out}/operators` AS op
  ON op.operator_id = s.operator_id OR op.user_operator_id = s.operator_id
ORDER BY s.savepoint, s.operator_index;

-- 9. The state's types (check-restore reads them from every savepoint: savepoint_states):
--    states held by Kryo anywhere in their type, with the path to the Kryo part.
SELECT savepoint, operator_name, operator_uid, state_name, state_kind, value_type, first_kryo_path, kryo_classes
FROM delta.`{out}/savepoint_states`
WHERE uses_kryo
ORDER BY savepoint, operator_id, state_name;

-- 10. POJOs whose collection fields Flink 1.x gave to Kryo: the state that will not restore on
--     Flink 2.x (check-restore --target-flink 2.3 says so per check).
SELECT savepoint, operator_name, operator_uid, state_name, explode(pojo_collection_fields) AS pojo_field
FROM delta.`{out}/savepoint_states`
WHERE size(pojo_collection_fields) > 0
ORDER BY savepoint, operator_id, state_name;

-- 11. Which savepoints will not come across to the new Flink line, and why: every state
--     problem of every check, with the field and Flink's message.
SELECT p.check_id, p.operator_id, p.state_name, p.failure, p.cause, p.field_path, p.failure_stage, p.message
FROM delta.`{out}/restore_state_problems` AS p
WHERE p.verdict = 'FAILS'
ORDER BY p.check_id, p.order;

-- 12. States restored into operators without a uid (their ID is generated: any upstream edit
--     of the job loses them).
SELECT DISTINCT m.graph_id, m.node_id, m.name, s.state_name, s.state_kind, s.value_type
FROM delta.`{out}/savepoint_states` AS s
JOIN delta.`{out}/restore_operator_matches` AS m
  ON m.savepoint = s.savepoint AND m.operator_id = s.operator_id AND m.status = 'MATCHED'
JOIN delta.`{out}/operators` AS op
  ON op.graph_id = m.graph_id AND op.node_id = m.node_id
WHERE op.uid IS NULL AND op.user_operator_id IS NULL AND s.state_name IS NOT NULL
ORDER BY m.graph_id, m.node_id, s.state_name;

-- 13. Per savepoint, its three largest operator states (bytes the state handles declare).
SELECT * FROM (
  SELECT savepoint, operator_id, operator_name, operator_uid, state_size,
         rank() OVER (PARTITION BY savepoint ORDER BY state_size DESC) AS rank_in_job
  FROM delta.`{out}/savepoint_operators`
  WHERE has_state
) WHERE rank_in_job <= 3
ORDER BY savepoint, rank_in_job;
