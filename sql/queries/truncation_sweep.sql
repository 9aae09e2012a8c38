-- At-risk evidence lost per truncation strategy and allowance, over every batch (or one category):
-- head / tail / middle are verl's tool_response_truncate_side left / right / middle. The smallest
-- allowance per side whose lost share is at most 1% is the one to put in a trainer's rollout config.
-- param: category = %
SELECT strategy,
       max_observation_chars,
       sum(at_risk_items) AS at_risk_items,
       sum(lost_items) AS lost_items,
       round(sum(lost_items) / greatest(sum(at_risk_items), 1), 4) AS lost_share,
       sum(kept_chars) AS kept_chars,
       round(sum(kept_chars) / greatest(sum(observation_chars), 1), 4) AS kept_share
FROM truncation_sweep
WHERE category LIKE $category
GROUP BY strategy, max_observation_chars
ORDER BY strategy, max_observation_chars;
