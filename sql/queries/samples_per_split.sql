-- Published SFT samples and RL tasks per split and category (current versions).
SELECT 'sft_dataset' AS dataset, split, category, count(*) AS n FROM sft_dataset GROUP BY ALL
UNION ALL
SELECT 'rl_tasks', extra_info.split, ability, count(*) FROM rl_tasks GROUP BY ALL
ORDER BY dataset, split, category;
