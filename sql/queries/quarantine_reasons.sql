-- Why raw records were quarantined, per batch, with one example location each.
SELECT batch, reason, count(*) AS n_records,
       min(raw_file || ':' || raw_record) AS example
FROM quarantine
GROUP BY batch, reason
ORDER BY batch, n_records DESC, reason;
