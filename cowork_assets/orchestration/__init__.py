"""What needs Dagster: asset specs from the table registry, metadata the UI renders, column lineage, the batch
partitions, and the health of runs recorded in the instance."""
