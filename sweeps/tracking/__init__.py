"""A sweep in MLflow: its parent and trial runs, the driver's journal and writer thread, the Tune callback, the lock, provenance, status."""
