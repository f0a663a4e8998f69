"""Redaction of secrets and personal data before run content leaves the process (e.g. to a judge).

A *redactor* is any ``Callable[[str], str]``. The built-ins below each handle one shape; ``redact``
applies all of them; ``chain`` composes any redactors (built-in or the user's own) left to right;
``resolve_redactor`` turns the ``redact=`` option of a scorer into one callable.

The patterns are deliberately conservative about *what* they replace (a card number must pass the
Luhn check, an API key must have a known prefix and enough entropy-looking characters) so that
ordinary text reaching the judge stays readable. They are a safety net, not a DLP product.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

__all__ = [
    "DEFAULT_REDACTORS",
    "Redactor",
    "chain",
    "redact",
    "redact_api_keys",
    "redact_bearer_tokens",
    "redact_card_numbers",
    "redact_emails",
    "resolve_redactor",
]

Redactor = Callable[[str], str]

EMAIL_MARK = "[REDACTED_EMAIL]"
TOKEN_MARK = "[REDACTED_TOKEN]"
API_KEY_MARK = "[REDACTED_API_KEY]"
CARD_MARK = "[REDACTED_CARD]"

_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")

# "Authorization: Bearer <token>" and friends; the scheme word is kept so the text stays readable.
# A token must hold a digit, so English prose ("bearer responsibilities") is left alone.
_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)(?=[A-Za-z0-9\-._~+/]*\d)[A-Za-z0-9\-._~+/]{12,}=*")
# A JSON Web Token anywhere (three base64url segments, the first two starting with '{"' encoded).
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}")

# Well-known key shapes: OpenAI/Anthropic style (sk-, sk-proj-, sk-ant-), AWS access key ids,
# GitHub, GitLab and Slack tokens, Google API keys, Stripe keys.
_API_KEYS = re.compile(
    r"\b(?:"
    r"sk-[A-Za-z0-9_-]{16,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|github_pat_[A-Za-z0-9_]{30,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"
    r")"
)

# 13 to 19 digits, optionally grouped by single spaces or dashes; checked with Luhn below.
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def redact_emails(text: str) -> str:
    """Replace e-mail addresses with ``[REDACTED_EMAIL]``."""
    return _EMAIL.sub(EMAIL_MARK, text)


def redact_bearer_tokens(text: str) -> str:
    """Replace bearer/basic tokens (the scheme word is kept) and bare JWTs with ``[REDACTED_TOKEN]``."""
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{TOKEN_MARK}", text)
    return _JWT.sub(TOKEN_MARK, text)


def redact_api_keys(text: str) -> str:
    """Replace API-key shapes (``sk-...``, ``AKIA...``, ``ghp_...``, ``xoxb-...``, ...) with ``[REDACTED_API_KEY]``."""
    return _API_KEYS.sub(API_KEY_MARK, text)


def redact_card_numbers(text: str) -> str:
    """Replace payment card numbers (13-19 digits passing the Luhn check) with ``[REDACTED_CARD]``."""

    def _sub(m: re.Match[str]) -> str:
        digits = re.sub(r"[ -]", "", m.group(0))
        return CARD_MARK if _luhn_ok(digits) else m.group(0)

    return _CARD.sub(_sub, text)


#: The built-in redactors, in the order ``redact`` applies them (tokens before keys: a bearer
#: token may itself look like a key, and either way it ends up replaced).
DEFAULT_REDACTORS: tuple[Redactor, ...] = (
    redact_bearer_tokens,
    redact_api_keys,
    redact_emails,
    redact_card_numbers,
)


def chain(*redactors: Redactor | Iterable[Redactor]) -> Redactor:
    """Compose redactors left to right; nested iterables are flattened (``chain(DEFAULT_REDACTORS, mine)``)."""
    flat: list[Redactor] = []
    for r in redactors:
        if callable(r):
            flat.append(r)
        else:
            flat.extend(r)
    steps = tuple(flat)

    def _chained(text: str) -> str:
        for step in steps:
            text = step(text)
        return text

    return _chained


def redact(text: str, extra: Redactor | Sequence[Redactor] | None = None) -> str:
    """Apply every built-in redactor, then ``extra`` (a user callable or several) if given."""
    for step in DEFAULT_REDACTORS:
        text = step(text)
    if extra is not None:
        text = chain(extra)(text)
    return text


def _identity(text: str) -> str:
    return text


def resolve_redactor(option: bool | Redactor | Sequence[Redactor] | None) -> Redactor:
    """The ``redact=`` option of a scorer as one callable.

    ``None`` or ``True``: the built-ins (:func:`redact`); ``False``: nothing is redacted; a callable:
    used as it is (compose with ``chain(redact, mine)`` to keep the built-ins); a sequence: chained.
    """
    if option is None or option is True:
        return redact
    if option is False:
        return _identity
    if callable(option):
        return option
    return chain(option)
