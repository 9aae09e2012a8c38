-- How many trajectories (SFT) or tasks (RL) each stage keeps out (one can count at several stages).
SELECT dataset, stage, reason, count(DISTINCT coalesce(trajectory_id, task_id)) AS excluded
FROM exclusions GROUP BY dataset, stage, reason ORDER BY dataset DESC, excluded DESC, stage, reason;
