"""The warehouse: DuckDB access and writes (store), the table contract (schemas) and its documentation."""
