"""link_decisions: editors' decisions about planned links, from the site's decisions/ folder."""

import time
from datetime import UTC, datetime

from dagster import AssetExecutionContext, MetadataValue

from interlink_pipeline.core.graph.decisions import DECISION_INVARIANTS, decision_invariants, folder_decisions
from interlink_pipeline.core.ingest.inbox import DECISIONS, decision_files, site_folder
from interlink_pipeline.core.warehouse.site_tables import standing_decisions
from interlink_pipeline.defs.groups import GRAPH
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.previews import table_preview
from interlink_pipeline.defs.resources import CrawlInbox, Warehouse
from interlink_pipeline.defs.tables import site_asset
from interlink_pipeline.defs.writes import check_results, persist, user_errors


@site_asset("graph.link_decisions", group=GRAPH, deps=["staging.pages"], invariants=DECISION_INVARIANTS)
def link_decisions(context: AssetExecutionContext, warehouse: Warehouse, inbox: CrawlInbox):
    """Editors' decisions (accept, reject) about planned links, from the files in the site's decisions/
    folder (`interlink decisions import`): each file is read once per content (an edited file again, its
    earlier version kept as history); a link's newest decision stands. A file the folder refuses (not a
    regular file, or content that is not decisions) is named in a warning and fails this step's check
    only: its earlier version's decisions stand and the plan goes on."""
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        folder = decision_files(inbox.root, site)
        stored = warehouse.read_site("graph.link_decisions", site)
        now = datetime.now(UTC).replace(tzinfo=None)
        read = folder_decisions(warehouse, site, folder, stored, now)
    standing = standing_decisions(read.rows)
    counts = standing["decision"].value_counts()
    by_kind = dict(zip(counts["decision"], counts["count"], strict=True))
    metadata = {
        "decision_files": len(folder.files),
        "files_read_now": MetadataValue.json(read.read),
        "files_unchanged": read.unchanged,
        "files_gone": MetadataValue.json(read.gone),
        "files_refused": MetadataValue.json(read.refused),
        "files_repeated": MetadataValue.json(read.repeated),
        "links_decided": standing.height,
        "accepted": by_kind.get("accept", 0),
        "rejected": by_kind.get("reject", 0),
        "newest": table_preview(
            read.rows.sort("decided_at", descending=True).select(
                "decision", "source_url", "target_url", "note", "source_file"
            ),
            10,
        ),
        "source_folder": MetadataValue.path(str(site_folder(inbox.root, site) / DECISIONS)),
    }
    refused = ["not read from the decisions folder: " + "; ".join(read.refused)] if read.refused else []
    warnings = refused + read.gone
    if warnings:
        metadata["warning"] = "; ".join(warnings)
        context.log.warning(f"{site}: {metadata['warning']}")
    if read.read:
        context.log.info(f"{site}: decisions read from {', '.join(read.read)}")
    checks = check_results(decision_invariants(read))
    rows = {"graph.link_decisions": read.rows}
    yield from persist(context, warehouse, site, rows, metadata, started, checks)
