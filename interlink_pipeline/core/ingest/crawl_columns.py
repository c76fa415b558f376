"""Header names of crawl exports, mapped onto the pipeline's canonical fields.

Screaming Frog writes headers in the language of its UI and renamed some between versions (`Content` became
`Content Type`, `H1-1 length` became `H1-1 Length`). Matching is done on a folded form of the header
(case, accents, quotes, hyphens and extra spaces ignored), so the alias lists hold one spelling each.
Headers from other crawlers are mapped with `column_map` ({canonical field: header in your file}).
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from interlink_pipeline.core.errors import InputError


def fold_header(name: str) -> str:
    """Fold a header for matching: no accents, lower case, quotes removed, separators collapsed."""
    decomposed = unicodedata.normalize("NFKD", name)
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    plain = plain.replace("\ufeff", "").replace('"', "").replace("'", "").replace("’", "")
    return re.sub(r"[\s_\-–]+", " ", plain).strip().casefold()


@dataclass(frozen=True)
class Field:
    """A canonical field and the headers (any language) it is read from."""

    name: str
    aliases: tuple[str, ...]
    required: bool = False


# Each export's fields and their header spellings (data: export_headers.json, which says how they match).
_HEADERS = json.loads(Path(__file__).with_name("export_headers.json").read_text(encoding="utf-8"))


def _fields(export: str) -> tuple[Field, ...]:
    return tuple(Field(f["field"], tuple(f["headers"]), f.get("required", False)) for f in _HEADERS[export])


CRAWL_FIELDS = _fields("crawl pages")  # the Internal: HTML / Internal: All export
LINK_FIELDS = _fields("crawl links")  # the All Inlinks bulk export
TEXT_FIELDS = (CRAWL_FIELDS[0], *_fields("page text"))  # page URL -> its body text (or an extraction)
SEARCH_CONSOLE_FIELDS = _fields("search console")  # Search Console > Performance > Pages, exported
QUERY_FIELDS = _fields("queries")  # page URL -> query, e.g. a Search Console export by page and query


def accepted_names(field: Field) -> str:
    return ", ".join(f"'{alias}'" for alias in field.aliases) or "(map it with column_map)"


def map_headers(
    headers: list[str],
    fields: tuple[Field, ...],
    column_map: dict[str, str] | None,
    source: str,
) -> dict[str, int]:
    """Map canonical field names to header positions.

    `column_map` entries win over aliases. Raises InputError for an unknown canonical field, a mapped header
    that is missing, a required field that cannot be found (listing the headers found and the names
    accepted), or a field that two headers could supply.
    """
    by_name = {field.name: field for field in fields}
    folded = [fold_header(h) for h in headers]
    mapping: dict[str, int] = {}
    for canonical, header in (column_map or {}).items():
        if canonical not in by_name:
            raise InputError(
                f"column_map names an unknown field '{canonical}'; known fields: {', '.join(by_name)}."
            )
        positions = [i for i, h in enumerate(folded) if h == fold_header(header)]
        if not positions:
            raise InputError(
                f"{source}: column_map maps '{canonical}' to '{header}', but the file has no such column. "
                f"Columns found: {_quoted(headers)}."
            )
        if len(positions) > 1:
            raise InputError(f"{source}: column '{header}' appears {len(positions)} times in the header row.")
        mapping[canonical] = positions[0]
    for field in fields:
        if field.name in mapping:
            continue
        alias_set = {fold_header(a) for a in field.aliases}
        positions = [i for i, h in enumerate(folded) if h in alias_set]
        # Prefer the first-listed alias (e.g. 'Address' over 'URL Encoded Address') when several exist.
        distinct = {folded[i] for i in positions}
        if len(distinct) > 1:
            order = [fold_header(a) for a in field.aliases]
            best = min(distinct, key=order.index)
            positions = [i for i in positions if folded[i] == best]
        if len(positions) > 1:
            raise InputError(
                f"{source}: duplicate header: '{headers[positions[0]]}' appears {len(positions)} times "
                f"(columns {', '.join(str(p + 1) for p in positions)}), so the {field.name} is ambiguous. "
                "Remove or rename the extra column."
            )
        if positions:
            mapping[field.name] = positions[0]
        elif field.required:
            raise InputError(
                f"{source}: no {field.name.replace('_', ' ')} column. Columns found: {_quoted(headers)}. "
                f"Accepted names: {accepted_names(field)}; or map yours with "
                f"column_map={{'{field.name}': '<your column>'}}."
            )
    return mapping


def _quoted(headers: list[str], limit: int = 40) -> str:
    shown = ", ".join(f"'{h}'" for h in headers[:limit])
    return (
        shown + (f" … ({len(headers) - limit} more)" if len(headers) > limit else "") if headers else "(none)"
    )
