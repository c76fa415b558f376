"""The shell of core/publish: dbt marts and the analysts' snapshot, spreadsheets and the report, their
publication, and the record of failed runs."""
