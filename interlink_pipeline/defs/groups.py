"""The asset groups, in the order the pipeline runs, each with what it holds and who answers for it: the
lineage view opens on these, and every asset names one (a test holds every asset to this list)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Group:
    name: str
    description: str
    owner: str  # Dagster's owner form: an e-mail address or team:<name>

    def attributes(self) -> dict:
        """An asset's group and owners, as `@asset`, `AssetSpec` and `multi_asset` specs take them."""
        return {"group_name": self.name, "owners": [self.owner]}


INGEST = Group("ingest", "The crawl exports as read, and the pages worth linking.", "team:seo")
ML = Group("ml", "Page vectors, similar pages and named topics.", "team:seo")
RELEVANCE = Group(
    "relevance",
    "The evidence for each candidate link (SERP, candidates) and the ranker learned from the "
    "site's own links.",
    "team:seo",
)
GRAPH = Group(
    "graph",
    "The link plan, its effect on the link graph, editors' decisions and the plan's backtest.",
    "team:seo",
)
DBT_STAGING = Group(
    "dbt_staging", "dbt's views (dbt_staging/*) over the pipeline's tables the marts read.", "team:data"
)
MARTS = Group("marts", "dbt's analyst marts, rebuilt per site.", "team:data")
PUBLISH = Group(
    "publish",
    "What a run hands to people: the report, the spreadsheets, the analysts' snapshot and the "
    "record of failed runs.",
    "team:seo",
)
GROUPS = (INGEST, ML, RELEVANCE, GRAPH, DBT_STAGING, MARTS, PUBLISH)
