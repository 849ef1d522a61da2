"""Which names are secrets (harness/util/redact.py): a key whose last part is a secret word has
its value redacted, but ``*_env`` names (``api_key_env``) hold the *name* of an environment variable,
not a secret, and are kept -- in configs, in overrides, and among the environment variables
whose values are redacted from every text."""

from __future__ import annotations

import pytest

from harness.util import redact as r

KEY = "sk-test-0123456789abcdef"


@pytest.mark.parametrize("name, secret", [
    ("api_key", True), ("OPENAI_API_KEY", True), ("hf_token", True), ("password", True), ("client-secret", True),
    ("api_key_env", False), ("API_KEY_ENV", False), ("token_env", False), ("api-key-env", False),
    ("HF_TOKEN_ENV", False), ("model", False), ("base_url", False),
    # a secret word is the name's last part, whole: not a prefix, not inside a longer word
    ("tokenizer", False), ("max_new_tokens", False), ("authors", False), ("oldpwd", False),
])
def test_secret_names_and_env_names(name, secret):
    assert r.is_secret_key(name) is secret


def test_a_configs_env_name_is_kept_and_its_secret_is_not():
    cfg = {"planner": {"params": {"api_key_env": "OPENAI_API_KEY", "api_key": KEY, "token_env": "HF_TOKEN",
                                  "model": "m"}}}
    assert r.redact(cfg) == {"planner": {"params": {"api_key_env": "OPENAI_API_KEY", "api_key": r.REDACTED,
                                                    "token_env": "HF_TOKEN", "model": "m"}}}
    given = "planner.params.api_key_env=MY_LAB_VARIABLE"
    assert r.redact_override(given) == given
    assert r.redact_override(f"planner.params.api_key={KEY}") == f"planner.params.api_key={r.REDACTED}"


def test_an_env_variable_named_env_is_not_a_known_secret(monkeypatch):
    monkeypatch.setenv("LAB_API_KEY_ENV", "LAB_ORDINARY_VARIABLE_NAME")
    monkeypatch.setenv("LAB_API_KEY", KEY)
    secrets = r.known_secrets()
    assert KEY in secrets and "LAB_ORDINARY_VARIABLE_NAME" not in secrets
    text = f"the key is read from LAB_ORDINARY_VARIABLE_NAME, not {KEY}"
    assert r.redact_text(text) == f"the key is read from LAB_ORDINARY_VARIABLE_NAME, not {r.REDACTED}"
