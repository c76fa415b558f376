"""Whether a site's published plan is still the one to act on: it is stale once a newer crawl of the site is
registered (the plan knows pages and links that may have changed) or once it is older than a set age (the
SERP evidence and the site have moved on)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from interlink_pipeline.core.environment import PLAN_MAX_AGE_ENV, Environment, environment
from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest.inbox import registered_crawl_id
from interlink_pipeline.core.numbers import whole_number
from interlink_pipeline.core.publish.publication import read_manifest

PLAN_MAX_AGE_DAYS = 30
MOST_DAYS = 36_500  # a hundred years: "never stale by age"


@dataclass(frozen=True)
class Freshness:
    fresh: bool
    said: str  # one sentence, for the check, `interlink status` and the run's log
    age: timedelta | None  # since the plan was made (None: nothing published)


def plan_max_age(env: Environment) -> timedelta:
    """$INTERLINK_PLAN_MAX_AGE_DAYS (whole days, 1 to MOST_DAYS), else PLAN_MAX_AGE_DAYS."""
    try:
        days = whole_number(
            PLAN_MAX_AGE_ENV, env.plan_max_age_days or str(PLAN_MAX_AGE_DAYS), "days", MOST_DAYS
        )
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return timedelta(days=days)


def _plan_made(published: dict) -> datetime:
    """When the published plan was made (UTC): its plan's time, not its publication's (a plan published
    again is as old as it was)."""
    made = datetime.fromisoformat(published.get("plan_computed_at") or published["published_at"])
    return made if made.tzinfo else made.replace(tzinfo=UTC)


def plan_freshness(
    published: dict | None, registered_crawl: str | None, now: datetime, max_age: timedelta
) -> Freshness:
    """The published plan (published.json's content: its crawl and when its plan was made) against the
    crawl registered now (its id; None: none found here) and the age allowed."""
    if published is None:
        return Freshness(False, "no plan is published yet", None)
    made = _plan_made(published)
    age, when = now - made, f"made {made:%Y-%m-%d %H:%M} UTC"
    if registered_crawl is not None and published.get("crawl_id") != registered_crawl:
        return Freshness(
            False,
            f"stale: the plan ({when}) is of crawl {published.get('crawl_id')}, and a newer crawl "
            f"({registered_crawl}) is registered: run the site again",
            age,
        )
    if age > max_age:
        return Freshness(False, f"stale: the plan was {when}, over the {max_age.days} days allowed", age)
    if registered_crawl is None:
        return Freshness(True, f"fresh by its age: the plan was {when}; no crawl is registered here", age)
    return Freshness(True, f"fresh: the plan of the crawl registered now, {when}", age)


def site_freshness(folder: Path, inbox_root: str | Path, site: str) -> Freshness:
    """The plan published in `folder` against the crawl registered for `site` now."""
    registered = registered_crawl_id(inbox_root, site)
    return plan_freshness(read_manifest(folder), registered, datetime.now(UTC), plan_max_age(environment()))
