"""A generated template site: a homebuilder's states → market areas → cities → communities → floor plans
(`/states/{state}/{area}/{city}/{community}/floor-plans/{plan}/`), the same plan names reused across
communities, so that a plan's page is most like the same plan elsewhere by its words (the same name and
specifications), while the site's editors link it within its community. Its ground truth names each page's
branch; the tests and bench_link_quality check that the plan's topical links stay in the source's city.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from interlink_pipeline.sample.crawl import html_page_columns, screaming_frog_columns, with_inlinks
from interlink_pipeline.sample.links import as_inlinks_export
from interlink_pipeline.sample.pages import url_slug
from interlink_pipeline.sample.site import GeneratedSite
from interlink_pipeline.sample.vocabulary import LOCATION_TREE

LOCATION_HOST = "www.loneoakhomes.example"


def generate_location_site(
    *,
    states: int = 4,
    areas_per_state: int = 2,
    cities_per_area: int = 3,
    communities_per_city: int = 3,
    plans_per_community: int = 8,
    seed: int = 11,
    host: str = LOCATION_HOST,
    with_links: bool = True,
) -> GeneratedSite:
    """The homebuilder's site: its crawl (in-links counted whether or not they are exported), its All
    Inlinks export (unless `with_links` is false) and each page's branch (truth: url, page_type, topic =
    the city's path, and the state, area, city and community paths)."""
    rng = np.random.default_rng(seed)
    pages = _pages(rng, states, areas_per_state, cities_per_area, communities_per_city, plans_per_community)
    base = f"https://{host}"
    pages = pages.with_columns((pl.lit(base) + pl.col("path")).alias("url"))
    links = as_inlinks_export(_links(pages, base))
    rows = with_inlinks(pages.with_columns(*html_page_columns()), links).sort("depth", "url")
    truth = pages.select(
        "url", "page_type", pl.col("city").alias("topic"), "state", "area", "city", "community"
    )
    return GeneratedSite(host, screaming_frog_columns(rows, rng), links if with_links else None, truth)


def _pages(
    rng: np.random.Generator, states: int, areas: int, cities: int, communities: int, plans: int
) -> pl.DataFrame:
    """Every page: path, page_type, depth, title, h1, meta and its branch (the path of its state, area,
    city and community, as far as it has one)."""
    words, builder = LOCATION_TREE, LOCATION_TREE["builder"]
    first, second = words["community_words"]
    rows = [_page("/", "home", 0, f"{builder} | New Homes Across the South", f"New Homes by {builder}",
                  f"{builder} builds new homes in {states} states.")]  # fmt: skip
    for state in words["states"][:states]:
        s_path = f"/states/{_slug(state['name'])}/"
        rows.append(_page(s_path, "state", 1, f"New Homes in {state['name']} | {builder}",
                          f"New Homes in {state['name']}",
                          f"Find a new home in {state['name']}: communities and floor plans by {builder}.",
                          state=s_path))  # fmt: skip
        for area in state["areas"][:areas]:
            a_path = f"{s_path}{_slug(area['name'])}-area/"
            rows.append(_page(a_path, "area", 2, f"New Homes in the {area['name']} Area, {state['code']}",
                              f"The {area['name']} Area", f"New home communities around {area['name']}, "
                              f"{state['name']}.", state=s_path, area=a_path))  # fmt: skip
            for city in area["cities"][:cities]:
                c_path = f"{a_path}{_slug(city)}/"
                place = f"{city}, {state['code']}"
                rows.append(_page(c_path, "city", 3, f"New Homes in {place}", f"New Homes in {city}",
                                  f"New construction homes for sale in {place}.", state=s_path, area=a_path,
                                  city=c_path))  # fmt: skip
                names = rng.choice(len(first) * len(second), size=communities, replace=False)
                for name in names:
                    community = f"{first[name // len(second)]} {second[name % len(second)]}"
                    m_path = f"{c_path}{_slug(community)}/"
                    branch = {"state": s_path, "area": a_path, "city": c_path, "community": m_path}
                    offered = rng.choice(len(words["floor_plans"]), size=plans, replace=False)
                    rows.append(_page(m_path, "community", 4, f"{community} | New Homes in {place}",
                                      community, f"New homes at {community} in {place}: {plans} floor "
                                      f"plans from {builder}.", **branch))  # fmt: skip
                    for p in sorted(offered.tolist()):
                        rows.append(_plan(words["floor_plans"][p], p, community, place, m_path, branch))
    return pl.DataFrame(rows)


def _plan(plan: str, number: int, community: str, place: str, at: str, branch: dict[str, str]) -> dict:
    """A floor plan's page: the same plan (name and specifications) wherever it is built."""
    beds, baths, area = 3 + number % 3, 2 + number % 2, 1450 + 115 * number
    return _page(
        f"{at}floor-plans/{_slug(plan)}/", "floor_plan", 5, f"The {plan} Plan | {community}",
        f"The {plan}", f"The {plan}: {beds} bedrooms, {baths} baths, {area:,} sq ft, a single-family "
        f"floor plan at {community} in {place}.", **branch,
    )  # fmt: skip


def _page(path: str, page_type: str, depth: int, title: str, h1: str, meta: str, **branch: str) -> dict:
    return {
        "path": path, "page_type": page_type, "depth": depth, "title": title, "h1": h1, "meta": meta,
        **{level: branch.get(level) for level in ("state", "area", "city", "community")},
    }  # fmt: skip


def _slug(name: str) -> str:
    return pl.select(url_slug(pl.lit(name))).item()


def _links(pages: pl.DataFrame, base: str) -> pl.DataFrame:
    """The header menu (home and the states) on every page, breadcrumbs to each page's parent, and the
    content links editors write: each page to the pages below it, each floor plan to its community's other
    plans (three), each community to the others of its city."""
    states = pages.filter(pl.col("page_type") == "state")
    header = pages.select(pl.col("url").alias("source")).join(
        pl.concat(
            [
                pl.DataFrame({"target": [base + "/"], "anchor": [LOCATION_TREE["builder"]]}),
                states.select(pl.col("url").alias("target"), pl.col("h1").alias("anchor")),
            ]
        ),
        how="cross",
    )
    by_path = pages.select("path", "url", "h1")
    parent = pl.coalesce(
        pl.when(pl.col("page_type") == "floor_plan").then(pl.col("community")),
        pl.when(pl.col("page_type") == "community").then(pl.col("city")),
        pl.when(pl.col("page_type") == "city").then(pl.col("area")),
        pl.when(pl.col("page_type") == "area").then(pl.col("state")),
        pl.when(pl.col("page_type") == "state").then(pl.lit("/")),
    )
    child_parent = (
        pages.with_columns(parent.alias("parent_path"))
        .drop_nulls("parent_path")
        .join(
            by_path.rename({"path": "parent_path", "url": "parent_url", "h1": "parent_h1"}), on="parent_path"
        )
    )
    down = child_parent.select(pl.col("parent_url").alias("source"), pl.col("url").alias("target"),
                               pl.col("h1").alias("anchor"))  # fmt: skip
    breadcrumbs = child_parent.select(pl.col("url").alias("source"), pl.col("parent_url").alias("target"),
                                      pl.col("parent_h1").alias("anchor"))  # fmt: skip
    neighbours = [
        _next_in_group(pages.filter(pl.col("page_type") == "floor_plan"), "community", 3),
        _next_in_group(pages.filter(pl.col("page_type") == "community"), "city", 2),
    ]
    return pl.concat(
        [
            _placed(header, "Header", "//header/nav/a"),
            _placed(breadcrumbs, "Navigation", "//nav[@class='breadcrumbs']/a"),
            _placed(down, "Content", "//main/ul/li/a"),
            *(_placed(frame, "Content", "//main/aside/a") for frame in neighbours),
        ]
    ).filter(pl.col("source") != pl.col("target"))


def _next_in_group(pages: pl.DataFrame, group: str, count: int) -> pl.DataFrame:
    """Each page to the next `count` pages of its group (in URL order, wrapping round)."""
    ordered = pages.sort(group, "url").with_columns(
        pl.int_range(pl.len()).over(group).alias("i"), pl.len().over(group).alias("n")
    )
    return pl.concat(
        [
            ordered.join(
                ordered.select(group, "i", pl.col("url").alias("target"), pl.col("h1").alias("anchor")),
                left_on=[group, (pl.col("i") + step) % pl.col("n")],
                right_on=[group, "i"],
            ).select(pl.col("url").alias("source"), "target", "anchor")
            for step in range(1, count + 1)
        ]
    ).unique()


def _placed(links: pl.DataFrame, position: str, path: str) -> pl.DataFrame:
    return links.select(
        "source", "target", "anchor", pl.lit(position).alias("position"), pl.lit(path).alias("link_path"),
        pl.lit("").alias("alt"),
    )  # fmt: skip
