{# Rows of the site being run (var `site`), or of every site when none is given. #}
{% macro site_filter(column='site') -%}
  {%- if var('site', '') -%} {{ column }} = '{{ var("site") | replace("'", "''") }}' {%- else -%} true {%- endif -%}
{%- endmacro %}

{# Custom schemas are used as given (marts, dbt_staging), not prefixed with the target schema. #}
{% macro generate_schema_name(custom_schema_name, node) -%}
  {{ custom_schema_name if custom_schema_name else target.schema }}
{%- endmacro %}

{# The run's site's rows, deleted before a per-site build of a table keyed by site (pre-hook of the marts),
   in the build's own transaction: a failed build leaves them. #}
{% macro clear_site_rows() -%}
  {%- if execute and var('site', '') and config.get('unique_key') == 'site' and is_incremental() -%}
    delete from {{ this }} where {{ site_filter() }}
  {%- endif -%}
{%- endmacro %}
