"""Tiny VLM checkpoints, built once per test session (a few seconds) under a tmp dir."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_ckpts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``base`` (Qwen2.5-VL), ``favor`` / ``cfg`` (LoRA adapters on base), ``qwen2`` (Qwen2-VL)."""
    pytest.importorskip("torch", reason="the tiny VLM checkpoints need the `models` extra")
    pytest.importorskip("peft", reason="the tiny VLM checkpoints need the `models` extra")
    from tests.planners.tiny_vlm import build_all

    return build_all(tmp_path_factory.mktemp("tiny_vlm"))
