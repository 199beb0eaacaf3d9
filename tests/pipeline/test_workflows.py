"""The GitHub workflows cannot run here; this checks that they call what exists: .ci/run, the
Makefile's targets and variables, and the html folder that the pipeline writes."""

import re
import shlex
from pathlib import Path

import pytest
import yaml

from infonce_book.pipeline import run as pipeline

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"


def _load(name):
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the key `on` as True.
    data["on"] = data.pop(True, data.get("on"))
    return data


def _steps(workflow):
    return [s for job in workflow["jobs"].values() for s in job.get("steps", [])]


def _makefile_targets():
    return set(re.findall(r"^([A-Za-z0-9_.-]+):(?!=)", (ROOT / "Makefile").read_text(), flags=re.M))


def _make_commands(steps):
    """(target, {VAR: value}) for every `make ...` line of the steps' run scripts."""
    out = []
    for s in steps:
        for line in s.get("run", "").splitlines():
            words = shlex.split(line)
            if words[:1] == ["make"]:
                targets = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
                assigns = dict(w.split("=", 1) for w in words[1:] if "=" in w)
                out += [(t, assigns) for t in targets]
    return out


def _uses(steps, action):
    return [s for s in steps if str(s.get("uses", "")).split("@")[0] == action]


def test_ci_workflow_runs_the_ci_script_on_ubuntu_with_python_3_11():
    wf = _load("ci.yml")
    assert {"push", "pull_request"} <= set(wf["on"])
    job = next(iter(wf["jobs"].values()))
    assert job["runs-on"].startswith("ubuntu")
    steps = _steps(wf)
    assert _uses(steps, "actions/checkout")
    assert [s["with"]["python-version"] for s in _uses(steps, "actions/setup-python")] == ["3.11"]
    runs = [s["run"].strip() for s in steps if "run" in s]
    assert runs == ["bash .ci/run"]
    assert (ROOT / ".ci" / "run").is_file()
    assert job.get("timeout-minutes", 360) >= 90  # .ci/run must finish within 90 minutes


def test_ci_script_installs_the_browser_and_runs_make_test():
    script = (ROOT / ".ci" / "run").read_text()
    lines = [ln.strip() for ln in script.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    make_lines = [ln for ln in lines if ln.startswith("make ")]
    assert make_lines == ["make browser-deps", "make tex-deps", "make test"]
    assert {"browser-deps", "tex-deps", "test"} <= _makefile_targets()


def test_pages_workflow_builds_the_book_and_deploys_the_html_the_pipeline_writes():
    wf = _load("pages.yml")
    steps = _steps(wf)
    makes = _make_commands(steps)
    assert makes and all(t in _makefile_targets() for t, _ in makes), makes
    assert ("book", {"PROFILE": "standard"}) in makes or ("book", {"PROFILE": "smoke"}) in makes
    for _, assigns in makes:
        assert set(assigns) <= {"PROFILE", "DEVICE", "SEED", "TORCH", "PYTHON"}
        if "PROFILE" in assigns:
            assert assigns["PROFILE"] in ("smoke", "standard", "full")
    upload = _uses(steps, "actions/upload-pages-artifact")
    assert len(upload) == 1
    expected = pipeline.html_dir(ROOT / "_build").relative_to(ROOT).as_posix()
    assert upload[0]["with"]["path"] == expected == "_build/html"
    assert _uses(steps, "actions/deploy-pages")
    assert wf["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    assert [s["with"]["python-version"] for s in _uses(steps, "actions/setup-python")] == ["3.11"]


def test_makefile_variables_used_by_the_workflows_exist():
    makefile = (ROOT / "Makefile").read_text()
    for var in ("PROFILE", "DEVICE", "SEED", "TORCH"):
        assert re.search(rf"^{var} \?=", makefile, flags=re.M), var


@pytest.mark.parametrize("name", ["ci.yml", "pages.yml"])
def test_workflows_use_pinned_major_versions_of_actions(name):
    for s in _steps(_load(name)):
        if "uses" in s:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+", s["uses"]), s["uses"]
