"""The run directory's layout is spelled once, in contract/run_layout.py: its paths for a sample run dir
(what is on disk: resume of earlier runs depends on every name), the inverses a Ray worker uses
(``SweepLayout.of_scratch`` ...), the helpers that now go through it, and a check that no module of
sweeps/, dashboards/ or trial_eval/ spells one of its names as a path literal again."""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path, PurePosixPath

import pytest

from contract.run_layout import ATTEMPT_PREFIX, RAY_ATTEMPT_FORMAT, STEP_FILE, TRIAL_FILE, RunLayout, SweepLayout

REPO = Path(__file__).resolve().parents[2]
RUN = RunLayout(Path("/r"))
SWEEP = RUN.sweep("grid")
URI = "sqlite:////r/mlflow.db"
DIGEST = hashlib.sha1(URI.encode()).hexdigest()[:12]

# Every public path of the layout for run dir /r, sweep grid, trial grpo.s0: the on-disk contract.
EXPECTED = {
    "store": (RUN.store, "/r/mlflow.db"),
    "artifacts": (RUN.artifacts, "/r/mlartifacts"),
    "locks": (RUN.locks, "/r/.locks"),
    "store_lock": (RUN.store_lock, "/r/.locks/mlflow-store.lock"),
    "ray_temp": (RUN.ray_temp, "/r/.ray"),
    "cache": (RUN.cache("huggingface"), "/r/.cache/huggingface"),
    "logs": (RUN.logs, "/r/logs"),
    "ui_log": (RUN.ui_log, "/r/logs/mlflow-ui.log"),
    "eval_dir": (RUN.eval_dir, "/r/eval"),
    "checkpoint_eval_dir": (RUN.checkpoint_eval_dir("ckpt-1a2b3c4d", 7), "/r/eval/ckpt-1a2b3c4d/step_7"),
    "eval_download": (RUN.eval_download("run1"), "/r/eval/.downloads/run1"),
    "dir": (SWEEP.dir, "/r/grid"),
    "lock": (SWEEP.lock, "/r/.locks/grid.lock"),
    "ray_results": (SWEEP.ray_results, "/r/grid/ray_results"),
    "scratch": (SWEEP.scratch, "/r/grid/scratch"),
    "note": (SWEEP.note("grpo.s0"), "/r/grid/scratch/grpo.s0.note"),
    "stall_marker": (SWEEP.stall_marker("grpo.s0"), "/r/grid/scratch/grpo.s0.stalled"),
    "trials": (SWEEP.trials, "/r/grid/trials"),
    "trial_dir": (SWEEP.trial_dir("grpo.s0"), "/r/grid/trials/grpo.s0"),
    "trial_eval_dir": (SWEEP.trial_eval_dir("grpo.s0", 200), "/r/grid/trials/grpo.s0/eval/step_200"),
    "base_eval": (SWEEP.base_eval, "/r/grid/base_eval"),
    "journal": (SWEEP.journal(URI), f"/r/grid/tracking/journal-{DIGEST}.jsonl"),
    "report": (SWEEP.report, "/r/grid/report"),
}
# Parts of those paths that are the sample's own values, not names of the layout.
SAMPLE_PARTS = {"grid", "grid.lock", "grpo.s0", "grpo.s0.note", "grpo.s0.stalled", "huggingface", "ckpt-1a2b3c4d",
                "step_7", "step_200", "run1", f"journal-{DIGEST}.jsonl"}
# Layout names a module may still spell: `.cache` also names the working directory's cache
# (dashboards/figures/static.py, verl's cache_dir), which is not the run directory's.
SHARED_NAMES = {".cache"}
NAMES = {part for path, _ in EXPECTED.values() for part in path.relative_to("/r").parts} - SAMPLE_PARTS - SHARED_NAMES
FILE_PATTERNS = ((".lock", ".note", ".stalled"), ("journal-", "step_"))  # f-string file names: suffixes, prefixes
PACKAGES = ("sweeps", "dashboards", "trial_eval")
NOT_PATHS = {"run", "name", "sweep", "step_files"}  # not one path under the run dir (step_files: a glob, tested below)


def test_every_path_of_a_sample_run_dir():
    assert {k: str(path) for k, (path, _) in EXPECTED.items()} == {k: want for k, (_, want) in EXPECTED.items()}


def test_every_public_path_is_checked_above():
    public = {n for cls in (RunLayout, SweepLayout) for n in vars(cls) if not n.startswith(("_", "of_"))}
    assert public - NOT_PATHS == set(EXPECTED), "add the new path to EXPECTED (and to the module docstring's tree)"


def test_file_names_in_checkpoints_and_ray_results(tmp_path):
    assert (STEP_FILE, TRIAL_FILE, ATTEMPT_PREFIX) == ("STEP", "trial.json", "trial-")
    assert RAY_ATTEMPT_FORMAT == "attempt-%Y%m%d-%H%M%S"
    sweep = RunLayout(tmp_path).sweep("grid")
    ckpt = sweep.ray_results / "attempt-20260101-000000" / "grpo.s0" / "checkpoint_000004"
    other = sweep.ray_results / "attempt-20260101-000000" / "gspo.s0" / "checkpoint_000004"
    for d in (ckpt, other):
        d.mkdir(parents=True)
        (d / STEP_FILE).write_text("4")
    assert sweep.step_files("grpo.s0") == [ckpt / "STEP"]


def test_layouts_are_values():
    assert RunLayout("/r") == RUN and RunLayout("/r").sweep("grid") == SWEEP and hash(SWEEP) == hash(RUN.sweep("grid"))
    assert isinstance(RunLayout("/r").dir, Path)
    with pytest.raises(AttributeError):
        SWEEP.name = "other"  # frozen


@pytest.mark.parametrize("run_dir", ["/r", "runs", "/abs/runs with space"])
def test_a_worker_rebuilds_the_layout_from_the_path_it_is_given(run_dir):
    sweep = RunLayout(Path(run_dir)).sweep("grid")
    assert SweepLayout.of_dir(sweep.dir) == sweep
    assert SweepLayout.of_scratch(sweep.scratch) == sweep
    assert SweepLayout.of_scratch(str(sweep.scratch)) == sweep  # the payload carries a str
    assert SweepLayout.of_ray_results(sweep.ray_results) == sweep
    assert SweepLayout.of_scratch(sweep.scratch).base_eval == Path(run_dir) / "grid" / "base_eval"


@pytest.mark.parametrize("of, path", [(SweepLayout.of_scratch, "/r/grid"), (SweepLayout.of_scratch, "/r/grid/tmp"),
                                      (SweepLayout.of_ray_results, "/r/grid/scratch")])
def test_a_path_that_is_not_that_directory_is_refused(of, path):
    with pytest.raises(ValueError, match="is not a sweep's"):
        of(path)


def test_the_helpers_that_go_through_it_give_the_paths_they_gave_before(tmp_path):
    """What the driver, the trial workers and the commands used to spell by hand, byte for byte."""
    from tracking_store.uri import default_uri
    from sweeps.tracking.writer import journal_path

    scratch = tmp_path / "runs" / "grid" / "scratch"
    assert SweepLayout.of_scratch(str(scratch)).trial_dir("grpo.s0") == scratch.parent / "trials" / "grpo.s0"
    assert SweepLayout.of_scratch(scratch).stall_marker("grpo.s0") == scratch / "grpo.s0.stalled"
    assert SweepLayout.of_scratch(scratch).note("grpo.s0") == scratch / "grpo.s0.note"
    assert journal_path(scratch.parent, URI) == scratch.parent / "tracking" / f"journal-{DIGEST}.jsonl"
    assert default_uri(tmp_path / "runs") == f"sqlite:///{(tmp_path / 'runs' / 'mlflow.db').resolve()}"


def test_the_store_lock_lives_beside_the_sqlite_file(tmp_path):
    from tracking_store.client import store_lock

    lock = store_lock(f"sqlite:///{tmp_path / 'elsewhere' / 'mlflow.db'}")
    assert Path(lock.lock_file) == (tmp_path / "elsewhere" / ".locks" / "mlflow-store.lock").resolve()
    assert (tmp_path / "elsewhere" / ".locks").is_dir()


# -- no module spells the layout by hand ----------------------------------------------------------------------


def _is_path_call(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name in ("Path", "PurePath", "PurePosixPath")


def _spells_a_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if NAMES & set(PurePosixPath(node.value).parts):
            return repr(node.value)
    elif isinstance(node, ast.JoinedStr):
        parts = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        text = "".join(parts)
        if any(p.endswith(FILE_PATTERNS[0]) or p.startswith(FILE_PATTERNS[1]) for p in parts) \
                or NAMES & set(PurePosixPath(text).parts):
            return "f" + repr(text)
    return None


def layout_literals(path: Path) -> list[str]:
    """'file:line: literal' of each layout name spelled as a path: the right side of ``/`` or an argument of
    ``Path(...)`` (a string, or an f-string naming a lock, note, stall marker, journal or step directory)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    where = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            candidates = [node.right]
        elif _is_path_call(node):
            candidates = list(node.args)
        else:
            continue
        found += [f"{where}:{node.lineno}: {hit}" for c in candidates if (hit := _spells_a_name(c))]
    return found


def test_the_names_checked():
    assert NAMES == {"mlflow.db", "mlartifacts", ".locks", "mlflow-store.lock", ".ray", "logs", "mlflow-ui.log",
                     "eval", ".downloads", "ray_results", "scratch", "trials", "base_eval", "tracking", "report"}


def test_no_layout_path_literal_outside_the_layout():
    files = [p for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py"))]
    assert len(files) > 40
    offenders = [hit for p in files for hit in layout_literals(p)]
    assert not offenders, "use contract/run_layout.py (RunLayout, SweepLayout) instead of:\n" + "\n".join(offenders)


def test_the_check_sees_path_literals_and_f_string_file_names(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('"""Docs may say <run dir>/<sweep>/ray_results."""\n'
                      'a = run_dir / name / "ray_results"\n'
                      'b = run_dir / ".locks" / f"{name}.lock"\n'
                      'c = Path("logs") / "mlflow-ui.log"\n'
                      'd = storage / "eval" / f"step_{step}"\n'
                      'e = f"sqlite:///{root / \'mlflow.db\'}"\n'
                      'f = out / "report.html"\n'
                      'g = {"report": 1, "trials": 2}\n'
                      'h = results_dir / f"{name}.jsonl"\n'
                      'i = Path.cwd() / ".cache" / "matplotlib"\n')
    hits = [h.split(": ", 1)[1] for h in layout_literals(sample)]
    assert sorted(hits) == sorted(["'ray_results'", "'.locks'", "f'.lock'", "'logs'", "'mlflow-ui.log'", "'eval'",
                                   "f'step_'", "'mlflow.db'"])
