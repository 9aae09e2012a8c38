-- Per batch and truncation strategy, at the configured allowance: evidence items lost and characters kept.
WITH lost AS (SELECT batch, strategy, count(*) AS items_lost
              FROM (SELECT batch, unnest(lost_under) AS strategy FROM evidence_audit) GROUP BY ALL),
     chars AS (SELECT batch, c.strategy, sum(c.chars) AS chars_after_truncation, sum(chars_before) AS chars_before
               FROM (SELECT batch, chars_before, unnest(chars_under) AS c FROM sample_stats) GROUP BY ALL)
SELECT batch, strategy, coalesce(items_lost, 0) AS items_lost, chars_after_truncation, chars_before
FROM chars LEFT JOIN lost USING (batch, strategy)
ORDER BY batch, strategy;
