"""The documentation's tables (README and docs/) name every setting, every instrument and every
attribute the code writes, and the deprecated ones as such (every fact that moved to docs/
is still there)."""

from __future__ import annotations

import re

from otel_toolscore.judge import JUDGE_ENV_PREFIX, JudgeSettings
from otel_toolscore.service.settings import ServiceSettings
from otel_toolscore.settings import Settings
from otel_toolscore.telemetry import names
from tests.support.docs import all_docs
from tests.tools.prom_names import emitted_instruments

README = all_docs()


def _table_rows(name: str) -> list[str]:
    return [line for line in README.splitlines() if line.startswith("|") and f"`{name}`" in line]


def test_every_instrument_is_in_a_metrics_table() -> None:
    for name, _kind, _unit in emitted_instruments():
        assert _table_rows(name) or f"`{name}`" in README, name
    (row,) = _table_rows(names.METRIC_PENDING_TRACES_DEPRECATED)
    assert "deprecated" in row and names.METRIC_TRACE_PENDING in row


def test_every_setting_is_in_a_settings_table() -> None:
    for field in Settings.model_fields:
        assert _table_rows(Settings.env_name(field)), field
    for field in JudgeSettings.model_fields:
        short = JudgeSettings.env_name(field).removeprefix(JUDGE_ENV_PREFIX)
        assert any(re.search(rf"`{short}`", row) for row in README.splitlines() if row.startswith("|")), short
    for field in ServiceSettings.model_fields:
        env = ServiceSettings.env_name(field)
        suffix = env.removeprefix("OTEL_TOOLSCORE_SERVICE")
        assert _table_rows(env) or any(f"`{suffix}`" in row or f"`{env}`" in row
                                       for row in README.splitlines() if row.startswith("|")), env


def test_every_renamed_setting_is_documented_as_deprecated() -> None:
    for model in (Settings, JudgeSettings, ServiceSettings):
        for old in model.renamed_to_ms:
            assert old.upper() in README, old


def test_every_name_the_code_writes_is_documented() -> None:
    """Attribute, event, metric, reason and outcome names (``telemetry/names.py``): each appears in
    the README or docs/."""
    missing = []
    for key, value in vars(names).items():
        if key.startswith("_") or not key.isupper():
            continue
        for item in value if isinstance(value, (tuple, frozenset, list)) else (value,):
            if isinstance(item, str) and item not in README:
                missing.append(f"{key}={item}")
    assert not missing, missing
