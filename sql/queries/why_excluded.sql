-- Why is a trajectory not in the SFT set? Every stage that excluded it, with the specifics.
-- param: trajectory_id = %
-- (a LIKE pattern: `--param trajectory_id=ops-00042%`; the default lists every exclusion)
SELECT e.trajectory_id, e.stage, e.reason, e.detail, t.raw_file, t.raw_record
FROM exclusions e JOIN trajectories t USING (batch, trajectory_id)
WHERE e.trajectory_id LIKE $trajectory_id
ORDER BY e.trajectory_id, CASE e.stage WHEN 'role' THEN 1 WHEN 'grade' THEN 2 WHEN 'structure' THEN 3
  WHEN 'task_consistency' THEN 4 WHEN 'evidence' THEN 5 WHEN 'budget' THEN 6 WHEN 'dedup' THEN 7 ELSE 8 END, e.reason;
