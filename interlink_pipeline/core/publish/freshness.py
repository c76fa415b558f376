"""Whether a site's published plan is still the one to act on: it is stale once a newer crawl of the site is
registered (the plan knows pages and links that may have changed) or once it is older than a set age (the
SERP evidence and the site have moved on)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from interlink_pipeline.core.environment import PLAN_MAX_AGE_ENV, Environment

PLAN_MAX_AGE_DAYS = 30


@dataclass(frozen=True)
class Freshness:
    fresh: bool
    said: str  # one sentence, for the check, `interlink status` and the run's log
    age: timedelta | None  # since the plan was published (None: nothing published)


def plan_max_age(env: Environment) -> timedelta:
    """$INTERLINK_PLAN_MAX_AGE_DAYS (whole days, 1 or more), else PLAN_MAX_AGE_DAYS."""
    value = env.plan_max_age_days or str(PLAN_MAX_AGE_DAYS)
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"${PLAN_MAX_AGE_ENV} must be a whole number of days (1 or more), not {value!r}")
    return timedelta(days=int(value))


def plan_freshness(
    published: dict | None, registered_crawl: str | None, now: datetime, max_age: timedelta
) -> Freshness:
    """The published plan (published.json's content: `published_at`, `crawl_id`) against the crawl
    registered now (its id) and the age allowed."""
    if published is None:
        return Freshness(False, "no plan is published yet", None)
    at = datetime.fromisoformat(published["published_at"])
    age = now - at
    when = f"published {at:%Y-%m-%d %H:%M} UTC"
    if registered_crawl is not None and published.get("crawl_id") != registered_crawl:
        return Freshness(
            False,
            f"stale: the plan ({when}) is of crawl {published.get('crawl_id')}, and a newer crawl "
            f"({registered_crawl}) is registered: run the site again",
            age,
        )
    if age > max_age:
        return Freshness(
            False,
            f"stale: the plan was {when}, {age.days} days ago, more than the {max_age.days} allowed",
            age,
        )
    return Freshness(True, f"fresh: the plan of the crawl registered now, {when}", age)
