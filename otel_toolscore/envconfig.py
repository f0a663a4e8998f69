"""Settings models read from ``OTEL_TOOLSCORE_*`` variables the way OpenTelemetry reads ``OTEL_*``.

The OpenTelemetry environment-variable specification, applied to our own variables:

* an empty variable is the same as an unset one (the default applies);
* a variable whose value cannot be used (not a number, out of range, an unknown word) logs a
  warning naming the variable and is ignored — its default applies. Under ``opentelemetry-instrument``
  a typo must not turn scoring off, so nothing read from the environment raises;
* an unknown ``OTEL_TOOLSCORE_*`` variable (a misspelt name) logs a warning, with the closest known
  name when there is one, and is ignored;
* booleans: only ``true`` (any case) is true and ``false`` (any case) false; any other word is a bad
  value (warned about, default kept — never read as true);
* durations are integer milliseconds (``*_MS``). Settings that used to be seconds (``*_S``) still
  work under their old names, with a deprecation warning.

Explicit arguments — constructor keywords, ``serve --config`` keys, CLI flags — are checked when the
settings are built and fail at once with :class:`ConfigError` naming the key: those are written by
the person starting the program, who is there to read the error.
"""

from __future__ import annotations

import difflib
import logging
import math
import types
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError, model_validator

__all__ = ["SKIP", "ConfigError", "EnvSettings", "build_settings", "did_you_mean", "read_env", "validation_message",
           "warn_env"]

_log = logging.getLogger("otel_toolscore.config")


class ConfigError(ValueError):
    """A setting is unknown or invalid; the message names the key."""


#: Returned by :meth:`EnvSettings.parse_env` for "not set": the default applies.
SKIP: Any = object()
M = TypeVar("M", bound="EnvSettings")

_SHOWN_CHARS = 60  # how much of a bad value a warning repeats


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean X?)`` with the known name closest to ``name``, or ``""`` when none is close."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


_CONSTRAINTS = {
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be more than {gt}",
    "less_than_equal": "must be at most {le}",
    "less_than": "must be less than {lt}",
    "int_parsing": "is not a whole number",
    "int_from_float": "is not a whole number",
    "int_type": "must be a whole number",
    "float_parsing": "is not a number",
    "float_type": "must be a number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_type": "must be text",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "dict_type": "must be a mapping",
    "missing": "is required",
    "too_short": "must not be empty",
    "finite_number": "must be a finite number",
}


def validation_message(err: Mapping[str, Any], known: Iterable[str] = ()) -> str:
    """One of pydantic's error details in our words (no ``Value error,`` / ``Input should be``): an
    unknown key gets the closest known name among ``known``."""
    kind = str(err.get("type", ""))
    ctx = err.get("ctx") or {}
    if kind == "extra_forbidden":
        loc = err.get("loc") or ()
        key = str(loc[-1]) if loc else ""
        return f"unknown key{did_you_mean(key, known)}"
    if kind == "value_error" and "error" in ctx:
        return str(ctx["error"])
    if kind == "literal_error" and "expected" in ctx:
        return f"must be one of {ctx['expected']}"
    template = _CONSTRAINTS.get(kind)
    if template is not None:
        try:
            return template.format(**ctx)
        except (KeyError, IndexError):
            pass
    msg = str(err.get("msg", "is not valid")).removeprefix("Value error, ")
    return msg[:1].lower() + msg[1:]


def warn_env(message: str) -> None:
    """Log one warning about the environment (the ``otel_toolscore.config`` logger), on one line:
    control characters from a variable's value (or an OS error quoting it) are shown escaped, so a
    value cannot forge log lines."""
    if not message.isprintable():
        message = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
    _log.warning("otel-toolscore: %s", message)


class EnvSettings(BaseModel):
    """A settings model whose fields are also ``<env_prefix><FIELD>`` variables.

    Subclasses set :attr:`env_prefix`, may list fields renamed from seconds to milliseconds in
    :attr:`renamed_to_ms` (old name -> new name; the old keyword, config key, flag and variable keep
    working with a deprecation warning), and may override :meth:`parse_env` / :meth:`check_env`.
    """

    env_prefix: ClassVar[str] = ""
    #: Old seconds field -> new milliseconds field.
    renamed_to_ms: ClassVar[Mapping[str, str]] = {}
    #: Fields whose values are never repeated in a warning.
    secret_fields: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def env_name(cls, field: str) -> str:
        return cls.env_prefix + field.upper()

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and any(old in data for old in cls.renamed_to_ms):
            return migrate_renamed(cls, data)
        return data

    @classmethod
    def parse_env(cls, name: str, text: str) -> Any:
        """The value the model validates for variable text ``text`` (stripped, not empty), or :data:`SKIP`.

        Raises ``ValueError`` for text that cannot be a value. Booleans are read here, strictly.
        """
        if _is_bool(cls.model_fields[name].annotation):
            lowered = text.lower()
            if lowered not in ("true", "false"):
                raise ValueError("a boolean is `true` or `false`")
            return lowered == "true"
        return text

    @classmethod
    def when_ignored(cls, name: str) -> str:
        """What happens when the variable of ``name`` is ignored (said in the warning)."""
        return "the default applies"

    @classmethod
    def check_env(cls, name: str, value: Any) -> None:
        """Further checks of a value read from the environment (e.g. that a named file can be read);
        raises ``ValueError`` when it cannot be used."""

    @classmethod
    def read_environment(
        cls, environ: Mapping[str, str], *, ignore: Callable[[str], bool] = lambda key: False, what: str = "settings"
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """The usable values of this model's variables, and the variable each came from."""
        return read_env(cls, environ, ignore=ignore, what=what)

    @classmethod
    def build(cls: type[M], environ: Mapping[str, str], overrides: Mapping[str, Any], *,
              ignore: Callable[[str], bool] = lambda key: False, what: str = "settings") -> M:
        """The environment's values overridden by explicit ones (checked, failing fast)."""
        values, _ = cls.read_environment(environ, ignore=ignore, what=what)
        where = {k: k for k in overrides}
        explicit = migrate_renamed(cls, overrides, where)
        unknown = set(explicit) - set(cls.model_fields)
        if unknown:
            key = sorted(unknown)[0]
            raise ConfigError(f"unknown setting {key!r}{did_you_mean(key, cls.model_fields)}")
        values.update(explicit)
        return build_settings(cls, values, where)


def _is_bool(annotation: Any) -> bool:
    if annotation is bool:
        return True
    if get_origin(annotation) in (Union, types.UnionType):
        return {a for a in get_args(annotation) if a is not type(None)} == {bool}
    return False


def seconds_to_ms(value: Any) -> Any:
    """``value`` seconds as integer milliseconds; a value that is not a number is returned as it is
    (the milliseconds field then refuses it, naming the key)."""
    if value is None or isinstance(value, bool):
        return value
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return value
    return round(seconds * 1000) if math.isfinite(seconds) else value


def migrate_renamed(model: type[EnvSettings], data: Mapping[str, Any], where: dict[str, str] | None = None) -> dict[str, Any]:
    """``data`` with the old seconds keys of ``model`` turned into their milliseconds keys (a
    ``DeprecationWarning`` each); ``where`` (key -> where it came from) follows the rename."""
    out = dict(data)
    for old, new in model.renamed_to_ms.items():
        if old not in out:
            continue
        warnings.warn(f"`{old}` is deprecated: use `{new}` (milliseconds)", DeprecationWarning, stacklevel=4)
        value = out.pop(old)
        if new in out:
            continue  # the new name wins
        out[new] = seconds_to_ms(value)
        if where is not None:
            where[new] = where.pop(old, old)
    return out


def read_env(
    model: type[EnvSettings],
    environ: Mapping[str, str],
    *,
    ignore: Callable[[str], bool] = lambda key: False,
    what: str = "settings",
) -> tuple[dict[str, Any], dict[str, str]]:
    """The usable values of ``model``'s variables in ``environ`` and the variable each came from.

    Each value is checked on its own against its field; one that does not pass, an unknown variable
    with the prefix, and a deprecated name all log a warning naming the variable. Nothing raises.
    """
    prefix = model.env_prefix
    known = {model.env_name(f): f for f in model.model_fields}
    deprecated = {model.env_name(old): new for old, new in model.renamed_to_ms.items()}
    values: dict[str, Any] = {}
    where: dict[str, str] = {}
    for key in sorted(k for k in environ if k.startswith(prefix) and not ignore(k)):
        text = environ[key].strip()
        if key in known:
            name, in_seconds = known[key], False
        elif key in deprecated:
            name, in_seconds = deprecated[key], True
            new_key = model.env_name(name)
            if environ.get(new_key, "").strip():
                warn_env(f"{key} is deprecated and ignored: {new_key} is set")
                continue
            if text:
                warn_env(f"{key} is deprecated: set {new_key} (milliseconds) instead")
        else:
            close = difflib.get_close_matches(key, [*known, *deprecated], n=1, cutoff=0.8)
            hint = f" (did you mean {close[0]}?)" if close else ""
            warn_env(f"{key} is not one of the {what}{hint}; it is ignored")
            continue
        if not text:
            continue  # empty is unset (OpenTelemetry): the default applies
        try:
            value = seconds_to_ms(_seconds(text)) if in_seconds else model.parse_env(name, text)
            if value is SKIP:
                continue
            value = getattr(model.model_validate({name: value}), name)
            model.check_env(name, value)
        except ValidationError as exc:
            _ignored(model, key, name, text, validation_message(exc.errors()[0]))
            continue
        except ValueError as exc:  # ConfigError included
            _ignored(model, key, name, text, str(exc))
            continue
        values[name] = value
        where[name] = key
    return values, where


def _seconds(text: str) -> float:
    seconds = float(text)  # ValueError: not a number
    if not math.isfinite(seconds):
        raise ValueError("not a finite number of seconds")
    return seconds


def _ignored(model: type[EnvSettings], key: str, name: str, text: str, reason: str) -> None:
    shown = "<hidden>" if name in model.secret_fields else repr(text[:_SHOWN_CHARS] + ("…" if len(text) > _SHOWN_CHARS else ""))
    warn_env(f"{key}={shown} is ignored ({reason}); {model.when_ignored(name)}")


def build_settings(model: type[M], values: Mapping[str, Any], where: Mapping[str, str]) -> M:
    """``model(**values)``, with a validation error turned into one message naming the key's source."""
    try:
        return model(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "settings"
        source = where.get(loc, loc)
        named = source if source == loc else f"{source} ({loc})"
        raise ConfigError(f"invalid setting {named}: {validation_message(err, model.model_fields)}") from None
