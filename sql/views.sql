-- One view per Parquet table, over all batches. `{tables}` and `{published}` are replaced with
-- <data_root>/tables and <data_root>/published (absolute paths, or s3:// URIs) when the DuckDB file
-- is built. Every table carries its own `batch` column.

-- The data root the file was built for: the only place the read-only SQL modes may read.
CREATE OR REPLACE VIEW cowork_data_root AS SELECT '{root}' AS root;

-- Column lineage (cowork_assets/lineage.py): which upstream columns each column is derived from.
CREATE OR REPLACE VIEW column_lineage AS
SELECT * FROM (VALUES {column_lineage}) AS t(asset, column_name, source_asset, source_column);

CREATE OR REPLACE VIEW trajectories AS
SELECT * FROM read_parquet('{tables}/trajectories/batch=*/data.parquet', union_by_name = true);

CREATE OR REPLACE VIEW messages AS
SELECT * FROM read_parquet('{tables}/messages/batch=*/data.parquet', union_by_name = true);

CREATE OR REPLACE VIEW tool_calls AS
SELECT * FROM read_parquet('{tables}/tool_calls/batch=*/data.parquet', union_by_name = true);

CREATE OR REPLACE VIEW task_packages AS
SELECT * FROM read_parquet('{tables}/task_packages/batch=*/data.parquet', union_by_name = true);

CREATE OR REPLACE VIEW quarantine AS
SELECT * FROM read_parquet('{tables}/quarantine/batch=*/data.parquet', union_by_name = true);

-- Per batch, and (batch `_raw_root`) what the raw root itself holds that is not a batch.
CREATE OR REPLACE VIEW skipped_inputs AS
SELECT * FROM read_parquet(['{tables}/skipped_inputs/batch=*/data.parquet', '{tables}/skipped_inputs/raw_root.parquet'],
                           union_by_name = true);

CREATE OR REPLACE VIEW truncation_sweep AS
SELECT * FROM read_parquet('{tables}/truncation_sweep/batch=*/data.parquet', union_by_name = true);

CREATE OR REPLACE VIEW regrade AS
SELECT * FROM read_parquet('{tables}/regrade/batch=*/data.parquet', union_by_name = true);

CREATE OR REPLACE VIEW evidence AS
SELECT * FROM read_parquet('{tables}/evidence/batch=*/data.parquet', union_by_name = true);

CREATE OR REPLACE VIEW curated_messages AS
SELECT * FROM read_parquet('{tables}/curated_messages/batch=*/data.parquet', union_by_name = true);

CREATE OR REPLACE VIEW sample_stats AS
SELECT * FROM read_parquet('{tables}/sample_stats/batch=*/data.parquet', union_by_name = true);

CREATE OR REPLACE VIEW evidence_audit AS
SELECT * FROM read_parquet('{tables}/evidence_audit/batch=*/data.parquet', union_by_name = true);

CREATE OR REPLACE VIEW evidence_rollup AS
SELECT * FROM read_parquet('{tables}/evidence_rollup/batch=*/data.parquet', union_by_name = true);

CREATE OR REPLACE VIEW structure_findings AS
SELECT * FROM read_parquet('{tables}/structure_findings/batch=*/data.parquet', union_by_name = true);

CREATE OR REPLACE VIEW dedup_signatures AS
SELECT * FROM read_parquet('{tables}/dedup_signatures/batch=*/data.parquet', union_by_name = true);

-- Cross-batch tables: one file each.
CREATE OR REPLACE VIEW task_findings AS SELECT * FROM read_parquet('{tables}/task_findings/data.parquet');

CREATE OR REPLACE VIEW dedup_clusters AS SELECT * FROM read_parquet('{tables}/dedup_clusters/data.parquet');

CREATE OR REPLACE VIEW exclusions AS SELECT * FROM read_parquet('{tables}/exclusions/data.parquet');

-- The current published datasets: {current:NAME} is the version folder CURRENT names when the file is built.
CREATE OR REPLACE VIEW sft_dataset AS SELECT * FROM read_parquet('{current:sft_dataset}/*.parquet');

CREATE OR REPLACE VIEW rl_tasks AS SELECT * FROM read_parquet('{current:rl_tasks}/*.parquet');

CREATE OR REPLACE VIEW rl_rollouts AS SELECT * FROM read_parquet('{current:rl_rollouts}/*.parquet');

-- Which version of each dataset is current.
CREATE OR REPLACE VIEW publications AS
SELECT regexp_extract(filename, '/published/([^/]+)/CURRENT$', 1) AS dataset, trim(content) AS version
FROM read_text('{published}/*/CURRENT');
