"""tracking_store/run_files.py: what the in-place writer puts in a sqlite store with local artifacts is what
MLflow's own client writes, as MLflow's client reads it back."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracking_store.run_files import MAX_TAG_VALUE, InPlaceWriter, MlflowWriter, run_writer

NOTE = "mlflow.note.content"


def _store(root: Path):

    uri = f"sqlite:///{root}/mlflow.db"
    from tracking_store.client import open_client
    client = open_client(uri)
    exp = client.create_experiment("files", artifact_location=str(root / "artifacts"))
    runs = [client.create_run(exp, run_name=name, tags={"spec_file": "configs/sweeps/x.yaml"}).info.run_id
            for name in ("through-mlflow", "in-place")]
    for rid in runs:
        client.set_terminated(rid, "FINISHED")
    remote = client.create_experiment("remote", artifact_location="s3://bucket/prefix")
    return client, uri, runs, client.create_run(remote, run_name="remote").info.run_id


def _files(root: Path) -> list[tuple[Path, str]]:
    (root / "out" / "figures").mkdir(parents=True)
    table, fig = root / "out" / "table.md", root / "out" / "figures" / "curves.png"
    table.write_text("| method | AVG |\n|---|---|\n| GRPO | 41.0 |\n", encoding="utf-8")
    fig.write_bytes(bytes(range(256)) * 4)
    return [(table, "report"), (fig, "report/figures")]


def _listing(client, run_id: str, path: str = "") -> dict[str, int]:
    out = {}
    for f in client.list_artifacts(run_id, path or None):
        out.update(_listing(client, run_id, f.path) if f.is_dir else {f.path: f.file_size})
    return out


@pytest.mark.slow
def test_in_place_writes_read_back_through_mlflow_as_mlflows_own(tmp_path):
    client, uri, (by_mlflow, in_place), remote = _store(tmp_path)
    files = _files(tmp_path)
    writers = {by_mlflow: MlflowWriter(uri, by_mlflow), in_place: run_writer(uri, in_place)}
    assert isinstance(writers[in_place], InPlaceWriter)
    long_note = "x" * (MAX_TAG_VALUE + 500)
    for rid, writer in writers.items():
        assert writer.tag("spec_file") == "configs/sweeps/x.yaml" and writer.tag("absent") is None
        writer.log_files(files)
        writer.log_files(files)  # again: replaced, not doubled
        writer.set_tag(NOTE, "first")
        writer.set_tag(NOTE, long_note)  # a second value replaces the first; cut where MLflow cuts it
    listings = {rid: _listing(client, rid) for rid in writers}
    assert listings[in_place] == listings[by_mlflow] == {"report/table.md": files[0][0].stat().st_size,
                                                         "report/figures/curves.png": 1024}
    for rid in writers:
        local = Path(client.download_artifacts(rid, "report/figures/curves.png", str(tmp_path / rid)))
        assert local.read_bytes() == files[1][0].read_bytes()
    tags = {rid: client.get_run(rid).data.tags for rid in writers}
    assert tags[in_place][NOTE] == tags[by_mlflow][NOTE] == long_note[:MAX_TAG_VALUE]
    assert tags[in_place] == tags[by_mlflow] | {"mlflow.runName": "in-place"}


def test_metrics_written_in_place_read_back_as_mlflows_own(tmp_path):
    client, uri, (by_mlflow, in_place), _ = _store(tmp_path)
    writers = {by_mlflow: MlflowWriter(uri, by_mlflow), in_place: run_writer(uri, in_place)}
    for writer in writers.values():
        writer.log_metrics({"curves/m/GRPO/A": 0.25, "curves/m/GRPO/B": 1.5, "skipped": float("nan")})
        writer.log_metrics({"curves/m/GRPO/A": 0.35})  # a later report: the latest value replaces the first
    latest = {rid: client.get_run(rid).data.metrics for rid in writers}
    assert latest[in_place] == latest[by_mlflow] == {"curves/m/GRPO/A": 0.35, "curves/m/GRPO/B": 1.5}
    history = {rid: sorted(m.value for m in client.get_metric_history(rid, "curves/m/GRPO/A")) for rid in writers}
    assert history[in_place] == history[by_mlflow] == [0.25, 0.35]


def test_other_stores_and_unknown_runs_go_through_mlflow(tmp_path):
    _, uri, _, remote = _store(tmp_path)
    assert isinstance(run_writer(uri, remote), MlflowWriter)  # its artifacts are not local files
    assert isinstance(run_writer(uri, "0" * 32), MlflowWriter)  # MLflow names the missing run when used
