"""The Dagster shell: assets, checks, resources, sensors and jobs over the pure core."""
