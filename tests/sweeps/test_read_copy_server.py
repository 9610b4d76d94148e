"""The read copy end to end on a real `mlflow server` (artifacts proxied by the server, as docs/clusters.md starts
it): `sweep run` writes it, `sweep status` and `sweep report` read through it and say exactly what `--direct`
(every run from the store) says, MLflow's own client still sees every run and history as before, and
`sweep report --rebuild` writes it anew. Synthetic trials (trainers/synthetic/) on a local Ray; the server is
ended by pid (its process group)."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from cluster_testlib import MlflowServer, sweep
from sweep_testlib import short_cwd

from tracking_store.history import read_history_client
from tracking_store.read_copy import open_copy
from tracking_store.roles import PARENT, TRIAL, role_filter
from tracking_store.tables import RunRecord

pytestmark = pytest.mark.lane("local")  # its slow tests' lane (tests/conftest.py)

NAME = "copy_e2e"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = MlflowServer(tmp_path_factory.mktemp("copy-server"))
    server.start()
    try:
        cwd = short_cwd()
        spec = {"name": NAME, "base": {"backend": "synthetic", "synthetic": {"step_seconds": 0},
                                       "trainer": {"steps": 8, "eval_every": 2, "checkpoint_every": 8}},
                "resources": {"cpus": 0.5}, "max_concurrent": 4, "seeds": [0, 1, 2],
                "variants": [{"algorithm": "grpo"}, {"algorithm": "gspo"}],
                "report": {"table": {"select_by": "val/avg/acc", "at": "final"}}}
        (cwd / f"{NAME}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        done = sweep(cwd, "run", f"{NAME}.yaml", "--tracking-uri", server.uri, "--no-report", timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        yield server, cwd
    finally:
        server.stop()


def _read(server, cwd, *args):
    done = sweep(cwd, *args, "--tracking-uri", server.uri, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_the_read_commands_say_through_the_copy_what_the_store_says(served):
    server, cwd = served
    client = server.client()
    exp_id = client.get_experiment_by_name(NAME).experiment_id
    parent = client.search_runs([exp_id], role_filter(PARENT))[0]
    names = [a.path for a in client.list_artifacts(parent.info.run_id, "read_copy")]
    assert names and all(n.startswith("read_copy/seg-") for n in names)  # through the server's artifact proxy
    # MLflow's own client: every trial run and history as before; the copy holds the same
    stored = sorted((RunRecord.of(r) for r in client.search_runs([exp_id], role_filter(TRIAL))), key=lambda r: r.run_id)
    view = open_copy(client, exp_id, RunRecord.of(client.get_run(parent.info.run_id)), scratch=cwd)
    assert len(stored) == 6 and view.live == set() and sorted(view.runs, key=lambda r: r.run_id) == stored
    keys = view.copy.segments[0].keys
    assert "val/avg/acc" in keys and "actor/entropy" in keys
    run_ids = [r.run_id for r in stored]
    pd.testing.assert_frame_equal(view.copy.history(run_ids, keys),
                                  read_history_client(client, run_ids, {r.run_id: [k for k in keys if k in r.metrics]
                                                                        for r in stored}))
    # the commands as a user types them: through the copy, and --direct
    assert _read(server, cwd, "status", NAME).stdout == _read(server, cwd, "status", NAME, "--direct").stdout
    _read(server, cwd, "report", NAME, "--out", "through")  # logged to the parent run, as by default
    _read(server, cwd, "report", NAME, "--out", "direct", "--no-log", "--direct")
    for name in ("table.md", "table.csv", "table.tex"):
        assert (cwd / "through" / name).read_bytes() == (cwd / "direct" / name).read_bytes(), name
    logged = {a.path for a in client.list_artifacts(parent.info.run_id, "report")}
    assert "report/table.md" in logged and "report/report.html" in logged
    assert "table" in client.get_run(parent.info.run_id).data.tags.get("mlflow.note.content", "")
    rebuilt = _read(server, cwd, "report", NAME, "--out", "rebuilt", "--no-log", "--rebuild")
    assert "read copy of 'copy_e2e' written anew: 6 ended trial runs" in rebuilt.stderr
    assert any(a.path.startswith("read_copy/full-") for a in client.list_artifacts(parent.info.run_id, "read_copy"))
    assert (cwd / "rebuilt" / "table.md").read_bytes() == (cwd / "direct" / "table.md").read_bytes()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_rest_reader_answers_as_mlflows_client(served, tmp_path):
    from cluster_testlib import SECRET, free_port

    from tracking_store.rest_reads import RestReader, ServerReadError

    server, _ = served
    client, reader = server.client(), RestReader(server.uri)  # the URI with credentials, as a user passes it
    exp_id = reader.get_experiment_by_name(NAME).experiment_id
    assert exp_id == client.get_experiment_by_name(NAME).experiment_id and reader.get_experiment_by_name("nope") is None
    assert reader.get_experiment(exp_id).name == NAME
    for view in (1, 3):
        mine = sorted((RunRecord.of(r) for r in reader.search_runs([exp_id], "", view, max_results=3)), key=lambda r: r.run_id)
        theirs = sorted((RunRecord.of(r) for r in client.search_runs([exp_id], "", view, max_results=3)), key=lambda r: r.run_id)
        assert len(mine) == 3 and [r.run_id for r in mine] == [r.run_id for r in theirs]  # the same order, paged alike
    page, runs = None, []
    while page is None or page.token:
        page = reader.search_runs([exp_id], role_filter(TRIAL), max_results=4, page_token=page.token if page else None)
        runs += page
    theirs = {r.info.run_id: r for r in client.search_runs([exp_id], role_filter(TRIAL))}
    assert {r.info.run_id for r in runs} == set(theirs)
    for run in runs:
        assert RunRecord.of(run) == RunRecord.of(theirs[run.info.run_id])
        assert run.info.end_time == theirs[run.info.run_id].info.end_time
    rid = runs[0].info.run_id
    assert [(m.step, m.value) for m in reader.get_metric_history(rid, "val/avg/acc")] == \
        [(m.step, m.value) for m in client.get_metric_history(rid, "val/avg/acc")]
    assert sorted((m.run_id, m.step) for m in reader.metric_history_bulk([r.info.run_id for r in runs], "val/avg/acc", 2500)) \
        == sorted((r.info.run_id, m.step) for r in runs for m in client.get_metric_history(r.info.run_id, "val/avg/acc"))
    parent = client.search_runs([exp_id], role_filter(PARENT))[0].info.run_id
    assert [a.path for a in reader.list_artifacts(parent, "spec")] == [a.path for a in client.list_artifacts(parent, "spec")]
    got = reader.download_artifacts(parent, "spec/resolved.json", str(tmp_path))
    assert open(got).read() == open(client.download_artifacts(parent, "spec/resolved.json", str(tmp_path / "x"))).read()
    # the report's writes to the parent run, over REST: what MLflow's client reads back
    from tracking_store.run_files import RestWriter, run_writer

    writer = run_writer(server.uri, parent)
    assert isinstance(writer, RestWriter)
    (tmp_path / "t.md").write_text("| a |\n")
    writer.log_files([(tmp_path / "t.md", "report/x")])
    writer.set_tag("note", "y" * 9000)
    writer.log_metrics({"curves/A": 0.25, "bad": float("nan")})
    assert [a.path for a in client.list_artifacts(parent, "report/x")] == ["report/x/t.md"]
    data = client.get_run(parent).data
    assert data.tags["note"] == "y" * 8000 and writer.tag("note") == "y" * 8000
    assert data.metrics["curves/A"] == 0.25 and "bad" not in data.metrics
    with pytest.raises(ServerReadError, match="not reachable") as err:
        RestReader(f"http://alice:{SECRET}@127.0.0.1:{free_port()}").search_runs([exp_id])
    assert SECRET not in str(err.value)
