-- Per batch: evidence lost and characters kept under each truncation strategy.
SELECT s.batch,
       sum(r.lost_under_head) AS items_lost_head,
       sum(r.lost_under_evidence_aware) AS items_lost_evidence_aware,
       sum(s.chars_head) AS chars_head,
       sum(s.chars_evidence_aware) AS chars_evidence_aware,
       sum(s.chars_before) AS chars_before
FROM sample_stats s JOIN evidence_rollup r USING (batch, trajectory_id)
GROUP BY s.batch ORDER BY s.batch;
