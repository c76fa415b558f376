"""link_decisions: editors' decisions about planned links, from the site's decisions/ folder."""

import time

import polars as pl
from dagster import AssetExecutionContext, MetadataValue

from interlink_pipeline.core.graph.decisions import decisions_from_files
from interlink_pipeline.core.ingest.inbox import decision_files
from interlink_pipeline.core.warehouse.contract import empty_frame
from interlink_pipeline.core.warehouse.site_tables import standing_decisions
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.previews import table_preview
from interlink_pipeline.defs.resources import CrawlInbox, Warehouse
from interlink_pipeline.defs.tables import site_asset
from interlink_pipeline.defs.writes import persist, user_errors

GROUP = "graph"


@site_asset("graph.link_decisions", group=GROUP, deps=["staging.pages"])
def link_decisions(context: AssetExecutionContext, warehouse: Warehouse, inbox: CrawlInbox):
    """Editors' decisions (accept, reject) about planned links, from the files in the site's decisions/
    folder (`interlink decisions import`): each file is read and checked once, when it is new; a link's
    newest decision stands, the earlier ones are kept."""
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        files = decision_files(inbox.root, site)
        stored = warehouse.read_site("graph.link_decisions", site)
        imported = set(stored["source_file"])
        new = decisions_from_files(warehouse, site, [path for path in files if path.name not in imported])
    names = [path.name for path in files]
    empty = empty_frame("graph.link_decisions")
    kept = stored.filter(pl.col("source_file").is_in(names))
    rows = pl.concat([frame.select(empty.columns) for frame in (empty, kept, *new)])
    standing = standing_decisions(rows)
    counts = standing["decision"].value_counts()
    by_kind = dict(zip(counts["decision"], counts["count"], strict=True))
    metadata = {
        "decision_files": len(files),
        "files_imported_now": len(new),
        "files_gone": len(imported - set(names)),
        "links_decided": standing.height,
        "accepted": by_kind.get("accept", 0),
        "rejected": by_kind.get("reject", 0),
        "newest": table_preview(
            rows.sort("decided_at", descending=True).select(
                "decision", "source_url", "target_url", "note", "source_file"
            ),
            10,
        ),
        "source_folder": MetadataValue.path(str(files[0].parent)) if files else "none yet",
    }
    if new:
        context.log.info(f"{site}: {sum(f.height for f in new):,} decisions from {len(new)} new file(s)")
    yield from persist(context, warehouse, site, {"graph.link_decisions": rows}, metadata, started)
