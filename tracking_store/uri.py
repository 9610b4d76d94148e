"""Where a sweep's tracking store is, and how a URI is printed: the rules every command shares.

    uri = resolve_uri(None, "runs")              # --tracking-uri, else $MLFLOW_TRACKING_URI, else runs/mlflow.db
    sqlite_path(uri)                             # Path('/abs/runs/mlflow.db'); None for a server or database
    mask_uri("postgresql+psycopg2://me:pw@db/x")   # 'postgresql+psycopg2://me:***@db/x'
    where(uri); is_server(uri)                   # how a message names the store; an `mlflow server`?

URI forms: ``sqlite:////abs/mlflow.db`` (default: ``sqlite:///<run dir>/mlflow.db``), ``http(s)://host:port``
(an ``mlflow server``), or a database URI (``postgresql+psycopg2://user:pw@host/db``: SQLAlchemy maps a bare
``postgresql://`` to psycopg 3). The ``server`` extra installs a PostgreSQL driver.
Light on purpose (no pandas, no MLflow): the command line answers at once.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

from contract.env import MLFLOW_TRACKING_URI
from contract.run_layout import RunLayout


def sqlite_path(uri: str | None) -> Path | None:
    """File behind a `sqlite:///rel` or `sqlite:////abs` URI; None for other stores."""
    if not uri or not uri.startswith("sqlite:///"):
        return None
    rest = uri[len("sqlite:///"):].split("?", 1)[0]
    path = unquote(rest)
    if not path or path == ":memory:":
        return None
    return Path(path) if path.startswith("/") else Path.cwd() / path


_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:/@\s]+):(?P<password>[^@/\s]+)@")
_SECRET_QUERY = re.compile(r"(?i)(?P<key>[?&](?:password|passwd|pwd|token|secret|sslpassword)=)[^&\s]+")


def mask_uri(text: str) -> str:
    """``text`` with every ``scheme://user:password@`` shown as ``scheme://user:***@`` and secret query values
    hidden: what every printed URI, message and log line goes through."""
    text = _CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:***@", str(text))
    return _SECRET_QUERY.sub(lambda m: f"{m['key']}***", text)


def resolve_uri(tracking_uri: str | None, run_dir: Path | str = "runs") -> str:
    """The one rule every command follows: ``--tracking-uri``, else ``$MLFLOW_TRACKING_URI``, else the
    run directory's sqlite store ``sqlite:///<run_dir>/mlflow.db``."""
    if tracking_uri:
        return tracking_uri
    if MLFLOW_TRACKING_URI.get():
        return MLFLOW_TRACKING_URI.get()
    return default_uri(run_dir)


def default_uri(run_dir: Path | str) -> str:
    """A run directory's own sqlite store, ``sqlite:///<run_dir>/mlflow.db`` (absolute)."""
    return f"sqlite:///{RunLayout(Path(run_dir)).store.resolve()}"


def where(uri: str) -> str:
    """How a message names a store: the sqlite file, or the masked URI."""
    path = sqlite_path(uri)
    return str(path) if path else mask_uri(uri)


def is_server(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))
