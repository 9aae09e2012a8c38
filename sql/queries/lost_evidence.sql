-- Every evidence value lost to truncation (configured strategy) or to the budget, with where it sat.
SELECT a.batch, a.trajectory_id, a.check_id, a.value,
       a.found_at AS message, a.found_offset AS char_offset, a.found_message_chars AS message_chars,
       a.lost_to_truncation, a.lost_to_budget, s.verdict, t.raw_file, t.raw_record
FROM evidence_audit a
JOIN sample_stats s USING (batch, trajectory_id)
JOIN trajectories t USING (batch, trajectory_id)
WHERE a.lost_to_truncation OR a.lost_to_budget
ORDER BY a.batch, a.trajectory_id, a.found_at, a.found_offset;
