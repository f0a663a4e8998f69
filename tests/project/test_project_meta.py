"""Project metadata that must agree across files: the version (written once), the image tag the
Kubernetes manifest deploys, the changelog, the licence, the README's install lines and the package
URLs; and ``python -m otel_toolscore`` runs the command line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

import otel_toolscore
from otel_toolscore import _version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
VERSION = _version.__version__


def _project() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_the_version_is_written_once() -> None:
    data = _project()
    assert "version" not in data["project"] and "version" in data["project"]["dynamic"]
    assert data["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "otel_toolscore._version.__version__"}
    assert otel_toolscore.__version__ == VERSION
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.dev\d+)?", VERSION)
    assignments = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "otel_toolscore").rglob("*.py")
        if re.search(r"^__version__\s*=", p.read_text(encoding="utf-8"), re.M)
    ]
    assert assignments == ["otel_toolscore/_version.py"]


def test_the_kubernetes_manifest_deploys_the_image_of_this_version() -> None:
    images = [
        container["image"]
        for doc in yaml.safe_load_all((ROOT / "deploy" / "k8s" / "toolscore.yaml").read_text(encoding="utf-8"))
        if doc and doc.get("kind") == "Deployment"
        for container in doc["spec"]["template"]["spec"]["containers"]
    ]
    assert images == [f"otel-toolscore:{VERSION}"]
    # `make image` builds that tag, and the `local` one docker-compose.yaml uses
    compose = yaml.safe_load((ROOT / "deploy" / "docker-compose.yaml").read_text(encoding="utf-8"))
    assert compose["x-toolscore-image"]["image"] == "otel-toolscore:local"
    make = subprocess.run(["make", "-n", "image"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    assert f"-t otel-toolscore:{VERSION} -t otel-toolscore:local" in make.stdout
    readme = (ROOT / "deploy" / "README.md").read_text(encoding="utf-8")
    assert "make image" in readme and "toolscore.yaml" in readme


def test_the_changelog_has_this_release_and_the_next() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert headings[:2] == ["Unreleased", VERSION], headings
    assert re.search(rf"^## \[{re.escape(VERSION)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, re.M)
    for version in headings:  # every heading has its link reference
        assert re.search(rf"^\[{re.escape(version)}\]: \S+$", text, re.M), version


def test_license_file_and_metadata_say_apache_2() -> None:
    project = _project()["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert not any(c.startswith("License ::") for c in project["classifiers"])  # PEP 639: the expression only


def test_readme_install_lines_use_the_project_urls_and_extras() -> None:
    project = _project()["project"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    repository = project["urls"]["Repository"]
    assert f'"otel-toolscore @ git+{repository}"' in readme
    assert ".invalid" in repository  # a placeholder until there is a published repository
    for extra in project["optional-dependencies"]:
        assert f"`[{extra}]`" in readme, extra
    assert "make dist" in readme
    classifiers = [c.rsplit(" :: ", 1)[1] for c in project["classifiers"] if re.match(r"Programming Language :: Python :: 3\.\d+$", c)]
    assert classifiers and project["requires-python"] == f">={classifiers[0]}"


def test_python_m_otel_toolscore_runs_the_command_line() -> None:
    out = subprocess.run([sys.executable, "-m", "otel_toolscore", "--version"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=False)
    assert out.returncode == 0 and out.stdout.strip() == f"otel-toolscore {VERSION}", out
    out = subprocess.run([sys.executable, "-m", "otel_toolscore"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, check=False)
    assert out.returncode == 2 and "usage: otel-toolscore" in out.stdout  # no command: help, usage error


#: Package download hosts: the repository takes packages from the machine's configured sources only
#: (pip's configuration, npm's registry setting, apt's sources), so none of them is written anywhere.
PACKAGE_HOSTS = re.compile(r"pypi\.org|files\.pythonhosted|registry\.npmjs|deb\.debian\.org|github\.com/[^ ]*/releases")


def test_no_file_names_a_package_host() -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True, timeout=60,
    ).stdout.decode().split("\0")
    hits = []
    for name in filter(None, listed):
        path = ROOT / name
        if not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        hits += [f"{name}: {m.group(0)}" for m in PACKAGE_HOSTS.finditer(text)]
        if path.name == "package-lock.json":  # npm ci would fetch a recorded address, not the configured registry
            assert '"resolved":' not in text, name
    assert not hits, hits
