"""Redaction of secrets and personal data before run content leaves the process (e.g. to a judge).

A *redactor* is any ``Callable[[str], str]``. The built-ins below each handle one shape; ``redact``
applies all of them; ``chain`` composes any redactors (built-in or the user's own) left to right;
``resolve_redactor`` turns the ``redact=`` option of a scorer into one callable.

Text is *normalised before* it is matched (:func:`normalise`): HTML character references and
percent-escapes decoded, Unicode NFKC (fullwidth at-signs and digits become ASCII), invisible format
characters removed, runs of blanks collapsed. So ``jane%40example.com``, ``4111  1111  1111  1111`` or
a card split by zero-width spaces are recognised, and what is sent is the normalised text.

Shapes covered: e-mail addresses (Unicode too), bearer/basic tokens and JWTs, the credential of an
``Authorization`` header whatever its shape, API keys with a known prefix (OpenAI/Anthropic ``sk-``,
AWS ``AKIA``/``ASIA``, GitHub, GitLab, Slack, Google, Stripe, Hugging Face ``hf_``), PEM private keys
(to the end of the text when the END line was cut off), secret assignments (``password=``,
``"api_key": "…"`` — a quoted value whole, spaces and punctuation included —, ``aws_secret_access_key``,
Azure ``AccountKey=``/``SharedAccessKey=``, ``client_secret`` …), passwords in URLs
(``user:pass@host``), bare 40-character AWS secret keys, and payment card numbers (13-19 digits,
grouped by spaces, dashes, dots or slashes, passing the Luhn check).

JSON text (tool arguments and results usually are) is also redacted by key: a value under a
secret-named key (``password``, ``api_key``, ``client_secret``, ``authorization``, ``cookie`` …) is
replaced whole, whatever it holds — a string with spaces, a number, an object, a list
(:func:`redact_secret_fields` does the same to a value not yet turned into text).

The patterns are deliberately conservative about *what* they replace (a card number must pass the
Luhn check, an API key must have a known prefix and enough entropy-looking characters) so that
ordinary text reaching the judge stays readable. They are a safety net, not a DLP product.
(A scanner such as detect-secrets reports findings per line and adds entropy rules that would hide
the ids and hashes a judge needs; these few rules replace in place and run once per judged value.)
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

__all__ = [
    "DEFAULT_REDACTORS",
    "Redactor",
    "chain",
    "is_secret_key",
    "normalise",
    "redact",
    "redact_api_keys",
    "redact_bearer_tokens",
    "redact_card_numbers",
    "redact_emails",
    "redact_json_secret_fields",
    "redact_private_keys",
    "redact_secret_assignments",
    "redact_secret_fields",
    "resolve_redactor",
]

Redactor = Callable[[str], str]

EMAIL_MARK = "[REDACTED_EMAIL]"
TOKEN_MARK = "[REDACTED_TOKEN]"
API_KEY_MARK = "[REDACTED_API_KEY]"
CARD_MARK = "[REDACTED_CARD]"
SECRET_MARK = "[REDACTED_SECRET]"
PRIVATE_KEY_MARK = "[REDACTED_PRIVATE_KEY]"

# Unicode-aware: local part and domain labels may hold any letters (jürgen@müller.de).
_EMAIL = re.compile(r"(?<![\w.+%-])[\w.%+-]+@[\w-]+(?:\.[\w-]+)*\.[^\W\d_]{2,}\b")

# "Bearer <token>" and friends; the scheme word is kept so the text stays readable. A token must not
# read as a word: it holds a digit, a symbol (- . _ ~ + / =) or a capital after its first letter, so
# English prose ("bearer responsibilities", "Bearer Responsibilities") is left alone while a
# letters-only key ("Bearer AbCdEfGhIjKlMnOp") is not.
_TOKEN_CHARS = r"[A-Za-z0-9\-._~+/]"
_BEARER = re.compile(
    r"\b((?i:bearer|basic))(\s+)(?!\[REDACTED)"
    r"(?=" + _TOKEN_CHARS + r"*(?:[0-9\-._~+/=]|(?<=[A-Za-z0-9])[A-Z]))" + _TOKEN_CHARS + r"{12,}=*"
)
# The credential of an Authorization header (or key) whatever its shape: a header says it is one.
_AUTH_SCHEME = r"(?:(?:bearer|basic|token|digest|apikey|api-key|negotiate)\s+)?"
_AUTH_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?authorization\\{0,3}[\"']?\s{0,3}[:=]\s{0,3}\\{0,3}[\"']?\s{0,3}"
    r"(?!" + _AUTH_SCHEME + r"\[REDACTED)" + _AUTH_SCHEME + r")([^\s\\\"',;]+)"
)
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
    r"|hf_[A-Za-z0-9]{30,}"
    r")"
)

# A PEM private key block; without its END line (cut off) it runs to the end of the text.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)

# ``name = value`` / ``"name": "value"`` / ``name=value;`` where the name says it is a secret.
_SECRET_NAMES = (
    r"passwo?r?d|passwd|pwd|passphrase|secret(?![a-z])|client[_-]?secret|api[_-]?key|apikey|access[_-]?key"
    r"|account[_-]?key|shared[_-]?access[_-]?key|private[_-]?key|(?:auth|access|refresh|api|session|bearer|id)[_-]?token"
    r"|credentials?"
)
# The value is a quoted string taken whole (JSON's "…" with its escapes, an escaped \"…\" inside a
# JSON string, '…'), or else a bare run up to a blank or punctuation.
_SECRET_ASSIGNMENT = re.compile(
    r"(?i)((?:" + _SECRET_NAMES + r")[a-z0-9_-]{0,24}(?:\\{0,3}[\"'])?\s{0,3}[:=]\s{0,3})"
    r"(?:"
    r"(\")(?!\[REDACTED)(?:[^\"\\\n]|\\.){1,8192}(?=\")"
    r"|(\\{1,3}\")(?!\[REDACTED)(?:(?!\\{1,3}\")[^\n]){1,8192}(?=\\{1,3}\")"
    r"|(')(?!\[REDACTED)[^'\n]{1,8192}(?=')"
    r"|(\\{0,3}[\"']?)(?!\[REDACTED)[^\s\\\"',;&<>{}\[\]]+"
    r")"
)
# A key naming a secret (JSON fields, mapping keys): the names above, and headers carrying credentials.
_SECRET_KEY = re.compile(r"(?i)(?:" + _SECRET_NAMES + r"|authorization|cookie)")
# Longest JSON text parsed for key-based redaction, and deepest structure walked.
_MAX_JSON_CHARS = 1_048_576
_MAX_DEPTH = 64
# The password of a URL's user-info (scheme://user:password@host).
_URL_PASSWORD = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]{1,20}://[^\s/:@]{1,256}:)([^\s/@]{1,256})(?=@)")
# A bare AWS secret access key: 40 base64 characters with upper, lower case and digits.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")

# 13 to 19 digits, plain or in groups of 2-6 separated by blanks, dashes, dots or slashes (line
# breaks too); checked with Luhn below.
_CARD = re.compile(r"(?<![\d])(?:\d{13,19}|\d{2,6}(?:[ \n./-]{1,2}\d{2,6}){2,8})(?![\d])")
_NOT_DIGIT = re.compile(r"\D")

# Invisible format characters (zero-width spaces and joiners, bidi marks, soft hyphens).
_FORMAT_CHARS = re.compile(r"[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")
_BLANKS = re.compile(r"[^\S\n]+")
_LINE_BREAKS = re.compile(r" ?\n[\s]*")
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def normalise(text: str) -> str:
    """The text redaction matches on, and what is then sent: HTML references and percent-escapes
    decoded, NFKC, invisible format characters removed, blank runs collapsed to one space and line
    breaks (with blanks around them) to one ``\\n``."""
    if "&" in text:
        text = html.unescape(text)
    if "%" in text and _PERCENT_ESCAPE.search(text):
        text = unquote(text, errors="replace")
    if not text.isascii():
        text = _FORMAT_CHARS.sub("", unicodedata.normalize("NFKC", text))
    text = _BLANKS.sub(" ", text)
    if "\n" in text:
        text = _LINE_BREAKS.sub("\n", text)
    return text


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
    """Replace bearer/basic tokens (the scheme word is kept), the credential of an ``Authorization``
    header whatever its shape, and bare JWTs with ``[REDACTED_TOKEN]``."""
    if "uthorization" in text or "UTHORIZATION" in text:
        text = _AUTH_HEADER.sub(lambda m: m.group(1) + TOKEN_MARK, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{TOKEN_MARK}", text)
    return _JWT.sub(TOKEN_MARK, text)


def redact_api_keys(text: str) -> str:
    """Replace API-key shapes (``sk-...``, ``AKIA...``, ``ghp_...``, ``xoxb-...``, ``hf_...``, ...) with
    ``[REDACTED_API_KEY]``, and bare 40-character AWS secret access keys too."""
    return _AWS_SECRET.sub(_aws_secret, _API_KEYS.sub(API_KEY_MARK, text))


def _aws_secret(m: re.Match[str]) -> str:
    value = m.group(0)
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)
    return API_KEY_MARK if mixed else value


def redact_private_keys(text: str) -> str:
    """Replace PEM private key blocks (``-----BEGIN … PRIVATE KEY-----``) with ``[REDACTED_PRIVATE_KEY]``."""
    return _PRIVATE_KEY.sub(PRIVATE_KEY_MARK, text) if "-----BEGIN" in text else text


def redact_secret_assignments(text: str) -> str:
    """Replace the value of secret-named assignments (``password=``, ``"api_key": "…"`` — a quoted
    value whole —, ``AccountKey=…;``, ``aws_secret_access_key = …``) and URL passwords with
    ``[REDACTED_SECRET]``."""
    text = _SECRET_ASSIGNMENT.sub(_assignment, text)
    return _URL_PASSWORD.sub(lambda m: m.group(1) + SECRET_MARK, text) if "://" in text else text


def _assignment(m: re.Match[str]) -> str:
    quote = next((q for q in m.groups()[1:] if q is not None), "")
    return m.group(1) + quote + SECRET_MARK


def is_secret_key(key: object) -> bool:
    """Whether a mapping key names a secret (``password``, ``api_key``, ``client_secret``,
    ``authorization``, ``x-auth-token``, ``cookie`` …)."""
    return isinstance(key, str) and len(key) <= 128 and _SECRET_KEY.search(key) is not None


def redact_secret_fields(value: Any, _depth: int = 0) -> Any:
    """``value`` (JSON-like: mappings, lists, scalars) with every value under a secret-named key
    replaced by ``[REDACTED_SECRET]``, whatever that value is; the input is not changed."""
    if _depth >= _MAX_DEPTH:
        return value
    if isinstance(value, Mapping):
        return {k: SECRET_MARK if is_secret_key(k) and v is not None else redact_secret_fields(v, _depth + 1)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_secret_fields(v, _depth + 1) for v in value]
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):  # JSON held in a string (tool-call arguments)
        return _redact_json_text(value, _depth + 1)
    return value


def redact_json_secret_fields(text: str) -> str:
    """:func:`redact_secret_fields` applied to ``text`` when it is a JSON object or array (tool
    arguments and results usually are); other text is returned as it is."""
    if text.lstrip()[:1] not in ("{", "["):
        return text
    return _redact_json_text(text, 0)


def _redact_json_text(text: str, depth: int) -> str:
    if len(text) > _MAX_JSON_CHARS or depth >= _MAX_DEPTH or not _SECRET_KEY.search(text):
        return text
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return text
    redacted = redact_secret_fields(doc, depth)
    if redacted == doc:
        return text
    try:
        return json.dumps(redacted, ensure_ascii=False)
    except (ValueError, RecursionError):
        return text


def redact_card_numbers(text: str) -> str:
    """Replace payment card numbers (13-19 digits, grouped or not, passing the Luhn check) with ``[REDACTED_CARD]``."""

    def _sub(m: re.Match[str]) -> str:
        digits = _NOT_DIGIT.sub("", m.group(0))
        return CARD_MARK if 13 <= len(digits) <= 19 and _luhn_ok(digits) else m.group(0)

    return _CARD.sub(_sub, text)


#: The built-in redactors, in the order ``redact`` applies them (private keys first: their body
#: would otherwise be cut into pieces by the others; JSON fields by key next, while the text is
#: still JSON; tokens before keys: a bearer token may itself look like a key, and either way it
#: ends up replaced).
DEFAULT_REDACTORS: tuple[Redactor, ...] = (
    redact_private_keys,
    redact_json_secret_fields,
    redact_bearer_tokens,
    redact_api_keys,
    redact_secret_assignments,
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
    """:func:`normalise`, apply every built-in redactor, then ``extra`` (a user callable or several)."""
    text = normalise(text)
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
