"""Tiny random-weight VLM checkpoints for tests and benchmarks.

Built from the real configuration classes (Qwen2-VL, Qwen2.5-VL) at a few
thousand parameters per layer, with a byte-level BPE tokenizer trained here on
the skill language, and saved with ``save_pretrained`` so that they load
through exactly the code path of a downloaded checkpoint. Two LoRA adapters
(peft) on the Qwen2.5-VL base stand in for the FAVOR-SFT and CFG-SFT variants.

torchvision cannot be installed beside torch 2.13 here, and the stock
Qwen2-VL processor loads a video processor that needs it. The checkpoints are
therefore saved with an *image-only* processor: a subclass defined in a module
inside the checkpoint folder, referenced by ``auto_map`` (what ``transformers
serve --trust-remote-code`` loads). ``planners.vlm.backends`` loads both this
and the stock processor.
"""

from __future__ import annotations

import json
from pathlib import Path

#: Kept small so that one forward pass with an image takes milliseconds on a CPU.
HIDDEN = 64
VOCAB = 2048
#: Image size bounds of the tiny processor (pixels): 112x112 -> 8x8 patches -> 16 image tokens.
MIN_PIXELS = 56 * 56
MAX_PIXELS = 112 * 112

SPECIALS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
    "<|image_pad|>", "<|video_pad|>",
]

#: Our own minimal chat template (Qwen-style role markers; images as vision tokens).
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' or part['type'] == 'image_url' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

PROCESSOR_MODULE = '''"""Image-only Qwen2-VL processor (no video processor, so no torchvision)."""
from transformers import Qwen2VLProcessor


class ImageOnlyQwen2VLProcessor(Qwen2VLProcessor):
    attributes = ["image_processor", "tokenizer"]

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        super().__init__(image_processor=image_processor, tokenizer=tokenizer, video_processor=None,
                         chat_template=chat_template, **kwargs)
'''

#: The same for a Qwen3-VL checkpoint (its own processor class: timestamps in video prompts).
PROCESSOR_MODULE_QWEN3 = PROCESSOR_MODULE.replace("Qwen2-VL", "Qwen3-VL").replace("Qwen2VL", "Qwen3VL")


def _corpus() -> list[str]:
    from envs.eb_alfred.skills import global_actions

    words = list(global_actions())
    words += ["action_id", "action_name", "executable_plan", "language_plan", "visual_state_description",
              "reasoning_and_reflection", "Step", "env feedback", "Last action executed successfully.",
              "Last action is invalid.", "human instruction", '{"": [], 0123456789}']
    from envs.eb_alfred import prompt

    texts = [prompt.RULES, prompt.FIRST_CALL_SUFFIX, prompt.LATER_CALL_SUFFIX, prompt.OUTPUT_TEMPLATE,
             prompt.HISTORY_LINE, prompt.INSTRUCTION]
    texts += [", ".join(f"\naction id {i}: {a}" for i, a in enumerate(global_actions()))]
    return (words + texts) * 4


def build_tokenizer(out: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB - len(SPECIALS), special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_corpus(), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        extra_special_tokens={"image_token": "<|image_pad|>", "video_token": "<|video_pad|>",
                              "vision_start_token": "<|vision_start|>", "vision_end_token": "<|vision_end|>"},
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


#: The weight-bound benchmark checkpoint (benchmarks/planner_batching.py --weight-bound): Qwen2.5-VL's
#: real vocabulary (its output layer is read in full at every decoding step) and a wider hidden size
#: with 8 query heads of 64 on one key/value head (Qwen2.5-VL-7B has 28 on 4, of 128). Weights read per
#: step: lm_head 151,936 x 512 plus two layers, ~330 MB in float32; KV cache per conversation at the
#: protocol's ~6.8k-token prompt: 2 layers x (K, V) x 64 x 6.8k x 4 B, ~7 MB -- a ratio of ~47, the
#: order of a real checkpoint's (Qwen2.5-VL-7B: ~15 GB of weights vs ~0.4 GB of cache, ~37).
WEIGHT_BOUND = dict(hidden=512, vocab_size=151936, intermediate_size=1024, num_attention_heads=8,
                    mrope_section=[8, 12, 12], dtype="bfloat16")


def build_base(out: Path, family: str = "qwen2_5_vl", seed: int = 0, weight_bound: bool = False) -> Path:
    """Save a tiny random-weight checkpoint of ``family`` ("qwen2_vl", "qwen2_5_vl" or "qwen3_vl") to ``out``;
    ``weight_bound``: the wider one with the real vocabulary (:data:`WEIGHT_BOUND`)."""
    import torch
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(out)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIALS}
    hidden, sizes = HIDDEN, dict(vocab_size=len(tokenizer), intermediate_size=128, num_attention_heads=2)
    mrope = [4, 6, 6]
    if weight_bound:
        hidden, mrope = WEIGHT_BOUND["hidden"], WEIGHT_BOUND["mrope_section"]
        sizes = {k: WEIGHT_BOUND[k] for k in ("vocab_size", "intermediate_size", "num_attention_heads")}
    text = dict(hidden_size=hidden, num_hidden_layers=2, num_key_value_heads=1, max_position_embeddings=4096,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": mrope}, **sizes,
                bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"],
                pad_token_id=ids["<|endoftext|>"])
    common = dict(image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                  vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    torch.manual_seed(seed)
    if family == "qwen2_vl":
        from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

        vision = dict(depth=1, embed_dim=32, hidden_size=HIDDEN, num_heads=2, mlp_ratio=2)
        model = Qwen2VLForConditionalGeneration(Qwen2VLConfig(text_config=text, vision_config=vision, **common))
    elif family == "qwen2_5_vl":
        from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

        vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=hidden,
                      fullatt_block_indexes=[0], window_size=112)
        model = Qwen2_5_VLForConditionalGeneration(Qwen2_5_VLConfig(text_config=text, vision_config=vision, **common))
    elif family == "qwen3_vl":
        from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

        # head_dim 32: mrope sections (t, h, w) over its 16 rotary pairs; one deepstack layer.
        text3 = {**text, "head_dim": 32, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                                              "mrope_section": [6, 5, 5], "mrope_interleaved": True}}
        vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=hidden,
                      patch_size=16, spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=64,
                      deepstack_visual_indexes=[0])
        model = Qwen3VLForConditionalGeneration(Qwen3VLConfig(text_config=text3, vision_config=vision, **common))
    else:
        raise ValueError(f"unknown tiny family {family!r}")
    if weight_bound:
        # Output rows past the tokenizer's vocabulary are zero, as a real checkpoint's padding rows
        # never win: a random model's greedy choice stays a token the tokenizer can decode.
        with torch.no_grad():
            model.get_output_embeddings().weight[len(tokenizer):] = 0
        # Saved in bfloat16, as real checkpoints are (Qwen2.5-VL-7B's config: "torch_dtype": "bfloat16"),
        # so ``dtype=auto`` loads it in the precision a real one runs in.
        model.to(getattr(torch, WEIGHT_BOUND["dtype"]))
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.save_pretrained(out)
    if family == "qwen3_vl":  # Qwen3-VL's patches are 16 px (its processor config: patch_size 16)
        image_processor = Qwen2VLImageProcessorPil(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS, patch_size=16,
                                                   image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
        module, cls_name = PROCESSOR_MODULE_QWEN3, "ImageOnlyQwen3VLProcessor"
    else:
        image_processor = Qwen2VLImageProcessorPil(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)
        module, cls_name = PROCESSOR_MODULE, "ImageOnlyQwen2VLProcessor"
    (out / "image_only_processor.py").write_text(module)
    namespace: dict = {}
    exec(compile(module, str(out / "image_only_processor.py"), "exec"), namespace)
    processor = namespace[cls_name](image_processor=image_processor, tokenizer=tokenizer, chat_template=CHAT_TEMPLATE)
    processor.save_pretrained(out)
    auto = {"AutoProcessor": f"image_only_processor.{cls_name}"}
    for name in ("processor_config.json", "tokenizer_config.json"):
        path = out / name
        cfg = json.loads(path.read_text()) if path.exists() else {}
        cfg["auto_map"] = {**cfg.get("auto_map", {}), **auto}
        if name == "processor_config.json":
            cfg["processor_class"] = cls_name
        path.write_text(json.dumps(cfg, indent=2))
    return out


def build_adapter(base: Path, out: Path, seed: int) -> Path:
    """A LoRA adapter on ``base`` with random (non-zero) B matrices, saved with peft."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_pretrained(base)
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    peft_model = get_peft_model(model, lora)
    peft_model.save_pretrained(out)
    return Path(out)


def build_all(root: Path) -> dict[str, Path]:
    """base (Qwen2.5-VL), favor (LoRA), cfg (LoRA), qwen2 (a Qwen2-VL base) under ``root``; cached."""
    root = Path(root)
    paths = {"base": root / "qwen2_5_vl", "favor": root / "favor_lora", "cfg": root / "cfg_lora",
             "qwen2": root / "qwen2_vl"}
    done = root / "DONE"
    if not done.exists():
        build_base(paths["base"], "qwen2_5_vl", seed=0)
        build_base(paths["qwen2"], "qwen2_vl", seed=1)
        build_adapter(paths["base"], paths["favor"], seed=2)
        build_adapter(paths["base"], paths["cfg"], seed=3)
        done.write_text("ok")
    return paths


def build_weight_bound(root: Path) -> Path:
    """The weight-bound Qwen2.5-VL benchmark checkpoint (:data:`WEIGHT_BOUND`) under ``root``; cached."""
    out = Path(root) / "qwen2_5_vl_weight_bound_bf16"
    if not (out / "DONE").exists():
        build_base(out, "qwen2_5_vl", seed=4, weight_bound=True)
        (out / "DONE").write_text("ok")
    return out


if __name__ == "__main__":
    import sys

    print(build_all(Path(sys.argv[1])))
