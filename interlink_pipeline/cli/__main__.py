"""`python -m interlink_pipeline.cli`: the `interlink` command."""

from interlink_pipeline.cli import main

raise SystemExit(main())
