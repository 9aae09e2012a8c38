"""Last stage — warehouse: one DuckDB file with a view over every Parquet table."""
