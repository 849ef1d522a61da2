"""Secrets never reach the store, the report or the logs.

:func:`redact` walks a config / spec / provenance / identity structure and
replaces the value of every key named like a secret (``api_key``, ``token``,
``password``, ``secret``, ``credentials``, ``authorization``, ...; names of
environment variables such as ``api_key_env`` are kept) and, in every string,
the userinfo of a URL (``http://user:pw@host`` -> ``http://***@host``) and the
value of secret-named URL query parameters, and every occurrence of a **known secret
value**: the value of each environment variable named like a secret (``OPENAI_API_KEY``,
``HF_TOKEN``, ...) and each value registered with :func:`register_secret` (the openai
backend registers the key it read from ``api_key_env``, whatever that variable is called,
and with :func:`register_url_credentials` the password of its ``base_url`` and the Basic
auth header value the HTTP client derives from it),
so a server that repeats the key in its error body leaves no trace. The store applies it before
anything is written (``ResultStore.begin_run``, error messages); the CLI
before anything is printed.

A plugin never registers its credentials itself: a parameter declared ``param(...,
secret="value")`` (a key, a token, a password), ``secret="env"`` (the name of the variable
holding one) or ``secret="url"`` (a URL whose userinfo is one; every ``kind="url"`` field is)
is registered by :func:`harness.params.parse` the moment it is read (:func:`register_declared`).

Texts that come from a server enter the harness through :func:`redact_cut` (a model's reply, a
judge's reply and reason, a policy server's error): redacted first, then cut to their limit, so a
key that straddles the cut leaves no prefix; and a known secret's first
:data:`PARTIAL_SECRET_CHARS` characters or more at the end of a text that was cut in transit
(a body read up to a size limit) are redacted too. A cut never leaves part of the ``***``
marker: it moves back to before the marker. :func:`redact_exception` does the same to an
exception's message before it leaves the call that raised it.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

REDACTED = "***"

#: Keys whose values are secrets (matched on the lower-cased key, '-' read as '_').
_SECRET_KEY = re.compile(
    r"(^|_)(api_?key|apikey|key_?secret|token|access_?token|refresh_?token|secret|client_?secret|password|passwd|pwd"
    r"|credentials?|auth|authorization|access_?key|secret_?key|private_?key|cookie|session_?key)$"
)
#: ``scheme://userinfo@`` in any text (the userinfo is what is redacted).
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^/\s@?#]+)@")
#: ``?token=...`` / ``&api_key=...`` in URLs.
_URL_QUERY_SECRET = re.compile(
    r"(?i)([?&](?:api[_-]?key|apikey|token|access[_-]?token|secret|password|passwd|auth|key|sig|signature)=)[^&#\s]*")


def is_secret_key(key: Any) -> bool:
    if not isinstance(key, str):
        return False
    k = key.lower().replace("-", "_")
    # ``*_env`` names (``api_key_env``: a variable's name) end in no secret word: the pattern keeps them
    return _SECRET_KEY.search(k) is not None


#: Shorter values are not redacted as known secrets (``EMPTY``, ``1``, ``true`` would blank
#: ordinary words); real keys are far longer.
MIN_SECRET_CHARS = 8

#: Environment variables whose names match a secret's but are not (``PWD``: the working folder).
_NOT_SECRET_ENV = frozenset({"PWD", "OLDPWD"})

_REGISTERED: set[str] = set()
_REGISTERED_LOCK = threading.Lock()


def register_secret(value: Any) -> None:
    """Redact ``value`` from every text from now on (a key read from a variable of any name)."""
    if isinstance(value, str) and len(value.strip()) >= MIN_SECRET_CHARS:
        with _REGISTERED_LOCK:
            _REGISTERED.add(value.strip())


def register_url_credentials(url: Any) -> None:
    """Redact the credentials of a URL's userinfo (``http://user:pw@host``) from every text from
    now on, in each form a client derives from them: the password (plain and as written in the
    URL), ``user:password``, and that pair base64-encoded, the value of the ``Authorization:
    Basic`` header an HTTP client sends for such a URL (RFC 7617, section 2) and a server may echo."""
    import base64
    from urllib.parse import unquote, urlsplit

    if not isinstance(url, str) or "@" not in url:
        return
    try:
        parts = urlsplit(url.strip())
        user, password = parts.username, parts.password
    except ValueError:
        return
    if user is None and password is None:
        return
    raw_user, _, raw_password = parts.netloc.rpartition("@")[0].partition(":")
    for user_text, password_text in {(unquote(user or ""), unquote(password or "")), (raw_user, raw_password)}:
        pair = f"{user_text}:{password_text}"
        # A URL with a user alone (``https://TOKEN@host``) carries its secret there.
        for value in (password_text, pair) if password is not None else (user_text, pair):
            register_secret(value)
        for encoding in ("utf-8", "latin-1"):
            try:
                encoded = pair.encode(encoding)
            except UnicodeEncodeError:
                continue
            for b64 in (base64.b64encode(encoded), base64.urlsafe_b64encode(encoded)):
                text = b64.decode("ascii")
                register_secret(text)
                register_secret(text.rstrip("="))


def known_secrets() -> list[str]:
    """The secret values redacted from every text: registered ones and the values of the
    environment variables named like secrets; longest first (a key inside another is covered)."""
    values = set(_REGISTERED)
    for name, value in list(os.environ.items()):
        if len(value) >= MIN_SECRET_CHARS and name not in _NOT_SECRET_ENV and is_secret_key(name):
            values.add(value)
    return sorted(values, key=len, reverse=True)


def redact_text(text: str) -> str:
    """``text`` with known secret values, URL userinfo and secret query values replaced
    (cheap when there are none)."""
    for secret in known_secrets():
        if secret in text:
            text = text.replace(secret, REDACTED)
    if "://" not in text and "=" not in text:
        return text
    text = _URL_USERINFO.sub(_userinfo_redacted, text)
    return _URL_QUERY_SECRET.sub(lambda m: m.group(1) + REDACTED, text)


def _userinfo_redacted(match: "re.Match[str]") -> str:
    """The userinfo of a URL replaced; its credentials registered, so the forms a client derives
    from them (the Basic auth header's value) are redacted wherever they appear later."""
    if match.group(2) != REDACTED:
        register_url_credentials(f"{match.group(1)}{match.group(2)}@host")
    return match.group(1) + REDACTED + "@"


#: A text cut in transit that ends with this many or more of a known secret's first characters
#: has that end redacted (the rest of the key was never read).
PARTIAL_SECRET_CHARS = 4


def redact_cut(text: str, limit: int | None = None) -> str:
    """``text`` as it may enter the harness from a server: known secrets and URL credentials
    redacted, a secret's prefix at its end redacted (the text may have been cut in transit),
    then cut to at most ``limit`` characters, never inside a ``***`` marker."""
    text = redact_text(str(text))
    text = _redact_partial_tail(text)
    if limit is None or len(text) <= limit:
        return text
    limit = max(0, int(limit))
    # A marker the cut would split (``*`` or ``**`` left, ambiguous with text): cut before it.
    for start in range(max(0, limit - len(REDACTED) + 1), limit):
        if text.startswith(REDACTED, start):
            return text[:start]
    return text[:limit]


def _redact_partial_tail(text: str) -> str:
    """``text`` with its end redacted where it is the first :data:`PARTIAL_SECRET_CHARS` or more
    characters of a known secret (a key whose last characters were cut off before it arrived)."""
    if len(text) < PARTIAL_SECRET_CHARS:
        return text
    best = 0
    for secret in known_secrets():
        for k in range(min(len(secret) - 1, len(text)), max(PARTIAL_SECRET_CHARS, best + 1) - 1, -1):
            if text.endswith(secret[:k]):
                best = k
                break
    return text[:len(text) - best] + REDACTED if best else text


def redact_exception(exc: BaseException) -> BaseException:
    """``exc`` with its message redacted in place (its string ``args`` and a ``message``
    attribute, as the HTTP clients' errors carry the server's body there); returned for
    ``raise redact_exception(exc)``."""
    try:
        exc.args = tuple(redact_cut(a) if isinstance(a, str) else a for a in exc.args)
        message = getattr(exc, "message", None)
        if isinstance(message, str):
            exc.message = redact_cut(message)  # type: ignore[attr-defined]
    except (AttributeError, TypeError):  # an exception type with read-only attributes
        pass
    return exc


#: Forms of :func:`harness.params.param`'s ``secret``: the value is a secret; it names the
#: environment variable holding one; it is a URL whose userinfo is one.
SECRET_FORMS = ("value", "env", "url")


def register_declared(form: str, value: Any) -> None:
    """Register a parameter's value declared secret in ``form`` (one of :data:`SECRET_FORMS`)."""
    if not isinstance(value, str) or not value:
        return
    if form == "value":
        register_secret(value)
        register_url_credentials(value)  # a key given as a URL with credentials
    elif form == "env":
        register_secret(os.environ.get(value))
    elif form == "url":
        register_url_credentials(value)
    else:
        raise ValueError(f"secret must be one of {', '.join(SECRET_FORMS)}, got {form!r}")


def redact(obj: Any) -> Any:
    """A copy of ``obj`` (dicts, lists, tuples, strings) with secrets replaced; other values as they are."""
    if isinstance(obj, str):
        return redact_text(obj)
    if isinstance(obj, dict):
        return {k: (REDACTED if is_secret_key(k) and v not in (None, "") else redact(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact(v) for v in obj) if isinstance(obj, list) else tuple(redact(v) for v in obj)
    return obj


def redact_override(override: str) -> str:
    """One command-line override with its value redacted when its key names a secret."""
    key, sep, value = override.partition("=")
    if sep and is_secret_key(key.lstrip("+~").rsplit(".", 1)[-1]):
        return f"{key}={REDACTED}"
    return redact_text(override)
