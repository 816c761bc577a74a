"""The Parquet dataset on disk: atomic shard commits (`store`), DuckDB views and saved queries."""
