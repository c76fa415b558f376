"""Where a command's results are: the warehouse, the drop folder, and the Dagster UI at its real address."""

from __future__ import annotations

from pathlib import Path

from interlink_pipeline.core.environment import environment

DEFAULT_PORT = "3000"  # make dev's


def ui_address() -> str:
    """The UI serving this Dagster home, as a sentence: the address a running webserver listens on (`make
    dev PORT=3001` is found at 3001), else how to start one on $PORT (make's, else 3000)."""
    import psutil

    env = environment()
    home = env.dagster_home
    for process in psutil.process_iter(["cmdline"]):
        line = process.info["cmdline"] or []
        if "dagster_webserver" not in " ".join(line) or "--port" not in line:
            continue
        try:
            if home and process.environ().get("DAGSTER_HOME") != home:
                continue  # another project's UI
        except psutil.Error:
            continue
        host = line[line.index("--host") + 1] if "--host" in line else "127.0.0.1"
        return f"http://{host}:{line[line.index('--port') + 1]} (running)"
    port = env.ui_port or DEFAULT_PORT
    return f"make dev{'' if port == DEFAULT_PORT else f' PORT={port}'}, then open http://127.0.0.1:{port}"


def print_where() -> None:
    from interlink_pipeline.core.ingest.inbox import default_inbox
    from interlink_pipeline.core.warehouse.database import default_warehouse, describe

    print(f"warehouse: {describe(default_warehouse())}")
    print(f"drop folder: {Path(default_inbox()).resolve()}")
    print(f"UI: {ui_address()}")
