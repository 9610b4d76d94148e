"""The read commands' reads of an `mlflow server`, over its REST API without importing MLflow.

    reader = open_reader(uri)    # a server's URI: a RestReader; any other store: an MLflow client (open_existing)
    reader = RestReader("http://mlflow:5000")          # what MlflowClient answers, for the calls the reads make
    exp = reader.get_experiment_by_name("big_grid")    # .experiment_id, .name, .lifecycle_stage; None if none
    page = reader.search_runs([exp.experiment_id], "tags.role = 'trial'", max_results=1000)   # runs, page.token
    run = reader.get_run(run_id)                        # .info (run_id, status, start_time, end_time, ...), .data
    [a.path for a in reader.list_artifacts(run_id, "read_copy")]
    local = reader.download_artifacts(run_id, "spec/resolved.json", "/tmp/x")

Importing MLflow and opening a client takes 3-6 s on a 2-core machine, more than `sweep status` on a server is
allowed in all (3 s at 2,000 trials): `sweep status` and `sweep report` read a server through this class, which
speaks the same public REST API MLflow's client does (``/api/2.0/mlflow/...``, and for artifacts the server's
proxy ``/api/2.0/mlflow-artifacts/artifacts/...``). Runs come back as MLflow's client gives them (``info``,
``data.tags``/``params``/``metrics`` dicts), so RunRecord.of and the read copy take either. Artifacts kept
elsewhere than the server's proxy or a local folder (a bucket) are fetched through MLflow's own client.

Credentials and TLS as MLflow's client takes them: user and password in the URI or MLFLOW_TRACKING_USERNAME and
MLFLOW_TRACKING_PASSWORD, MLFLOW_TRACKING_TOKEN, MLFLOW_TRACKING_INSECURE_TLS, MLFLOW_TRACKING_SERVER_CERT_PATH,
MLFLOW_TRACKING_CLIENT_CERT_PATH; requests time out after MLFLOW_HTTP_REQUEST_TIMEOUT seconds. A server that
cannot be reached or refuses is a ``ServerReadError`` naming the call (the URI's credentials masked).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote, urlparse

from contract.env import (MLFLOW_CLIENT_CERT, MLFLOW_HTTP_TIMEOUT, MLFLOW_INSECURE_TLS, MLFLOW_PASSWORD,
                          MLFLOW_SERVER_CERT, MLFLOW_TOKEN, MLFLOW_USERNAME)
from tracking_store.client import open_client, open_existing
from tracking_store.tables import local_artifact_dir
from tracking_store.uri import is_server, mask_uri

API = "/api/2.0/mlflow"
ARTIFACTS = "/api/2.0/mlflow-artifacts/artifacts"
VIEWS = {1: "ACTIVE_ONLY", 2: "DELETED_ONLY", 3: "ALL"}  # MLflow's ViewType values


class ServerReadError(RuntimeError):
    """The server could not be reached, or answered a read with an error."""


@dataclass
class RunInfo:
    run_id: str
    run_name: str | None
    experiment_id: str
    status: str
    start_time: int | None
    end_time: int | None
    artifact_uri: str | None
    lifecycle_stage: str


@dataclass
class RunData:
    tags: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class Run:
    info: RunInfo
    data: RunData


class Page(list):
    """A page of runs and the token of the next (None at the end), as MLflow's PagedList."""

    token: str | None = None


def _int(value) -> int | None:
    return None if value in (None, "") else int(value)


def _run(obj: dict) -> Run:
    info, data = obj.get("info", {}), obj.get("data", {})
    return Run(RunInfo(info.get("run_id") or info.get("run_uuid"), info.get("run_name"), str(info.get("experiment_id")),
                       info.get("status", ""), _int(info.get("start_time")), _int(info.get("end_time")),
                       info.get("artifact_uri"), info.get("lifecycle_stage", "active")),
               RunData({t["key"]: t.get("value", "") for t in data.get("tags", [])},
                       {p["key"]: p.get("value", "") for p in data.get("params", [])},
                       {m["key"]: float(m.get("value", "nan")) for m in data.get("metrics", [])}))


class RestReader:
    """Reads of an `mlflow server` (module docstring); ``tracking_uri`` as given, credentials and all."""

    def __init__(self, tracking_uri: str):
        import requests

        self.tracking_uri = tracking_uri
        parsed = urlparse(tracking_uri)
        self.base = f"{parsed.scheme}://{parsed.hostname}{f':{parsed.port}' if parsed.port else ''}{parsed.path.rstrip('/')}"
        self.session = requests.Session()
        if parsed.username or MLFLOW_USERNAME.is_set():
            self.session.auth = (parsed.username or MLFLOW_USERNAME.raw(), parsed.password or MLFLOW_PASSWORD.raw() or "")
        if MLFLOW_TOKEN.is_set():
            self.session.headers["Authorization"] = f"Bearer {MLFLOW_TOKEN.raw()}"
        self.session.verify = False if MLFLOW_INSECURE_TLS.get() else (MLFLOW_SERVER_CERT.raw() or True)
        if MLFLOW_CLIENT_CERT.is_set():
            self.session.cert = MLFLOW_CLIENT_CERT.raw()
        self.timeout = MLFLOW_HTTP_TIMEOUT.get() if MLFLOW_HTTP_TIMEOUT.is_set() else 30.0
        self._artifact_uris: dict[str, str | None] = {}

    def _call(self, method: str, path: str, *, params: dict | None = None, body: dict | None = None,
              missing_ok: bool = False, raw: bool = False, data: bytes | None = None):
        import requests

        try:
            answer = self.session.request(method, self.base + path, params=params, json=body, data=data,
                                          timeout=self.timeout)
        except requests.RequestException as err:
            raise ServerReadError(f"tracking server {mask_uri(self.base)} not reachable ({type(err).__name__}); is it "
                                  "running, and is --tracking-uri right?") from None
        if missing_ok and answer.status_code == 404:
            return None
        if answer.status_code != 200:
            try:
                detail = answer.json().get("message", answer.text[:300])
            except ValueError:
                detail = answer.text[:300]
            raise ServerReadError(f"tracking server {mask_uri(self.base)}: {method} {path} answered "
                                  f"{answer.status_code}: {mask_uri(str(detail))}")
        return answer.content if raw else answer.json()

    # ---- what MlflowClient answers -----------------------------------------------------------------
    def get_experiment_by_name(self, name: str):
        found = self._call("GET", f"{API}/experiments/get-by-name", params={"experiment_name": name}, missing_ok=True)
        if not found:
            return None
        exp = found["experiment"]
        return SimpleNamespace(experiment_id=str(exp["experiment_id"]), name=exp["name"],
                               lifecycle_stage=exp.get("lifecycle_stage", "active"),
                               tags={t["key"]: t.get("value", "") for t in exp.get("tags", [])})

    def get_experiment(self, experiment_id: str):
        exp = self._call("GET", f"{API}/experiments/get", params={"experiment_id": str(experiment_id)})["experiment"]
        return SimpleNamespace(experiment_id=str(exp["experiment_id"]), name=exp["name"],
                               lifecycle_stage=exp.get("lifecycle_stage", "active"))

    def search_experiments(self, max_results: int = 1000) -> list:
        found, token, out = None, None, []
        while found is None or token:
            found = self._call("POST", f"{API}/experiments/search",
                               body={"max_results": max_results, **({"page_token": token} if token else {})})
            out += [SimpleNamespace(experiment_id=str(e["experiment_id"]), name=e["name"],
                                    lifecycle_stage=e.get("lifecycle_stage", "active")) for e in found.get("experiments", [])]
            token = found.get("next_page_token")
        return out

    def search_runs(self, experiment_ids: list[str], filter_string: str = "", run_view_type: int = 1,
                    max_results: int = 1000, order_by: list[str] | None = None, page_token: str | None = None) -> Page:
        body = {"experiment_ids": [str(e) for e in experiment_ids], "filter": filter_string,
                "run_view_type": VIEWS[int(run_view_type)], "max_results": min(int(max_results), 50_000),
                **({"order_by": order_by} if order_by else {}), **({"page_token": page_token} if page_token else {})}
        found = self._call("POST", f"{API}/runs/search", body=body)
        page = Page(_run(r) for r in found.get("runs", []))
        page.token = found.get("next_page_token") or None
        return page

    def get_run(self, run_id: str) -> Run:
        return _run(self._call("GET", f"{API}/runs/get", params={"run_id": run_id})["run"])

    def get_metric_history(self, run_id: str, key: str) -> list:
        """Every logged point of ``key`` in ``run_id`` (.step, .value, .timestamp)."""
        out, token = [], None
        while True:
            found = self._call("GET", f"{API}/metrics/get-history", params={
                "run_id": run_id, "metric_key": key, "max_results": 25_000, **({"page_token": token} if token else {})})
            out += [SimpleNamespace(key=key, step=_int(m.get("step")) or 0, value=float(m.get("value", "nan")),
                                    timestamp=_int(m.get("timestamp")) or 0) for m in found.get("metrics", [])]
            token = found.get("next_page_token")
            if not token:
                return out

    def metric_history_bulk(self, run_ids: list[str], key: str, max_results: int) -> list:
        """``key``'s points of up to 100 runs in one call (.run_id, .step, .value, .timestamp); a run with more
        than ``max_results`` points comes back sampled (tracking_store/history.py reads it whole instead)."""
        found = self._call("GET", f"{API}/metrics/get-history-bulk-interval",
                           params={"run_ids": run_ids, "metric_key": key, "max_results": max_results})
        return [SimpleNamespace(run_id=m["run_id"], step=_int(m.get("step")) or 0, value=float(m.get("value", "nan")),
                                timestamp=_int(m.get("timestamp")) or 0) for m in found.get("metrics", [])]

    def _proxied(self, artifact_uri: str | None) -> str | None:
        """The path of a run's artifacts behind the server's proxy (``mlflow-artifacts:/...``), else None."""
        if not artifact_uri or not artifact_uri.startswith("mlflow-artifacts:"):
            return None
        return urlparse(artifact_uri).path.strip("/")

    def _artifact_uri(self, run_id: str) -> str | None:
        if run_id not in self._artifact_uris:  # a run's artifact URI never changes
            self._artifact_uris[run_id] = self.get_run(run_id).info.artifact_uri
        return self._artifact_uris[run_id]

    def list_artifacts(self, run_id: str, path: str = "") -> list:
        uri = self._artifact_uri(run_id)
        local, proxied = local_artifact_dir(uri), self._proxied(uri)
        if local is not None:
            folder = local / path
            return [SimpleNamespace(path=str(Path(path) / p.name), is_dir=p.is_dir())
                    for p in sorted(folder.iterdir())] if folder.is_dir() else []
        if proxied is None:
            return self._mlflow().list_artifacts(run_id, path)
        found = self._call("GET", ARTIFACTS, params={"path": f"{proxied}/{path}".rstrip("/")})
        return [SimpleNamespace(path=str(Path(path) / f["path"]), is_dir=f.get("is_dir", False))
                for f in found.get("files", [])]

    def download_artifacts(self, run_id: str, path: str, dst_path: str) -> str:
        """One artifact file (not a folder) into ``dst_path``; its local path."""
        uri = self._artifact_uri(run_id)
        local, proxied = local_artifact_dir(uri), self._proxied(uri)
        target = Path(dst_path) / Path(path).name
        if local is not None:
            shutil.copyfile(local / path, target)
        elif proxied is not None:
            target.write_bytes(self._call("GET", f"{ARTIFACTS}/{quote(f'{proxied}/{path}')}", raw=True))
        else:
            return self._mlflow().download_artifacts(run_id, path, dst_path)
        return str(target)

    def _mlflow(self):
        return open_client(self.tracking_uri)


def open_reader(uri: str, how: str = ""):
    """What the read commands read a store with: an `mlflow server` through ``RestReader``, any other store with
    an MLflow client of the existing store (tracking_store/client.py ``open_existing``: never created)."""
    return RestReader(uri) if is_server(uri) else open_existing(uri, how)
