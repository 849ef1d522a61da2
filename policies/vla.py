"""``vla``: the minimal in-process VLA - a Hugging Face VLM backbone (optionally
with a LoRA adapter) whose last hidden state feeds a small action head that
predicts a chunk of LIBERO actions.

What it is for: testing the policy plumbing (serve-policy, the wire protocols,
the LIBERO loop) with a real transformer, and smoke runs. It is not how VLAs
are compared: nothing in this project trains, converts or loads a trained
action expert, and each backbone of a comparison needs its own trained expert
(train it in StarVLA, openpi or LeRobot, serve it and evaluate with
``policy=remote``: docs/libero.md). So a head that was never trained is
refused unless ``allow_untrained_head=true``: :func:`build_tiny_checkpoint`,
the only writer of random heads, marks its config ``"untrained_head": true``,
and a head without a ``head_training`` record (who trained it, on what) counts
as untrained too.

Checkpoint folder (``policy.params.checkpoint=DIR``)::

    DIR/
      vla_config.json          {"format": "embodied-transfer-vla/1",
                                "backbone": "backbone",   # folder in DIR, absolute path or hub id
                                "adapter": "adapter",     # PEFT LoRA folder, or null
                                "chunk_size": 8, "action_dim": 7, "state_dim": 8,
                                "head_hidden": 256, "image_size": 224,
                                "norm_mode": "min_max",   # or "q99"
                                "unnorm_key": "libero_spatial",
                                "head_training": {...},   # how the head was trained (any
                                                          # non-empty record); absent: untrained
                                "untrained_head": false}  # true: random weights (refused)
      backbone/                the VLM's save_pretrained (config, weights, tokenizer,
                               preprocessor_config.json)
      adapter/                 optional: adapter_config.json + adapter_model.safetensors
      action_head.safetensors  the head: "fc1.weight" [head_hidden, hidden + state_dim],
                               "fc1.bias", "fc2.weight" [chunk_size * action_dim, head_hidden],
                               "fc2.bias"
      dataset_statistics.json  {unnorm_key: {"action": {"min", "max", "q01", "q99", "mask"}}}
                               (StarVLA's / OpenVLA's layout)

Inference: both 224 px images (resized with padding, like openpi's client) go
through the backbone's image processor; the prompt is ``<image 1><image 2>``
then the instruction; the hidden state of the last token (left padding) and
the 8-D state feed ``fc2(gelu(fc1(.)))``, ``tanh`` gives the normalized chunk,
which is un-normalised exactly as a StarVLA client does (clip, gripper
binarised, ``min_max`` or ``q99`` on the masked dims) and its gripper column
mapped to LIBERO's -1 open / +1 close. One forward serves the whole batch.

Supported backbones: Qwen2-VL / Qwen2.5-VL / Qwen3-VL style models (image
placeholder tokens expanded to the image's merged patch count, M-RoPE token
types). The image processor loads without torchvision (transformers picks its
PIL implementation); no video processor is needed.

Params: ``checkpoint`` (required), ``backbone`` / ``adapter`` to swap either
(``adapter=none`` drops it: the base-vs-SFT comparison), ``device``,
``dtype``, ``replan_steps`` (default: the whole chunk), ``max_batch``,
``allow_untrained_head``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from harness.interfaces import AgentRequest
from harness.params import parse
from harness.types import EpisodeSpec
from policies import protocols as P
from harness.util.checkpoint_identity import path_digest
from policies.plugin import VLAParams

FORMAT = "embodied-transfer-vla/1"
CONFIG_FILE = "vla_config.json"
HEAD_FILE = "action_head.safetensors"


class VLAPolicy:
    name = "vla"
    privileged = False
    action_kinds = frozenset({"continuous"})
    reads_images = True

    Params = VLAParams

    def __init__(self, **values: Any):
        self.params = params = parse(self.Params, values)
        ckpt = Path(params.checkpoint).expanduser()
        if not (ckpt / CONFIG_FILE).is_file():
            raise FileNotFoundError(f"{ckpt} is not a vla checkpoint (no {CONFIG_FILE}; see policies/vla.py)")
        import torch

        self.checkpoint = ckpt
        cfg = json.loads((ckpt / CONFIG_FILE).read_text())
        if cfg.get("format") != FORMAT:
            raise ValueError(f"{ckpt / CONFIG_FILE}: format {cfg.get('format')!r}, expected {FORMAT!r}")
        untrained = _untrained(cfg)
        if untrained and not params.allow_untrained_head:
            raise ValueError(f"{ckpt}: its action head was never trained ({untrained}); this in-process vla is for "
                             "tests and smoke runs (set policy.params.allow_untrained_head=true), a trained VLA is "
                             "served and run with policy=remote (docs/libero.md)")
        self.cfg = cfg
        self.chunk_size, self.action_dim = int(cfg["chunk_size"]), int(cfg.get("action_dim", P.ACTION_DIM))
        self.state_dim, self.image_size = int(cfg.get("state_dim", 8)), int(cfg.get("image_size", 224))
        self.norm_mode = P._check_mode(cfg.get("norm_mode", "min_max"))
        self.replan_steps = params.replan_steps
        self.max_batch = params.max_batch
        self.device = torch.device(params.device)
        self.dtype = getattr(torch, params.dtype)
        self.action_stats = P.load_action_stats(ckpt / P.STARVLA_STATS_FILE, params.unnorm_key or cfg.get("unnorm_key"))

        self.backbone_path = self._resolve(params.backbone or cfg["backbone"])
        adapter_ref = params.adapter if params.adapter is not None else cfg.get("adapter")
        self.adapter_path = None if adapter_ref in (None, "", "none", "null") else self._resolve(adapter_ref)
        self._load_backbone()
        self._load_head()

    # --- loading --------------------------------------------------------------------
    def _resolve(self, ref: str) -> str:
        local = (self.checkpoint / ref) if not Path(ref).is_absolute() else Path(ref)
        return str(local) if local.exists() else ref  # else: a hub id

    def _load_backbone(self) -> None:
        import torch
        from transformers import AutoImageProcessor, AutoModelForImageTextToText, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(self.backbone_path)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        self.image_processor = AutoImageProcessor.from_pretrained(self.backbone_path)
        model = AutoModelForImageTextToText.from_pretrained(self.backbone_path, dtype=self.dtype)
        if self.adapter_path is not None:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, self.adapter_path)
            model = model.merge_and_unload()
        self.model = model.to(self.device).eval()
        mcfg = self.model.config
        self.image_token_id = int(mcfg.image_token_id)
        self.vision_start_id = int(getattr(mcfg, "vision_start_token_id"))
        self.vision_end_id = int(getattr(mcfg, "vision_end_token_id"))
        self.merge = int(getattr(self.image_processor, "merge_size", 2))
        text_cfg = getattr(mcfg, "text_config", mcfg)
        self.hidden = int(text_cfg.hidden_size)

    def _load_head(self) -> None:
        import torch
        from safetensors.torch import load_file

        weights = load_file(str(self.checkpoint / HEAD_FILE))
        in_dim, out_dim = self.hidden + self.state_dim, self.chunk_size * self.action_dim
        hidden = int(self.cfg.get("head_hidden", weights["fc1.weight"].shape[0]))
        head = torch.nn.Sequential(torch.nn.Linear(in_dim, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, out_dim))
        state = {"0.weight": weights["fc1.weight"], "0.bias": weights["fc1.bias"],
                 "2.weight": weights["fc2.weight"], "2.bias": weights["fc2.bias"]}
        try:
            head.load_state_dict(state)
        except RuntimeError as exc:
            raise ValueError(f"{HEAD_FILE} does not fit backbone hidden {self.hidden} + state {self.state_dim} -> "
                             f"{self.chunk_size}x{self.action_dim}: {str(exc).splitlines()[-1].strip()}") from None
        self.head = head.to(self.device, self.dtype).eval()

    # --- Agent ----------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """Derived facts only (the parameters are hashed from :attr:`params`): the checkpoint's
        content, the statistics and the dataset key and norm mode in effect (vla_config.json's)."""
        return {
            "policy": self.name,
            "format": FORMAT,
            "config": path_digest(self.checkpoint / CONFIG_FILE),
            "head": path_digest(self.checkpoint / HEAD_FILE),
            "backbone": path_digest(self.backbone_path) if Path(self.backbone_path).exists() else self.backbone_path,
            "adapter": (path_digest(self.adapter_path) if Path(self.adapter_path).exists() else self.adapter_path)
            if self.adapter_path else None,
            "action_stats": self.action_stats.digest(),
            "unnorm_key": self.action_stats.key,
            "norm_mode": self.norm_mode,
        }

    def reset(self, episode: EpisodeSpec) -> None:
        pass

    def act(self, requests: Sequence[AgentRequest]) -> list[np.ndarray]:
        out: list[np.ndarray] = []
        for i in range(0, len(requests), self.max_batch):
            out.extend(self.predict([r.observation for r in requests[i:i + self.max_batch]],
                                    [_instruction(r) for r in requests[i:i + self.max_batch]]))
        return out

    def predict_normalized(self, observations: Sequence[Mapping[str, Any]], instructions: Sequence[str]) -> np.ndarray:
        """The head's output in [-1, 1]: ``[B, chunk, action_dim]``."""
        import torch

        with torch.inference_mode():  # thread-local: serve-policy calls this from a worker thread
            return self._forward(observations, instructions)

    def _forward(self, observations: Sequence[Mapping[str, Any]], instructions: Sequence[str]) -> np.ndarray:
        import torch

        images = []
        for obs in observations:
            images += [P.resize_with_pad(np.asarray(obs[P.OBS_IMAGE]), self.image_size),
                       P.resize_with_pad(np.asarray(obs[P.OBS_WRIST]), self.image_size)]
        vis = self.image_processor(images=images, return_tensors="pt")
        grid = vis["image_grid_thw"]
        n_tokens = [int(g.prod()) // (self.merge ** 2) for g in grid]
        seqs = []
        for b, text in enumerate(instructions):
            ids: list[int] = []
            for k in (2 * b, 2 * b + 1):
                ids += [self.vision_start_id] + [self.image_token_id] * n_tokens[k] + [self.vision_end_id]
            ids += self.tokenizer(text, add_special_tokens=False)["input_ids"]
            seqs.append(ids)
        width = max(map(len, seqs))
        pad = int(self.tokenizer.pad_token_id)
        input_ids = torch.tensor([[pad] * (width - len(s)) + s for s in seqs])
        attention = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in seqs])
        token_types = (input_ids == self.image_token_id).long()
        outputs = self.model(
            input_ids=input_ids.to(self.device), attention_mask=attention.to(self.device),
            pixel_values=vis["pixel_values"].to(self.device, self.dtype), image_grid_thw=grid.to(self.device),
            mm_token_type_ids=token_types.to(self.device), output_hidden_states=True, use_cache=False,
        )
        last = outputs.hidden_states[-1][:, -1, :]
        state = torch.tensor(np.stack([np.asarray(o[P.OBS_STATE], np.float32).reshape(-1)[: self.state_dim]
                                       for o in observations]), device=self.device, dtype=self.dtype)
        z = torch.tanh(self.head(torch.cat([last.to(self.dtype), state], dim=-1)))
        return z.float().cpu().numpy().reshape(len(observations), self.chunk_size, self.action_dim)

    def predict(self, observations: Sequence[Mapping[str, Any]], instructions: Sequence[str]) -> list[np.ndarray]:
        norm = self.predict_normalized(observations, instructions)
        actions = P.unnormalize(norm, self.action_stats, self.norm_mode)
        actions[..., P.ACTION_DIM - 1] = P.gripper_to_libero(actions[..., P.ACTION_DIM - 1])
        return [a.astype(np.float32) for a in actions]


def _untrained(cfg: Mapping[str, Any]) -> str | None:
    """Why the head of ``cfg`` counts as untrained, or None when it carries a training record."""
    if cfg.get("untrained_head"):
        return f"{CONFIG_FILE} marks it untrained: random weights from build_tiny_checkpoint"
    if not cfg.get("head_training"):
        return f"{CONFIG_FILE} has no head_training record"
    return None


def _instruction(request: AgentRequest) -> str:
    obs = request.observation
    if isinstance(obs, Mapping) and obs.get(P.OBS_INSTRUCTION):
        return str(obs[P.OBS_INSTRUCTION])
    return request.episode.instruction


# --- a tiny random checkpoint (tests, trying the pipeline) -------------------------
def build_tiny_checkpoint(path: str | Path, *, seed: int = 0, chunk_size: int = 8, hidden: int = 64,
                          lora: bool = False, unnorm_key: str = "libero_spatial") -> Path:
    """Write a randomly initialised checkpoint in the folder layout above: a
    Qwen2-VL-architecture backbone with hidden size ``hidden`` (2 text layers,
    1 vision block), a word-level tokenizer, the PIL image processor, a random
    head and LIBERO-like statistics; with ``lora`` also a random LoRA adapter.
    Its config says ``"untrained_head": true``: loading it needs
    ``allow_untrained_head=true``."""
    import torch
    from safetensors.torch import save_file
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2VLConfig, Qwen2VLForConditionalGeneration
    from transformers.models.qwen2_vl import Qwen2VLImageProcessorPil

    out = Path(path)
    (out / "backbone").mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    words = ("pick up put place the a an on in of and to from top bottom left right next between black bowl plate "
             "cookie box ramekin drawer cabinet stove wine bottle rack basket cream cheese ketchup alphabet soup "
             "tomato sauce butter milk orange juice salad dressing bbq mug microwave turn open close it").split()
    specials = ["<unk>", "<pad>", "<|endoftext|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
                "<|video_pad|>"]
    vocab = {t: i for i, t in enumerate(specials + words)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>",
                                   eos_token="<|endoftext|>")
    fast.save_pretrained(out / "backbone")
    vocab_size = 128
    assert len(vocab) <= vocab_size
    config = Qwen2VLConfig(
        text_config=dict(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=vocab_size, max_position_embeddings=2048,
                         bos_token_id=None, eos_token_id=vocab["<|endoftext|>"], pad_token_id=vocab["<pad>"],
                         rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]}),
        vision_config=dict(depth=1, embed_dim=32, hidden_size=hidden, num_heads=2, mlp_ratio=2, patch_size=14,
                           spatial_merge_size=2, temporal_patch_size=2, in_channels=3),
        image_token_id=vocab["<|image_pad|>"], video_token_id=vocab["<|video_pad|>"],
        vision_start_token_id=vocab["<|vision_start|>"], vision_end_token_id=vocab["<|vision_end|>"],
        pad_token_id=vocab["<pad>"], eos_token_id=vocab["<|endoftext|>"],
    )
    model = Qwen2VLForConditionalGeneration(config)
    model.save_pretrained(out / "backbone")
    # 224 px images -> 16x16 patches of 14 px -> 64 merged tokens per image
    Qwen2VLImageProcessorPil(min_pixels=224 * 224, max_pixels=224 * 224).save_pretrained(out / "backbone")
    adapter = None
    if lora:
        from peft import LoraConfig, get_peft_model

        peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                                      init_lora_weights=False))
        peft_model.save_pretrained(out / "adapter")
        adapter = "adapter"
    head_hidden, state_dim, dim = 64, 8, P.ACTION_DIM
    g = torch.Generator().manual_seed(seed + 1)
    head = {
        "fc1.weight": torch.randn(head_hidden, hidden + state_dim, generator=g) * 0.2,
        "fc1.bias": torch.zeros(head_hidden),
        "fc2.weight": torch.randn(chunk_size * dim, head_hidden, generator=g) * 0.2,
        "fc2.bias": torch.zeros(chunk_size * dim),
    }
    save_file(head, str(out / HEAD_FILE))
    # LIBERO-like action ranges (delta position / rotation, gripper unnormalised)
    low = [-0.9375, -0.9375, -0.9375, -0.2, -0.3, -0.375, 0.0]
    high = [0.9375, 0.9375, 0.9375, 0.2, 0.3, 0.375, 1.0]
    stats = {unnorm_key: {"action": {"min": low, "max": high, "q01": [v * 0.9 for v in low[:6]] + [0.0],
                                     "q99": [v * 0.9 for v in high[:6]] + [1.0],
                                     "mask": [True] * 6 + [False]}}}
    (out / P.STARVLA_STATS_FILE).write_text(json.dumps(stats, indent=1))
    (out / CONFIG_FILE).write_text(json.dumps({
        "format": FORMAT, "backbone": "backbone", "adapter": adapter, "chunk_size": chunk_size, "action_dim": dim,
        "state_dim": state_dim, "head_hidden": head_hidden, "image_size": 224, "norm_mode": "min_max",
        "unnorm_key": unnorm_key, "untrained_head": True}, indent=1))
    return out


if __name__ == "__main__":  # python -m policies.vla DIR [--lora]: write a tiny random checkpoint
    import sys

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        sys.exit("usage: python -m policies.vla DIR [--lora]")
    print(build_tiny_checkpoint(args[0], lora="--lora" in sys.argv))
