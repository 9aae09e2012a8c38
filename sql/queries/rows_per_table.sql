-- Rows per staging table and batch.
SELECT 'trajectories' AS table_name, batch, count(*) AS n_rows FROM trajectories GROUP BY batch
UNION ALL SELECT 'messages', batch, count(*) FROM messages GROUP BY batch
UNION ALL SELECT 'tool_calls', batch, count(*) FROM tool_calls GROUP BY batch
UNION ALL SELECT 'task_packages', batch, count(*) FROM task_packages GROUP BY batch
UNION ALL SELECT 'quarantine', batch, count(*) FROM quarantine GROUP BY batch
ORDER BY table_name, batch;
