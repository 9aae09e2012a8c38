-- The chain of one sample or trajectory: raw line -> trajectory -> curation -> findings -> outcome.
-- param: trajectory_id = %
-- (a LIKE pattern; give a full id to trace one trajectory)
WITH t AS (SELECT * FROM trajectories WHERE trajectory_id LIKE $trajectory_id)
SELECT trajectory_id, 1 AS step, 'raw' AS stage,
       format('{}:{} (batch {})', raw_file, raw_record, batch) AS detail FROM t
UNION ALL
SELECT trajectory_id, 2, 'trajectory',
       format('task {} ({}), {} {} (run {}), grade {} (passed: {}), {} messages, {} tool calls, {} chars',
              task_id, category, teacher_role, teacher_model, coalesce(teacher_run_id, '-'), grade_score, grade_passed,
              n_messages, n_tool_calls, chars_total) FROM t
UNION ALL
SELECT c.trajectory_id, 3, 'curation',
       format('message {}: {} of {} chars kept{}{}', c.message_index, c.kept_chars, c.original_chars,
              CASE WHEN c.trimmed THEN ' (trimmed by the budget)' ELSE '' END,
              CASE WHEN c.overflow_chars > 0 THEN format(' (+{} chars of evidence overflow)', c.overflow_chars) ELSE '' END)
FROM curated_messages c JOIN t USING (batch, trajectory_id) WHERE c.truncated OR c.trimmed
UNION ALL
SELECT s.trajectory_id, 4, 'budget',
       format('{} -> {} chars{}: {}{}', s.chars_before, s.chars_after,
              CASE WHEN s.tokens_after IS NULL THEN '' ELSE format(', {} tokens', s.tokens_after) END,
              s.verdict, coalesce(' (' || s.reason || ')', ''))
FROM sample_stats s JOIN t USING (batch, trajectory_id)
UNION ALL
SELECT r.trajectory_id, 5, 'evidence',
       format('{} items, {} at risk; lost to truncation: {}, lost to the budget: {}',
              r.items, r.at_risk, r.lost_to_truncation, r.lost_to_budget)
FROM evidence_rollup r JOIN t USING (batch, trajectory_id)
UNION ALL
SELECT a.trajectory_id, 5, 'evidence', format('{} ({}) would be lost under {}', a.value, a.check_id,
                                             array_to_string(a.lost_under, ', '))
FROM evidence_audit a JOIN t USING (batch, trajectory_id) WHERE len(a.lost_under) > 0
UNION ALL
SELECT f.trajectory_id, 6, 'finding', format('{} ({}): {}', f.kind, f.severity, f.detail)
FROM structure_findings f JOIN t USING (batch, trajectory_id)
UNION ALL
SELECT t.trajectory_id, 6, 'finding', format('{} ({}): {}{}', f.kind, f.severity, f.detail,
                                            coalesce(' -> ' || f.suggestion, ''))
FROM task_findings f JOIN t ON f.task_id = t.task_id AND (f.trajectory_id IS NULL OR f.trajectory_id = t.trajectory_id)
UNION ALL
SELECT d.trajectory_id, 7, 'dedup', format('{} in cluster {} (similarity {}; kept: {})', d.kind, d.cluster_id,
                                          d.similarity, d.representative)
FROM dedup_clusters d JOIN t USING (batch, trajectory_id)
UNION ALL
SELECT e.trajectory_id, 8, 'excluded', format('{}: {} - {}', e.criterion, e.reason, e.detail)
FROM exclusions e JOIN t USING (batch, trajectory_id) WHERE e.dataset = 'sft'
UNION ALL
SELECT s.trajectory_id, 9, 'published', format('sft_dataset {} ({} split) as sample {}, {} chars, {} tokens', p.version, s.split, s.sample_id,
                                          s.chars, s.tokens)
FROM sft_dataset s JOIN t USING (batch, trajectory_id), publications p WHERE p.dataset = 'sft_dataset'
UNION ALL
SELECT r.trajectory_id, 9, 'published', format('rl_rollouts {} (group {}, advantage {})', p.version, r.group_id,
                                              round(r.grpo_advantage, 4))
FROM rl_rollouts r JOIN t USING (batch, trajectory_id), publications p WHERE p.dataset = 'rl_rollouts'
ORDER BY trajectory_id, step, stage, detail;
