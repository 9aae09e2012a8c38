-- Tools whose observations are longest: where truncation bites hardest.
SELECT tool_name,
       count(*) AS n_calls,
       round(avg(observation_chars)) AS avg_chars,
       quantile_cont(observation_chars, 0.9) AS p90_chars,
       max(observation_chars) AS max_chars,
       round(avg(CASE WHEN observation_chars > 1000 THEN 1 ELSE 0 END), 3) AS share_over_1000
FROM tool_calls
WHERE observation_chars IS NOT NULL
GROUP BY tool_name
ORDER BY avg_chars DESC;
