-- How many trajectories each stage keeps out of the SFT set (a trajectory can count at several stages).
SELECT stage, reason, count(DISTINCT trajectory_id) AS trajectories
FROM exclusions GROUP BY stage, reason ORDER BY trajectories DESC, stage, reason;
