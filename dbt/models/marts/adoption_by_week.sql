{{ config(unique_key='site') }}
-- How the plan is taken up, week by week (weeks start on Monday, UTC): decisions made (every decision of
-- every file, so a link decided twice counts twice), links first seen live, and the running totals.
with events as (
    select site, date_trunc('week', decided_at)::date as week, decision as event
    from {{ ref('stg_link_decisions') }}
    union all
    select site, date_trunc('week', seen_at)::date as week, 'live' as event
    from {{ ref('stg_live_links') }}
),
weekly as (
    select
        site,
        week,
        count(*) filter (where event = 'accept') as accepted,
        count(*) filter (where event = 'reject') as rejected,
        count(*) filter (where event = 'live') as live
    from events
    group by site, week
)
select
    site || '|' || strftime(week, '%Y-%m-%d') as week_key,
    site,
    week,
    accepted,
    rejected,
    live,
    case when accepted + rejected > 0 then accepted / (accepted + rejected) end as acceptance_rate,
    sum(accepted) over running as accepted_to_date,
    sum(rejected) over running as rejected_to_date,
    sum(live) over running as live_to_date
from weekly
where {{ site_filter() }}
window running as (partition by site order by week rows unbounded preceding)
