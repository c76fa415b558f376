"""Header names of crawl exports, mapped onto the pipeline's canonical fields.

Screaming Frog writes headers in the language of its UI and renamed some between versions (`Content` became
`Content Type`, `H1-1 length` became `H1-1 Length`). Matching is done on a folded form of the header
(case, accents, quotes, hyphens and extra spaces ignored), so the alias lists hold one spelling each.
Headers from other crawlers are mapped with `column_map` ({canonical field: header in your file}).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

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


# The Internal: HTML / Internal: All export. English first, then ES, FR, DE, IT spellings.
CRAWL_FIELDS: tuple[Field, ...] = (
    Field(
        "url",
        ("Address", "URL", "Page URL", "Dirección", "Adresse", "Indirizzo", "URL Encoded Address"),
        required=True,
    ),
    Field(
        "content_type",
        (
            "Content Type",
            "Content",
            "Tipo de contenido",
            "Contenido",
            "Type de contenu",
            "Contenu",
            "Inhaltstyp",
            "Inhalt",
            "Tipo di contenuto",
            "Contenuto",
        ),
    ),
    Field(
        "status_code",
        (
            "Status Code",
            "Código de respuesta",
            "Código de estado",
            "Code de réponse",
            "Code HTTP",
            "Statuscode",
            "Status-Code",
            "Codice di risposta",
            "Codice di stato",
        ),
    ),
    Field("status", ("Status", "Estado", "Respuesta", "Statut", "Réponse", "Stato", "Risposta")),
    Field(
        "indexability",
        ("Indexability", "Indexabilidad", "Indexabilité", "Indexierbarkeit", "Indicizzabilità"),
    ),
    Field(
        "indexability_status",
        (
            "Indexability Status",
            "Estado de indexabilidad",
            "Statut d'indexabilité",
            "État d'indexabilité",
            "Indexierbarkeitsstatus",
            "Status der Indexierbarkeit",
            "Stato di indicizzabilità",
            "Stato indicizzabilità",
        ),
    ),
    Field("title", ("Title 1", "Title", "Page Title", "Título 1", "Titre 1", "Titel 1", "Titolo 1")),
    Field(
        "meta_description",
        (
            "Meta Description 1",
            "Meta Description",
            "Meta descripción 1",
            "Metadescripción 1",
            "Méta description 1",
            "Meta-Beschreibung 1",
            "Meta Beschreibung 1",
            "Meta descrizione 1",
        ),
    ),
    Field("h1", ("H1-1", "H1", "H1 1")),
    Field("h2", ("H2-1", "H2")),
    Field(
        "canonical_url",
        (
            "Canonical Link Element 1",
            "Canonical",
            "Canonical URL",
            "Elemento de enlace canónico 1",
            "Enlace canónico 1",
            "Élément de lien canonique 1",
            "Lien canonique 1",
            "Kanonisches Link-Element 1",
            "Canonical-Link-Element 1",
            "Elemento link canonico 1",
            "Link canonico 1",
        ),
    ),
    Field("meta_robots", ("Meta Robots 1", "Meta Robots", "Meta-Robots 1")),
    Field("x_robots_tag", ("X-Robots-Tag 1", "X-Robots-Tag")),
    Field("rel_next", ('rel="next" 1', "rel next")),
    Field("rel_prev", ('rel="prev" 1', "rel prev")),
    Field(
        "redirect_url",
        (
            "Redirect URL",
            "URL de redirección",
            "URL de redirection",
            "Weiterleitungs-URL",
            "Weiterleitungsziel",
            "URL di reindirizzamento",
        ),
    ),
    Field(
        "crawl_depth",
        (
            "Crawl Depth",
            "Depth",
            "Profundidad de rastreo",
            "Nivel de profundidad",
            "Profondeur d'exploration",
            "Niveau de profondeur",
            "Crawl-Tiefe",
            "Crawltiefe",
            "Profondità di scansione",
            "Livello di profondità",
        ),
    ),
    Field(
        "word_count",
        (
            "Word Count",
            "Recuento de palabras",
            "Número de palabras",
            "Nombre de mots",
            "Wortanzahl",
            "Anzahl Wörter",
            "Conteggio parole",
            "Numero di parole",
        ),
    ),
    Field(
        "unique_inlinks",
        (
            "Unique Inlinks",
            "Enlaces entrantes únicos",
            "Liens entrants uniques",
            "Eindeutige Inlinks",
            "Inlink unici",
        ),
    ),
    # Not Screaming Frog columns: filled when a user maps them (e.g. a keyword or extraction column).
    Field("main_query", ("Main Query", "Main Keyword", "Primary Keyword", "Target Keyword", "Top Query")),
    Field("custom_text", ()),
    # Screaming Frog's exact-duplicate content hash (Internal export, "Hash")
    Field("content_hash", ("Hash", "Content Hash", "Hash del contenido", "Hachage")),
)

# The All Inlinks bulk export.
LINK_FIELDS: tuple[Field, ...] = (
    Field("link_type", ("Type", "Tipo", "Typ")),
    Field(
        "source_url", ("Source", "From", "Origen", "Fuente", "Quelle", "Origine", "Sorgente"), required=True
    ),
    Field(
        "target_url", ("Destination", "To", "Target URL", "Destino", "Ziel", "Destinazione"), required=True
    ),
    Field(
        "anchor",
        (
            "Anchor",
            "Anchor Text",
            "Ancla",
            "Texto ancla",
            "Texto del ancla",
            "Ancre",
            "Texte d'ancrage",
            "Anker",
            "Ankertext",
            "Ancora",
            "Testo di ancoraggio",
            "Testo ancora",
        ),
    ),
    Field("alt_text", ("Alt Text", "Texto alternativo", "Texte alternatif", "Alt-Text", "Testo alternativo")),
    Field("status_code", CRAWL_FIELDS[2].aliases),
    Field("follow", ("Follow", "Seguir", "Suivre", "Folgen", "Segui")),
    Field("rel", ("Rel",)),
    Field(
        "link_position",
        (
            "Link Position",
            "Posición del enlace",
            "Posición de enlace",
            "Position du lien",
            "Link-Position",
            "Linkposition",
            "Posizione del link",
            "Posizione link",
        ),
    ),
    Field(
        "link_path",
        ("Link Path", "Ruta del enlace", "Chemin du lien", "Link-Pfad", "Linkpfad", "Percorso del link"),
    ),
    Field(
        "link_origin",
        ("Link Origin", "Origen del enlace", "Origine du lien", "Link-Ursprung", "Origine del link"),
    ),
)


# A page-text file: page URL -> the page's body text (or a crawler's custom extraction of it).
TEXT_FIELDS: tuple[Field, ...] = (
    CRAWL_FIELDS[0],
    Field(
        "text",
        ("Text", "Body", "Body Text", "Page Text", "Content", "Main Content", "Extractor 1 1", "Texto",
         "Contenido", "Texte", "Contenu", "Inhalt", "Testo", "Contenuto"),
        required=True,
    ),
)  # fmt: skip

# A queries file: page URL -> query, e.g. a Search Console performance export by page and query.
QUERY_FIELDS: tuple[Field, ...] = (
    Field(
        "url",
        (
            "Page",
            "Landing Page",
            "Top pages",
            "URL",
            "Address",
            "Página",
            "Page de destination",
            "Seite",
            "Pagina",
            "Dirección",
            "Adresse",
            "Indirizzo",
        ),
        required=True,
    ),
    Field(
        "query",
        (
            "Query",
            "Top queries",
            "Main Query",
            "Main Keyword",
            "Keyword",
            "Search term",
            "Consulta",
            "Consultas principales",
            "Palabra clave",
            "Requête",
            "Requêtes les plus fréquentes",
            "Mot clé",
            "Suchanfrage",
            "Häufigste Suchanfragen",
            "Keyword-Suche",
            "Query principali",
            "Parola chiave",
        ),
        required=True,
    ),
    Field("clicks", ("Clicks", "Clics", "Klicks", "Clic")),
    Field("impressions", ("Impressions", "Impresiones", "Impressionen", "Impressioni")),
)


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
