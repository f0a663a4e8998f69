"""The package as a user installs it: the wheel ``make dist`` builds, installed into a fresh venv that
has no dev tools, with its dependencies from the machine's configured package sources.

From that venv (working directory outside the repository, no ``PYTHONPATH``) the tests run
``otel-toolscore --help`` and ``python -m otel_toolscore --help``, the demo, and the README's minimal
example as written (it prints its scores; no collector needed). The wheel is built as ``make dist`` builds
it (``python -m build``: an sdist, then the wheel from that sdist) from a copy of the files git
tracks or would track, so a file the build needs but the repository lacks fails here. A second build
uses only what ``deploy/Dockerfile`` copies into the image before its ``pip install .``.

pip in the fresh venv reads the same configuration as the dev venv's pip (the user and global
pip.conf files and the ``PIP_*`` variables are inherited; nothing is written). The interpreter the
venv is made from is this one, or ``TOOLSCORE_INSTALL_PYTHON`` (to try another Python version).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from otel_toolscore._version import __version__
from tests.support.docs import code_blocks

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT_S = 900
RUN_TIMEOUT_S = 120
#: Importable in the dev venv, never in a user's install.
DEV_TOOLS = ("pytest", "ruff", "mypy", "hypothesis", "build")
#: Variables that would make the fresh venv see this checkout or the dev venv, or send traffic away.
SCRUBBED_PREFIXES = ("OTEL_", "OPENAI_", "LANGFUSE_", "PHOENIX_")
SCRUBBED = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV", "PIP_USER", "PIP_TARGET")

pytestmark = pytest.mark.timeout(INSTALL_TIMEOUT_S + 300)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED and not k.startswith(SCRUBBED_PREFIXES)}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def _run(args: list[str], *, cwd: Path, timeout: float = RUN_TIMEOUT_S, **env: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=_env(**env), capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}\n--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
    return done


def _source_copy(dest: Path) -> Path:
    """The files a fresh clone has (tracked, plus new files git does not ignore), copied to ``dest``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True, timeout=60,
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():  # a tracked file deleted in the work tree is skipped
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


@dataclass(frozen=True)
class Installed:
    venv: Path
    python: Path
    cli: Path
    wheel: Path
    sdist: Path
    workdir: Path  # outside the repository: nothing imports from the checkout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    tmp = tmp_path_factory.mktemp("install")
    src = _source_copy(tmp / "src")
    dist = tmp / "dist"
    _run([sys.executable, "-m", "build", "--outdir", str(dist), str(src)], cwd=tmp, timeout=INSTALL_TIMEOUT_S)
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    assert wheel.name == f"otel_toolscore-{__version__}-py3-none-any.whl"

    venv = tmp / "venv"
    base = os.environ.get("TOOLSCORE_INSTALL_PYTHON") or sys.executable
    _run([base, "-m", "venv", str(venv)], cwd=tmp)
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", str(wheel)], cwd=tmp, timeout=INSTALL_TIMEOUT_S)
    workdir = tmp / "work"
    workdir.mkdir()
    return Installed(venv, python, venv / "bin" / "otel-toolscore", wheel, sdist, workdir)


def test_the_install_has_no_dev_tools_and_imports_from_the_venv(installed: Installed) -> None:
    probe = textwrap.dedent(
        f"""
        import importlib.util, otel_toolscore
        print(otel_toolscore.__file__)
        print(otel_toolscore.__version__)
        print(",".join(m for m in {DEV_TOOLS!r} if importlib.util.find_spec(m) is not None))
        """
    )
    where, version, dev_tools = _run([str(installed.python), "-c", probe], cwd=installed.workdir).stdout.splitlines()
    assert Path(where).is_relative_to(installed.venv)
    assert version == __version__
    assert dev_tools == ""


def test_the_distributions_hold_the_licence_and_changelog_and_no_tests(installed: Installed) -> None:
    with tarfile.open(installed.sdist) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml", "otel_toolscore/__main__.py"} <= names
    assert not any(n.startswith("tests/") for n in names)
    with zipfile.ZipFile(installed.wheel) as wheel:
        files = set(wheel.namelist())
    assert f"otel_toolscore-{__version__}.dist-info/licenses/LICENSE" in files
    assert "otel_toolscore/py.typed" in files
    assert all(f.startswith(("otel_toolscore/", f"otel_toolscore-{__version__}.dist-info/")) for f in files), files


def test_every_module_of_the_install_imports(installed: Installed) -> None:
    """Each module imports on this Python with only the base dependencies (optional ones are imported
    inside functions, behind an ImportError handler)."""
    probe = textwrap.dedent(
        """
        import importlib, pkgutil, otel_toolscore
        names = [m.name for m in pkgutil.walk_packages(otel_toolscore.__path__, "otel_toolscore.")]
        for name in names:
            importlib.import_module(name)
        print(len(names))
        """
    )
    count = int(_run([str(installed.python), "-c", probe], cwd=installed.workdir).stdout)
    assert count == len([p for p in (ROOT / "otel_toolscore").rglob("*.py") if p.name != "__init__.py"]) + len(
        [p for p in (ROOT / "otel_toolscore").rglob("__init__.py") if p.parent != ROOT / "otel_toolscore"]
    )


def test_otel_toolscore_help_from_the_script_and_python_m(installed: Installed) -> None:
    script = _run([str(installed.cli), "--help"], cwd=installed.workdir).stdout
    module = _run([str(installed.python), "-m", "otel_toolscore", "--help"], cwd=installed.workdir).stdout
    assert script == module
    for command in ("extract", "score", "serve", "demo", "judge-check"):
        assert re.search(rf"^\s+{command}\s", script, re.M), script
    version = _run([str(installed.python), "-m", "otel_toolscore", "--version"], cwd=installed.workdir).stdout
    assert version.strip() == f"otel-toolscore {__version__}"


def test_the_demo_runs_from_the_install(installed: Installed) -> None:
    out = _run([str(installed.cli), "demo"], cwd=installed.workdir).stdout
    assert "pass" in out and "fail" in out, out


def test_the_calibration_set_ships_as_package_data(installed: Installed) -> None:
    listed = _run([str(installed.cli), "judge-check", "--list"], cwd=installed.workdir).stdout
    assert len(re.findall(r"expected \d\.\d\d", listed)) >= 40, listed


def test_the_readme_minimal_example_runs_from_the_install(installed: Installed) -> None:
    """The README's minimal example, as written, with the installed package (no checkout on the path)."""
    blocks = code_blocks("minimal example")
    code = next(body for lang, body in blocks if lang == "python")
    shown = next(body for lang, body in blocks if lang == "")
    example = installed.workdir / "readme_example.py"
    example.write_text(code, encoding="utf-8")
    out = _run([str(installed.python), str(example)], cwd=installed.workdir)
    assert sorted(out.stdout.splitlines()) == sorted(shown.splitlines())
    assert out.stderr == "", out.stderr


def test_the_docker_build_context_builds_a_wheel(tmp_path: Path) -> None:
    """``deploy/Dockerfile`` runs ``pip install .`` on the files it copied first: those alone build."""
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    stage = tmp_path / "app"
    stage.mkdir()
    for line in dockerfile.splitlines():
        if re.match(r"RUN .*pip install", line):
            break
        if line.startswith("COPY "):
            *sources, dest = line.split()[1:]
            assert not any(s.startswith("--") for s in sources), line
            for source in sources:
                target = stage / dest / Path(source).name if dest.endswith("/") else stage / dest
                if (ROOT / source).is_dir():
                    shutil.copytree(ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(ROOT / source, target)
    else:
        raise AssertionError("deploy/Dockerfile has no RUN ... pip install line")
    out = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(stage)], cwd=tmp_path,
         timeout=INSTALL_TIMEOUT_S)
    assert [w.name for w in out.glob("*.whl")] == [f"otel_toolscore-{__version__}-py3-none-any.whl"]
