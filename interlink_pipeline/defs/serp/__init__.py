"""The shell of core/serp: SERP evidence per page and the schedule that refreshes it."""
