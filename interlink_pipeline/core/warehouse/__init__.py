"""The warehouse: the table contract (schemas, contract), the DuckDB file (database), reads and validated
writes (store), the analysts' snapshot and the table reference (docs/tables.md)."""
