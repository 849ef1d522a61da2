"""Secrets never reach the store, the report or the logs.

:func:`redact` walks a config / spec / provenance / identity structure and
replaces the value of every key named like a secret (``api_key``, ``token``,
``password``, ``secret``, ``credentials``, ``authorization``, ...; names of
environment variables such as ``api_key_env`` are kept) and, in every string,
the userinfo of a URL (``http://user:pw@host`` -> ``http://***@host``) and the
value of secret-named URL query parameters. The store applies it before
anything is written (``ResultStore.begin_run``, error messages); the CLI
before anything is printed.
"""

from __future__ import annotations

import re
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
    return not k.endswith("_env") and _SECRET_KEY.search(k) is not None


def redact_text(text: str) -> str:
    """``text`` with URL userinfo and secret query values replaced (cheap when there are none)."""
    if "://" not in text and "=" not in text:
        return text
    text = _URL_USERINFO.sub(lambda m: m.group(1) + REDACTED + "@", text)
    return _URL_QUERY_SECRET.sub(lambda m: m.group(1) + REDACTED, text)


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
