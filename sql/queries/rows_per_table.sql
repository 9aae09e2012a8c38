-- Rows per table and batch.
SELECT 'trajectories' AS table_name, batch, count(*) AS n_rows FROM trajectories GROUP BY batch
UNION ALL SELECT 'messages', batch, count(*) FROM messages GROUP BY batch
UNION ALL SELECT 'tool_calls', batch, count(*) FROM tool_calls GROUP BY batch
UNION ALL SELECT 'task_packages', batch, count(*) FROM task_packages GROUP BY batch
UNION ALL SELECT 'quarantine', batch, count(*) FROM quarantine GROUP BY batch
UNION ALL SELECT 'evidence', batch, count(*) FROM evidence GROUP BY batch
UNION ALL SELECT 'curated_messages', batch, count(*) FROM curated_messages GROUP BY batch
UNION ALL SELECT 'sample_stats', batch, count(*) FROM sample_stats GROUP BY batch
UNION ALL SELECT 'evidence_audit', batch, count(*) FROM evidence_audit GROUP BY batch
UNION ALL SELECT 'evidence_rollup', batch, count(*) FROM evidence_rollup GROUP BY batch
ORDER BY table_name, batch;
