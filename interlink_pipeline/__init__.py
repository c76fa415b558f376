"""interlink_pipeline: a Dagster project that turns a website crawl into an internal-linking plan."""

__version__ = "0.1.0"
