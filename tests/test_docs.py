"""The documentation: the README is a short front door, `docs/` a MkDocs site that builds strictly.

* `mkdocs build --strict` succeeds (mkdocs.yml: broken links and anchors, links MkDocs cannot resolve
  and pages missing from the nav are warnings, and strict mode fails on any warning), into a directory
  under the repository (pytest's tmp_path is under .cache/pytest, see tests/conftest.py);
* README.md is at most 15,000 bytes and every relative link in it reaches an existing file, and the
  heading its anchor names (as GitHub and MkDocs spell heading ids);
* every page under docs/ is in the nav, and every shipped spec has its section in the results page;
* what a user types is what runs: the README's two commands are the ones `.ci/run` and the main-command
  test run, and main.sh runs the sweep the README names;
* every repository path the README and the docs name in backticks exists.
"""

from __future__ import annotations

import pytest
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import markdown
import yaml

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CODE_BLOCK = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
INDENTED_CODE = re.compile(r"^(?: {4}|\t).*$", re.M)
CODE_SPAN = re.compile(r"`[^`\n]+`")
# Backticked paths under these top-level folders must exist (a placeholder such as <x> is skipped).
REPO_PATH = re.compile(r"`((?:sweeps|trainers|trial_eval|evaluators|policy|dashboards|contract|configs|scripts|benchmarks|tests)"
                       r"/[A-Za-z0-9_./-]*)`")


def _prose(text: str) -> str:
    """Markdown without its code blocks (links in code are not links)."""
    return INDENTED_CODE.sub("", CODE_BLOCK.sub("", text))


def _heading_ids(path: Path) -> set[str]:
    """The ids MkDocs gives the page's headings (Python-Markdown's toc), and GitHub's spelling of them."""
    md = markdown.Markdown(extensions=["toc", "tables", "fenced_code"])
    md.convert(path.read_text(encoding="utf-8"))
    ids: set[str] = set()

    def walk(tokens):
        for token in tokens:
            ids.add(token["id"])
            ids.add(_github_slug(token["name"]))
            walk(token["children"])

    walk(md.toc_tokens)
    return ids


def _github_slug(name: str) -> str:
    text = unicodedata.normalize("NFKD", re.sub(r"<[^>]+>", "", name)).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _nav_pages(nav) -> list[str]:
    pages: list[str] = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def _mkdocs_config() -> dict:
    return yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path):
    site = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                             str(REPO / "mkdocs.yml"), "--site-dir", str(site)],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    for page in _nav_pages(_mkdocs_config()["nav"]):
        assert (site / page).with_suffix(".html").is_file(), page


def test_mkdocs_config_is_strict():
    config = _mkdocs_config()
    assert config["strict"] is True
    assert config["theme"]["name"] in ("mkdocs", "readthedocs")
    assert set(config.get("plugins", [])) <= {"search"}  # nothing that needs the network or an extra package
    validation = config["validation"]
    assert validation["nav"]["omitted_files"] == validation["nav"]["not_found"] == "warn"
    assert all(validation["links"][k] == "warn" for k in ("not_found", "anchors", "unrecognized_links"))


def test_every_docs_page_is_in_the_nav():
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    nav = _nav_pages(_mkdocs_config()["nav"])
    assert len(nav) == len(set(nav)), nav
    assert pages == set(nav), f"not in the nav: {sorted(pages - set(nav))}; missing files: {sorted(set(nav) - pages)}"


def test_readme_is_a_front_door():
    size = README.stat().st_size
    assert size <= 15_000, f"README.md is {size} bytes; move reference material into docs/"


def test_readme_relative_links_resolve():
    links = LINK.findall(_prose(README.read_text(encoding="utf-8")))
    assert links, "the README links to the docs"
    for link in links:
        if re.match(r"[a-z][a-z0-9+.-]*:", link):  # https:, mailto: ...
            continue
        target, _, anchor = link.partition("#")
        path = (README.parent / target).resolve() if target else README
        assert path.is_relative_to(REPO) and path.exists(), f"README link {link}: no {path}"
        if anchor:
            assert path.suffix == ".md", f"README link {link}: an anchor into a non-Markdown file"
            assert anchor in _heading_ids(path), f"README link {link}: no heading with id {anchor!r} in {target}"


def test_readme_links_every_docs_page():
    text = README.read_text(encoding="utf-8")
    linked = {link.partition("#")[0] for link in LINK.findall(_prose(text))}
    for page in DOCS.rglob("*.md"):
        assert f"docs/{page.relative_to(DOCS).as_posix()}" in linked, page


def test_the_documented_commands_are_the_ones_that_run():
    """The README's two commands are what CI (.ci/run) and the main-command test run, and main.sh runs
    the sweep the README shows."""
    readme = README.read_text(encoding="utf-8")
    rows = [line for line in readme.splitlines() if line.startswith("| ") and line.rstrip().endswith("` |")]
    commands = {re.findall(r"`([^`]+)` \|$", row.rstrip())[0] for row in rows if re.search(r"`bash scripts/", row)}
    assert commands == {"bash scripts/main.sh", "bash scripts/test.sh"}, commands
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert ci == ["bash scripts/test.sh"], ci
    main_test = (REPO / "tests" / "test_main_command.py").read_text()
    assert '["bash", "scripts/main.sh", "--smoke"]' in main_test
    assert "`bash scripts/main.sh --smoke`" in readme
    main_sh = (REPO / "scripts" / "main.sh").read_text()
    assert "sweep run dhpo_vs_baselines.yaml" in main_sh and "    sweep run dhpo_vs_baselines.yaml\n" in readme
    test_sh = (REPO / "scripts" / "test.sh").read_text()
    assert "python -m pytest" in test_sh


def test_every_shipped_spec_is_documented():
    spec_page = (DOCS / "spec.md").read_text(encoding="utf-8")
    results = (DOCS / "results.md").read_text(encoding="utf-8")
    headings = re.findall(r"^##+ (.+)$", results, re.M)
    for spec in sorted((REPO / "configs" / "sweeps").glob("*.yaml")):
        assert f"`{spec.name}`" in spec_page, f"{spec.name}: not in docs/spec.md's table of shipped specs"
        assert any(h.startswith(spec.name) for h in headings), f"{spec.name}: no section in docs/results.md"


def test_named_repository_paths_exist():
    for page in [README, *sorted(DOCS.rglob("*.md"))]:
        for path in REPO_PATH.findall(page.read_text(encoding="utf-8")):
            if any(c in path for c in "<>*") or "..." in path:
                continue
            assert (REPO / path.rstrip("/")).exists(), f"{page.relative_to(REPO)} names {path}, which does not exist"


def test_the_kuberay_manifest_runs_a_sweep_on_the_cluster_with_the_run_dir_on_every_pod():
    """docs/clusters.md's RayJob (not run anywhere: no Kubernetes here): a ray.io/v1 RayJob whose entrypoint is a
    `sweep run` joining its own cluster, the run directory mounted in the head and every worker group."""
    text = (REPO / "docs" / "clusters.md").read_text(encoding="utf-8")
    section = text.split("\n## Kubernetes (KubeRay)\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```yaml\n(.*?)```", section, re.S)
    job = yaml.safe_load(block)
    assert (job["apiVersion"], job["kind"]) == ("ray.io/v1", "RayJob")
    words = job["spec"]["entrypoint"].split()
    assert words[:2] == ["sweep", "run"] and "--address" in words and words[words.index("--address") + 1] == "auto"
    run_dir = words[words.index("--run-dir") + 1]
    assert job["spec"]["shutdownAfterJobFinishes"] is True
    cluster = job["spec"]["rayClusterSpec"]
    pods = [cluster["headGroupSpec"]["template"]["spec"]] + [g["template"]["spec"] for g in cluster["workerGroupSpecs"]]
    for pod in pods:
        mounted = [m["mountPath"] for c in pod["containers"] for m in c.get("volumeMounts", [])]
        assert any(run_dir.startswith(path) for path in mounted), (run_dir, mounted)
