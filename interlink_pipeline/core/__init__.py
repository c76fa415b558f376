"""Pure domain code: no Dagster import anywhere under this package (a test enforces it)."""
