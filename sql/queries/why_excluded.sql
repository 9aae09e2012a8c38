-- Why is a trajectory not in the SFT set (or a task not in the RL set)? Every criterion that excluded it.
-- param: trajectory_id = %
-- (a LIKE pattern on the trajectory id, or on the task id for RL rows: `--param trajectory_id=ops-00042%`)
SELECT e.dataset, coalesce(e.trajectory_id, e.task_id) AS id, e.criterion, e.reason, e.detail, t.raw_file, t.raw_record
FROM exclusions e LEFT JOIN trajectories t USING (batch, trajectory_id)
WHERE coalesce(e.trajectory_id, e.task_id) LIKE $trajectory_id
ORDER BY e.dataset DESC, id, CASE e.criterion WHEN 'role' THEN 1 WHEN 'grade' THEN 2 WHEN 'structure' THEN 3
  WHEN 'task_consistency' THEN 4 WHEN 'evidence' THEN 5 WHEN 'budget' THEN 6 WHEN 'dedup' THEN 7 ELSE 8 END, e.reason;
