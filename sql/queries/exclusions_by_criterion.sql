-- How many trajectories (SFT) or tasks (RL) each criterion keeps out (one can count under several).
SELECT dataset, criterion, reason, count(DISTINCT coalesce(trajectory_id, task_id)) AS excluded
FROM exclusions GROUP BY dataset, criterion, reason ORDER BY dataset DESC, excluded DESC, criterion, reason;
