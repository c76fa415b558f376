{# Rows of the site being run (var `site`), or of every site when none is given. #}
{% macro site_filter(column='site') -%}
  {%- if var('site', '') -%} {{ column }} = '{{ var("site") | replace("'", "''") }}' {%- else -%} true {%- endif -%}
{%- endmacro %}

{# Custom schemas are used as given (marts, dbt_staging), not prefixed with the target schema. #}
{% macro generate_schema_name(custom_schema_name, node) -%}
  {{ custom_schema_name if custom_schema_name else target.schema }}
{%- endmacro %}
