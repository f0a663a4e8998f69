"""Built-in redactors, their composition, and what they leave alone."""

from __future__ import annotations

import pytest

from otel_toolscore.redact import (
    DEFAULT_REDACTORS,
    chain,
    redact,
    redact_api_keys,
    redact_bearer_tokens,
    redact_card_numbers,
    redact_emails,
    resolve_redactor,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("write to jane.doe+news@example.co.uk today", "write to [REDACTED_EMAIL] today"),
        ("a@b.io,c_d@sub.example.org", "[REDACTED_EMAIL],[REDACTED_EMAIL]"),
        ("no address @ here, nor foo@bar", "no address @ here, nor foo@bar"),
    ],
)
def test_emails(text: str, expected: str) -> None:
    assert redact_emails(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc123DEF456ghi789", "Authorization: Bearer [REDACTED_TOKEN]"),
        ("authorization: basic dXNlcjpwYXNzd29yZDEy==", "authorization: basic [REDACTED_TOKEN]"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.c2lnbmF0dXJlX2hlcmU", "jwt [REDACTED_TOKEN]"),
        ("the bearer responsibilities remain", "the bearer responsibilities remain"),  # prose, no digit
    ],
)
def test_bearer_tokens(text: str, expected: str) -> None:
    assert redact_bearer_tokens(text) == expected


@pytest.mark.parametrize(
    "key",
    [
        "sk-" + "a" * 20 + "1234",
        "sk-proj-" + "Ab1_" * 6,
        "sk-ant-api03-" + "x9" * 12,
        "AKIA" + "ABCDEFGHIJKLMNOP",
        "ghp_" + "a1" * 18,
        "xoxb-" + "1234567890-abcdef",
        "AIza" + "B" * 35,
        "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    ],
)
def test_api_key_shapes(key: str) -> None:
    assert redact_api_keys(f"key={key} end") == "key=[REDACTED_API_KEY] end"


def test_api_key_lookalikes_in_prose_are_kept() -> None:
    text = "ask-me-anything, sk-short, risk-management-plan"
    assert redact_api_keys(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("card 4111 1111 1111 1111 ok", "card [REDACTED_CARD] ok"),
        ("card 4111-1111-1111-1111", "card [REDACTED_CARD]"),
        ("amex 378282246310005", "amex [REDACTED_CARD]"),
        ("order 1234567890123456", "order 1234567890123456"),  # fails the Luhn check
        ("phone 555-0100, year 2026", "phone 555-0100, year 2026"),
    ],
)
def test_card_numbers(text: str, expected: str) -> None:
    assert redact_card_numbers(text) == expected


def test_redact_applies_all_builtins_and_is_idempotent() -> None:
    text = "me@example.com Bearer tok3n-abcdefghijkl sk-" + "z" * 24 + " 4111111111111111"
    once = redact(text)
    assert once == "[REDACTED_EMAIL] Bearer [REDACTED_TOKEN] [REDACTED_API_KEY] [REDACTED_CARD]"
    assert redact(once) == once


def test_redact_with_a_user_callable() -> None:
    assert redact("ssn 123-45-6789 a@b.io", extra=lambda s: s.replace("123-45-6789", "[SSN]")) == "ssn [SSN] [REDACTED_EMAIL]"
    assert redact("x", extra=[str.upper, lambda s: s + "!"]) == "X!"


def test_chain_composes_left_to_right_and_flattens() -> None:
    both = chain(DEFAULT_REDACTORS, lambda s: s.replace("Paris", "[CITY]"))
    assert both("Paris, a@b.io") == "[CITY], [REDACTED_EMAIL]"
    assert chain()("unchanged") == "unchanged"


def test_resolve_redactor_options() -> None:
    secret = "a@b.io"
    assert resolve_redactor(None)(secret) == "[REDACTED_EMAIL]"
    assert resolve_redactor(True)(secret) == "[REDACTED_EMAIL]"
    assert resolve_redactor(False)(secret) == secret
    assert resolve_redactor(str.upper)(secret) == "A@B.IO"
    assert resolve_redactor([redact_emails, str.upper])(secret) == "[REDACTED_EMAIL]"


# -- the two shapes that still reached the judge ------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "leaked"),
    [
        ("Authorization: Bearer AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx"),  # letters only, mixed case
        ('curl -H "Authorization: Bearer abcdefghijklmnopqrstuvwxyz"', "abcdefghijklmnopqrstuvwxyz"),  # header context
        ("token: Bearer ABCDEFGHIJKLMNOPQRSTUVWX", "ABCDEFGHIJKLMNOPQRSTUVWX"),
        ("use bearer abc.def-ghi_jklmnop", "abc.def-ghi_jklmnop"),  # symbols, no digit
        ('{"headers": {"authorization": "Basic dXNlcjpwYXNz"}}', "dXNlcjpwYXNz"),
    ],
)
def test_bearer_tokens_without_digits(text: str, leaked: str) -> None:
    out = redact(text)
    assert leaked not in out and "[REDACTED_" in out, out
    assert redact(out) == out


@pytest.mark.parametrize("prose", ["the bearer responsibilities remain", "Bearer Responsibilities of the trustee",
                                   "basic understanding of the problem"])
def test_bearer_prose_is_kept(prose: str) -> None:
    assert redact(prose) == prose


PASSWORDS = ["hunter2", "correct horse battery staple", 'p,ss;w"rd', "S3cr3t!{x}", "pässwörd", 918273645,
             {"value": "zebra-qx", "hint": "yak qx"}, ["gnu-qx", "emu qx2"]]


def _leaves(value: object) -> list[str]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [str(value)]


@pytest.mark.parametrize("value", PASSWORDS, ids=[f"v{i}" for i in range(len(PASSWORDS))])
def test_a_password_field_in_json_arguments_goes_whole(value: object) -> None:
    import json

    from otel_toolscore.redact import redact_secret_fields

    doc = {"user": "bob", "password": value, "nested": [{"client_secret": value, "city": "Paris"}]}
    for text in (json.dumps(doc), json.dumps(doc, ensure_ascii=False, sort_keys=True),
                 json.dumps({"arguments": json.dumps(doc)})):  # JSON inside a JSON string, as tool calls carry it
        out = redact(text)
        for leaf in _leaves(value):
            assert leaf not in out and json.dumps(leaf).strip('"') not in out, (text, out)
        assert "bob" in out and "Paris" in out, out
        assert redact(out) == out
    assert redact_secret_fields(doc) == {"user": "bob", "password": "[REDACTED_SECRET]",
                                         "nested": [{"client_secret": "[REDACTED_SECRET]", "city": "Paris"}]}


def test_quoted_secret_assignments_in_plain_text_go_whole() -> None:
    assert redact('password: "correct horse" then') == 'password: "[REDACTED_SECRET]" then'
    assert redact("api_key='two words' then") == "api_key='[REDACTED_SECRET]' then"
    assert redact("pwd=hunter2 then") == "pwd=[REDACTED_SECRET] then"


def test_the_judge_sees_neither_shape() -> None:
    from otel_toolscore.model import AgentRun, ToolCall
    from otel_toolscore.scorers.llm import build_judge_messages

    run = AgentRun(run_id="r", user_query="log me in", final_output="done", tool_calls=[
        ToolCall(name="login", call_id="c1", arguments={"user": "bob", "password": "correct horse battery staple"},
                 result="Authorization: Bearer AbCdEfGhIjKlMnOpQrStUvWx"),
    ])
    text = "\n".join(m["content"] for m in build_judge_messages(run, [], include_arguments=True, include_results=True))
    assert "horse" not in text and "AbCdEfGhIjKlMnOpQrStUvWx" not in text
    assert "[REDACTED_SECRET]" in text and "[REDACTED_TOKEN]" in text
