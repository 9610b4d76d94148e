"""The tracking store: the one door to MLflow for every package above it (sweeps, dashboards, trial_eval).

    from tracking_store.uri import resolve_uri, mask_uri, sqlite_path      # where it is, how it is printed
    from tracking_store.client import open_client, open_existing           # every MLflow client of the product
    from tracking_store.lease import DriverLease                           # one driver per sweep per store
    from tracking_store.tables import read_runs                            # a sqlite store's runs, without MLflow
    from tracking_store.run_files import run_writer                        # a run's files and tags, in place on sqlite

It stands on contract/ only; MLflow is imported where a client is opened, never at import time.
"""
