"""How far the ``openvla`` client's image steps are from OpenVLA's own (TensorFlow) ones, and how far
the obvious shortcuts would be: each variant's 224 px frame against the recorded output of the eval
scripts' functions (tests/policies/data/openvla_preprocess.npz, tests/policies/openvla_goldens.py).

    python benchmarks/openvla_preprocess.py
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

from policies import openvla as O

GOLD = Path(__file__).resolve().parents[1] / "tests" / "policies" / "data" / "openvla_preprocess.npz"


def main() -> None:
    g = np.load(GOLD)
    print("| frame | variant | values differing | max difference |\n|---|---|---|---|")
    for cam, ref in (("agentview", g["openvla_resized_0"]), ("wrist", g["oft_wrist_image_0"])):
        src = g[f"in_{cam}_0"]
        buf = io.BytesIO()
        Image.fromarray(src).save(buf, "JPEG", quality=O.JPEG_QUALITY)
        variants = {
            "this client": O.resize_for_policy(src),
            "JPEG decoded with the accurate IDCT (Pillow)": O.resize_lanczos3(np.asarray(Image.open(buf).convert("RGB"))),
            "no JPEG round trip": O.resize_lanczos3(src),
            "Pillow's Lanczos resize": np.asarray(Image.fromarray(O.jpeg_round_trip(src)).resize((224, 224),
                                                                                                 Image.LANCZOS)),
        }
        for name, out in variants.items():
            d = np.abs(out.astype(int) - ref)
            print(f"| {cam} | {name} | {int((d > 0).sum())} / {d.size} | {d.max()} |")


if __name__ == "__main__":
    main()
