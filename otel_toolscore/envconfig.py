"""Settings classes read from ``OTEL_TOOLSCORE_*`` variables the way OpenTelemetry reads ``OTEL_*``.

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

The settings classes are plain classes declared field by field (:func:`setting`): the span
processor's import path loads this module, and pydantic costs more to import than the OpenTelemetry
SDK itself. Each field's type (its annotation) and bounds are checked explicitly; the class keeps the
face the settings had as pydantic models (``model_fields``, ``model_copy``, ``model_fields_set``,
equality, keyword construction, frozen instances).
"""

from __future__ import annotations

import logging
import math
import sys
import types
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin

__all__ = [
    "SKIP",
    "ConfigError",
    "EnvSettings",
    "FieldSpec",
    "SecretStr",
    "UnknownSetting",
    "alternatives",
    "build_settings",
    "did_you_mean",
    "lax_bool",
    "read_env",
    "setting",
    "validation_message",
    "warn_env",
]

_log = logging.getLogger("otel_toolscore.config")


class ConfigError(ValueError):
    """A setting is unknown or invalid; the message names the key."""


class InvalidSetting(ConfigError):
    """One field's value cannot be used; ``key`` is the field, ``reason`` says why (no key in it)."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"invalid setting {key}: {reason}")
        self.key = key
        self.reason = reason


class UnknownSetting(ConfigError):
    """A key that names no setting; ``hint`` is `` (did you mean X?)`` with the closest known name, or ``""``."""

    def __init__(self, key: str, known: Iterable[str]) -> None:
        self.key = key
        self.hint = did_you_mean(key, known)
        super().__init__(f"unknown setting {key!r}{self.hint}")


#: Returned by :meth:`EnvSettings.parse_env` for "not set": the default applies.
SKIP: Any = object()
M = TypeVar("M", bound="EnvSettings")

_SHOWN_CHARS = 60  # how much of a bad value a warning repeats


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean X?)`` with the known name closest to ``name``, or ``""`` when none is close."""
    import difflib  # only for a misspelt name: not on the processor's import path

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def validation_message(error: BaseException) -> str:
    """Why a value or key was refused, in our words and without the key (the caller names where it
    came from): the ``reason`` of :class:`InvalidSetting` (and of the expectations' errors), the
    ``unknown key (did you mean X?)`` of :class:`UnknownSetting`, else the error's own text."""
    if isinstance(error, UnknownSetting):
        return f"unknown key{error.hint}"
    reason = getattr(error, "reason", None)
    return reason if isinstance(reason, str) else str(error)


def warn_env(message: str) -> None:
    """Log one warning about the environment (the ``otel_toolscore.config`` logger), on one line:
    control characters from a variable's value (or an OS error quoting it) are shown escaped, so a
    value cannot forge log lines."""
    if not message.isprintable():
        message = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
    _log.warning("otel-toolscore: %s", message)


class SecretStr:
    """A secret (an API key): never shown by ``repr``/``str``; :meth:`get_secret_value` reads it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretStr) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __len__(self) -> int:
        return len(self._value)

    def __str__(self) -> str:
        return "**********" if self._value else ""

    def __repr__(self) -> str:
        return f"SecretStr({str(self)!r})"


# -- value checks, one per annotation ------------------------------------------------------------------
# Explicit values (keywords, config files, flags) are read as pydantic's lax mode read them: a number
# may arrive as text from a file, a boolean as ``yes``. Text from the environment is read strictly
# before it gets here (:meth:`EnvSettings.parse_env`).
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


def lax_bool(value: Any) -> bool:
    """``value`` as a boolean: ``True``/``False``, 0/1, or one of pydantic's lax words (``yes``, ``off``…)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
    raise ValueError("a boolean is `true` or `false`")


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("must be a whole number, not a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise ValueError("is not a whole number")
    if isinstance(value, str):
        text = value.strip()
        whole, dot, fraction = text.partition(".")
        if dot and fraction and not fraction.strip("0"):
            text = whole  # "2.0" is a whole number too (as pydantic read it); "2.5" is not
        try:
            return int(text)
        except ValueError:
            raise ValueError("is not a whole number") from None
    raise ValueError("must be a whole number")


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("must be a number, not a boolean")
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:  # an int beyond any float
            raise ValueError("must be a finite number") from None
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise ValueError("is not a number") from None
    else:
        raise ValueError("must be a number")
    if not math.isfinite(number):
        raise ValueError("must be a finite number")
    return number


def _to_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise ValueError(f"must be text, not {type(value).__name__}")


def _to_names(value: Any) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ValueError("must be a list of names")


def _to_secret(value: Any) -> SecretStr:
    if isinstance(value, SecretStr):
        return value
    if isinstance(value, str):
        return SecretStr(value)
    raise ValueError("must be text")


_CHECKS: dict[Any, Callable[[Any], Any]] = {
    bool: lax_bool, int: _to_int, float: _to_float, str: _to_str, SecretStr: _to_secret
}


def alternatives(allowed: tuple[Any, ...]) -> str:
    """``'a', 'b' or 'c'``: the values a setting may take, as an error lists them."""
    shown = [repr(a) for a in allowed]
    return " or ".join([", ".join(shown[:-1]), shown[-1]]) if len(shown) > 1 else "".join(shown)


def _check_for(annotation: Any) -> tuple[Callable[[Any], Any], bool]:
    """The check of values of ``annotation`` and whether ``None`` is allowed."""
    optional = False
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        optional = len(args) < len(get_args(annotation))
        if len(args) != 1:
            raise TypeError(f"a setting has one type (or that type or None), not {annotation!r}")
        annotation = args[0]
    check = _CHECKS.get(annotation)
    if check is not None:
        return check, optional
    if get_origin(annotation) is tuple and get_args(annotation) == (str, ...):
        return _to_names, optional
    if get_origin(annotation) is Literal:
        allowed = get_args(annotation)

        def one_of(value: Any) -> Any:
            if value in allowed:
                return value
            raise ValueError(f"must be one of {alternatives(allowed)}")

        return one_of, optional
    raise TypeError(f"unsupported setting type {annotation!r}")


class FieldSpec:
    """One setting: its default, description, bounds and extra check (what :func:`setting` declares).

    ``before`` sees the value as given (e.g. a comma-separated string to split); ``check`` sees it
    after the type check and returns the value kept, or raises ``ValueError`` with the reason.
    """

    __slots__ = ("_check", "annotation", "before", "check", "default", "description", "ge", "gt", "le", "name",
                 "optional")

    def __init__(
        self,
        default: Any,
        description: str,
        *,
        ge: float | None = None,
        gt: float | None = None,
        le: float | None = None,
        before: Callable[[Any], Any] | None = None,
        check: Callable[[Any], Any] | None = None,
    ) -> None:
        self.default = default
        self.description = description
        self.ge, self.gt, self.le = ge, gt, le
        self.before = before
        self.check = check
        self.name = ""
        self.annotation: Any = None
        self.optional = False
        self._check: Callable[[Any], Any] = _to_str

    def bind(self, name: str, annotation: Any) -> None:
        self.name = name
        self.annotation = annotation
        self._check, self.optional = _check_for(annotation)

    @property
    def is_bool(self) -> bool:
        return self._check is lax_bool

    def validate(self, value: Any) -> Any:
        """``value`` as this setting holds it; ``ValueError`` with the reason when it cannot be."""
        if self.before is not None:
            value = self.before(value)
        if value is None:
            if self.optional:
                return None
            raise ValueError("must be set")
        value = self._check(value)
        if self.ge is not None and not value >= self.ge:
            raise ValueError(f"must be at least {self.ge}")
        if self.gt is not None and not value > self.gt:
            raise ValueError(f"must be more than {self.gt}")
        if self.le is not None and not value <= self.le:
            raise ValueError(f"must be at most {self.le}")
        if self.check is not None:
            value = self.check(value)
        return value

    def __repr__(self) -> str:
        return f"FieldSpec(name={self.name!r}, annotation={self.annotation!r}, default={self.default!r})"


def setting(default: Any, description: str, **checks: Any) -> Any:
    """Declare a field of an :class:`EnvSettings` class: ``name: type = setting(default, "what it
    does", ge=1)`` (``checks``: the keywords of :class:`FieldSpec`). Typed ``Any`` so the annotation,
    not the declaration, is the field's type."""
    return FieldSpec(default, description, **checks)


class EnvSettings:
    """Settings whose fields are also ``<env_prefix><FIELD>`` variables; instances are frozen.

    Subclasses declare fields with :func:`setting`, set :attr:`env_prefix`, may list fields renamed
    from seconds to milliseconds in :attr:`renamed_to_ms` (old name -> new name; the old keyword,
    config key, flag and variable keep working with a deprecation warning), and may override
    :meth:`parse_env` / :meth:`check_env`.
    """

    env_prefix: ClassVar[str] = ""
    #: Old seconds field -> new milliseconds field.
    renamed_to_ms: ClassVar[Mapping[str, str]] = {}
    #: Fields whose values are never repeated in a warning.
    secret_fields: ClassVar[frozenset[str]] = frozenset()
    #: Every field, by name, in declaration order.
    model_fields: ClassVar[dict[str, FieldSpec]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        namespace = vars(sys.modules[cls.__module__])
        fields = dict(cls.model_fields)
        for name, value in list(vars(cls).items()):
            if isinstance(value, FieldSpec):
                annotation = cls.__annotations__[name]
                value.bind(name, eval(annotation, namespace) if isinstance(annotation, str) else annotation)
                fields[name] = value
                delattr(cls, name)  # the instance holds the value
        cls.model_fields = fields

    def __init__(self, **values: Any) -> None:
        cls = type(self)
        if cls.renamed_to_ms and any(old in values for old in cls.renamed_to_ms):
            values = migrate_renamed(cls, values)
        fields = cls.model_fields
        for key in values:
            if key not in fields:
                raise UnknownSetting(key, fields)
        state: dict[str, Any] = {}
        for name, spec in fields.items():
            if name in values:
                try:
                    state[name] = spec.validate(values[name])
                except (ValueError, TypeError) as exc:
                    raise InvalidSetting(name, str(exc)) from None
            else:
                state[name] = spec.default
        state["_fields_set"] = frozenset(values)
        self.__dict__.update(state)

    @property
    def model_fields_set(self) -> frozenset[str]:
        """The fields given when these settings were built (the others hold their defaults)."""
        fields_set: frozenset[str] = self.__dict__["_fields_set"]
        return fields_set

    def model_copy(self: M, *, update: Mapping[str, Any] | None = None) -> M:
        """A copy with ``update`` applied; the new values are checked as the constructor's are."""
        values = {name: getattr(self, name) for name in self.model_fields_set}
        values.update(update or {})
        return type(self)(**values)

    def model_dump(self) -> dict[str, Any]:
        """Every field and its value."""
        return {name: getattr(self, name) for name in self.model_fields}

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: build new settings (model_copy(update=...))")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.model_fields)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in self.model_fields))

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.model_fields)
        return f"{type(self).__name__}({body})"

    @classmethod
    def env_name(cls, field: str) -> str:
        return cls.env_prefix + field.upper()

    @classmethod
    def parse_env(cls, name: str, text: str) -> Any:
        """The value checked for variable text ``text`` (stripped, not empty), or :data:`SKIP`.

        Raises ``ValueError`` for text that cannot be a value. Booleans are read here, strictly.
        """
        if cls.model_fields[name].is_bool:
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
    def unknown_variable(cls, key: str, hint: str | None, what: str) -> str:
        """The warning about ``key``, a variable with the prefix that names no field (``hint``: the
        closest known variable)."""
        return f"{key} is not one of the {what}{f' (did you mean {hint}?)' if hint else ''}; it is ignored"

    @classmethod
    def check_env(cls, name: str, value: Any) -> None:
        """Further checks of a value read from the environment (e.g. that a named file can be read);
        raises ``ValueError`` when it cannot be used."""

    @classmethod
    def read_environment(
        cls, environ: Mapping[str, str], *, ignore: Callable[[str], bool] = lambda key: False, what: str = "settings"
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """The usable values of this class's variables, and the variable each came from."""
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
            raise UnknownSetting(sorted(unknown)[0], cls.model_fields)
        values.update(explicit)
        return build_settings(cls, values, where)


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
            import difflib  # only for a misspelt variable

            close = difflib.get_close_matches(key, [*known, *deprecated], n=1, cutoff=0.8)
            warn_env(model.unknown_variable(key, close[0] if close else None, what))
            continue
        if not text:
            continue  # empty is unset (OpenTelemetry): the default applies
        try:
            value = seconds_to_ms(_seconds(text)) if in_seconds else model.parse_env(name, text)
            if value is SKIP:
                continue
            value = model.model_fields[name].validate(value)
            model.check_env(name, value)
        except (ValueError, TypeError) as exc:  # ConfigError included
            _ignored(model, key, name, text, validation_message(exc))
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
    """``model(**values)``, with an invalid value turned into one message naming the key's source."""
    try:
        return model(**values)
    except InvalidSetting as exc:
        source = where.get(exc.key, exc.key)
        named = source if source == exc.key else f"{source} ({exc.key})"
        raise ConfigError(f"invalid setting {named}: {validation_message(exc)}") from None
