-- The views that are not one table each. The DuckDB file also holds one view per table and published
-- dataset of the table registry (cowork_assets/store/registry.py), created before these. `{tables}` and
-- `{published}` are replaced with <data_root>/tables and <data_root>/published (absolute paths, or s3://
-- URIs) when the file is built.

-- The data root the file was built for: the only place the read-only SQL modes may read.
CREATE OR REPLACE VIEW cowork_data_root AS SELECT '{root}' AS root;

-- Column lineage (cowork_assets/lineage.py): which upstream columns each column is derived from.
CREATE OR REPLACE VIEW column_lineage AS
SELECT * FROM (VALUES {column_lineage}) AS t(asset, column_name, source_asset, source_column);

-- Which version of each dataset is current.
CREATE OR REPLACE VIEW publications AS
SELECT regexp_extract(filename, '/published/([^/]+)/CURRENT$', 1) AS dataset, trim(content) AS version
FROM read_text('{published}/*/CURRENT');
