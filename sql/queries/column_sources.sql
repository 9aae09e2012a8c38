-- Where a column comes from, back to the staging tables: every upstream column it is derived from,
-- with the number of steps in between. Example: --param column=sft_dataset.tools
-- param: column = sft_dataset.tools
WITH RECURSIVE sources(asset, column_name, depth) AS (
    SELECT split_part($column, '.', 1), split_part($column, '.', 2), 0
    UNION
    SELECT l.source_asset, l.source_column, s.depth + 1
    FROM sources s JOIN column_lineage l ON l.asset = s.asset AND l.column_name = s.column_name
    WHERE s.depth < 10
)
SELECT depth, asset, column_name FROM sources WHERE depth > 0 ORDER BY depth, asset, column_name;
