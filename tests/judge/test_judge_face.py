"""The judge's public face (``otel_toolscore.judge``) and the import paths it replaced.

Every public name resolves from the face in a fresh interpreter; the old ``otel_toolscore.online``
paths and the package root hand out the very same objects; the sampler loads without pydantic or
the LLM scorer; the judge's modules import nothing from the span processor's package.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import otel_toolscore
import otel_toolscore.judge as judge_face

JUDGE_DIR = Path(otel_toolscore.__file__).resolve().parent / "judge"

OLD_PATHS = {
    "otel_toolscore.online.judge": ("Judge", "JudgeAttempt", "JudgeStats", "judge_from_env"),
    "otel_toolscore.online.sampler": (
        "JudgeSampler", "Reservation", "RollingLimit", "SequenceMemory", "TokenBudget", "ratio_threshold",
        "trace_id_in_ratio",
    ),
    "otel_toolscore.online.judge_settings": ("JUDGE_ENV_PREFIX", "JudgeSettings", "load_tools_file"),
}


def _fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return out.stdout.strip()


def test_every_name_of_the_face_resolves_in_a_fresh_interpreter() -> None:
    code = (
        "import otel_toolscore.judge as face\n"
        "for name in face.__all__:\n"
        "    value = getattr(face, name)\n"
        "    assert vars(face)[name] is value, name\n"
        "print(len(face.__all__))\n"
    )
    assert _fresh(code) == str(len(judge_face.__all__))


def test_the_old_paths_and_the_root_hand_out_the_same_objects() -> None:
    face_names = set(judge_face.__all__)
    for path, names in OLD_PATHS.items():
        module = importlib.import_module(path)
        assert sorted(module.__all__) == sorted(names), path
        for name in names:
            assert name in face_names, name
            assert getattr(module, name) is getattr(judge_face, name), (path, name)
    for name in ("Judge", "JudgeSampler", "JudgeSettings", "JudgeStats", "judge_from_env"):
        assert getattr(otel_toolscore, name) is getattr(judge_face, name), name


def test_the_sampler_loads_neither_pydantic_nor_the_llm_scorer() -> None:
    code = (
        "import sys\n"
        "from otel_toolscore.judge import JudgeSampler\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'openai', 'otel_toolscore.scorers.llm'))))\n"
    )
    assert _fresh(code) == "[]"


def test_the_judge_imports_nothing_from_the_span_processors_package() -> None:
    for path in sorted(JUDGE_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                target = "." * node.level + (node.module or "")
                assert not target.startswith(("..online", "otel_toolscore.online")), (path.name, target)
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("otel_toolscore.online") for a in node.names), path.name
