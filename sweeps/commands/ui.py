"""`sweep ui [SWEEP]`: the MLflow UI on 127.0.0.1 for the run dir's store, or a tracking server's own pages.

    sweep ui                                  # MLflow UI for runs/mlflow.db (Ctrl-C to stop)
    sweep ui dhpo_vs_baselines --open         # ... and the sweep's curves page, grouped by method
    sweep ui dhpo_vs_baselines --smoke        # the smoke sweep's pages: dhpo_vs_baselines_smoke
    sweep ui dhpo_vs_baselines --tracking-uri http://mlflow:5000    # a server: its pages, nothing started

The pages and the server: sweeps/ui/server.py.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from sweeps.commands.options import StoreOptions, fail, grouped
from sweeps.commands.spec_input import smoke_name


@grouped
def ui(
    sweep: Annotated[Optional[str], typer.Argument(help="Sweep (= MLflow experiment) name: print (and --open) its curves page.")] = None,
    store: StoreOptions = StoreOptions(),
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 5000,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the curves page in a web browser once the server answers.")] = False,
    smoke: Annotated[bool, typer.Option("--smoke", help="The smoke-size sweep (sweep run --smoke): SWEEP_smoke.")] = False,
) -> None:
    """Start the MLflow UI on 127.0.0.1 for the sweep store (Ctrl-C to stop); an http store's own pages.

    With SWEEP: the URL of the sweep's curves (the experiment's "Sweep curves" view: the papers' metrics,
    one mean line and min-max band per method), of its trial runs (the "Sweep trials" table: method, seed
    and the key metrics as columns) and of its parent run (description: the paper table).

    The URLs are printed once the server answers; its own output goes to <run-dir>/logs/mlflow-ui.log.
    A taken port exits 2 before anything starts. An http store (an `mlflow server`): its pages are
    printed, nothing is started.
    """
    from sweeps.ui.server import open_page, port_taken, print_pages, serve, sweep_pages
    from tracking_store.client import StoreMissing, require_store
    from tracking_store.uri import is_server, mask_uri, resolve_uri

    if smoke and not sweep:
        raise typer.BadParameter("--smoke: give SWEEP (its pages are SWEEP_smoke's)")
    sweep = smoke_name(sweep) if smoke else sweep
    uri = resolve_uri(store.tracking_uri, store.run_dir)
    server = uri.rstrip("/") if is_server(uri) else f"http://127.0.0.1:{port}"
    try:
        if not is_server(uri):
            require_store(uri)
        pages = sweep_pages(uri, sweep, server) if sweep else {}
    except StoreMissing as err:
        raise fail(f"error: {err}") from None
    if is_server(uri):
        typer.echo(f"MLflow UI of the tracking server {mask_uri(server)}")
        print_pages(pages)
        if open_browser:
            open_page(next(iter(pages.values()), server))
        return
    if port_taken(port):
        raise fail(f"error: port {port} on 127.0.0.1 is taken (another UI?); pass --port N")
    raise typer.Exit(serve(uri, store.run_dir, port, pages, open_browser))
