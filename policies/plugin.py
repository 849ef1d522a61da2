"""The policies and ``harness serve-policy``: declarations only (imports nothing heavy).

Every keyword a policy's constructor takes is declared here once: its default, what it
accepts and whether it changes results (``results=True``: hashed into the run identity).
Paths whose *content* the policy hashes into its ``identity()`` (checkpoints, demo files,
action statistics) are ``results=False``: the same checkpoint moved to another folder is
the same run, and another checkpoint at the same path is another run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional
from urllib.parse import urlsplit

from harness.params import Composite, Group, ParamError, Parsed, fields_of, param
from harness.plugins import AgentPlugin

#: The websocket protocols of the ``remote`` client (equal to policies.protocols.PROTOCOLS;
#: repeated here so that listing plugins imports no numpy; a test keeps them equal).
PROTOCOLS = ("openpi", "starvla")
#: StarVLA's reply forms (equal to policies.protocols.STARVLA_REPLY_FORMS).
STARVLA_REPLY_FORMS = ("normalized", "unnormalized")
#: How StarVLA's normalised actions map back (equal to policies.protocols.NORM_MODES).
NORM_MODES = ("min_max", "q99")
#: The REST deploy protocols of the ``openvla`` client (equal to policies.openvla's names).
OPENVLA_PROTOCOLS = ("openvla", "openvla_oft")
#: Torch dtypes a VLA backbone loads in.
DTYPES = ("float32", "bfloat16", "float16")
#: Where the default policy server listens (loopback: nothing outside this machine reaches it).
LOOPBACK = "127.0.0.1"

_DEVICE = re.compile(r"(cpu|mps|meta|(cuda|xpu|npu|hpu)(:\d+)?)")


def _device(value: str) -> str:
    if not _DEVICE.fullmatch(value):
        raise ValueError("must be a torch device such as cpu, cuda or cuda:1")
    return value


def _server_url(value: str, schemes: tuple[str, str], example: str) -> str:
    """``value`` as a URL of one of ``schemes``; ``host:port`` alone gets the first scheme."""
    text = value.strip()
    if "://" not in text and re.fullmatch(r"[^\s/:]+:\d+", text):
        text = f"{schemes[0]}://{text}"
    try:
        parts = urlsplit(text)
        ok = parts.scheme in schemes and bool(parts.hostname) and (parts.port is None or 0 < parts.port < 65536)
    except ValueError:
        ok = False
    if not ok:
        article = "an" if schemes[0][0] in "aeiouh" else "a"
        raise ValueError(f"must be {article} {schemes[0]}:// or {schemes[1]}:// URL such as {example} (or host:port)")
    return text


def ws_url(value: str) -> str:
    """A policy server's address as a ws:// or wss:// URL; ``host:port`` alone means ``ws://host:port``."""
    return _server_url(value, ("ws", "wss"), "ws://127.0.0.1:8000")


def http_url(value: str) -> str:
    """A REST server's address as an http:// or https:// URL; ``host:port`` alone means ``http://host:port``."""
    return _server_url(value, ("http", "https"), "http://127.0.0.1:8777")


@dataclass
class ZeroParams:
    chunk: int = param(10, ge=1, results=False,
                       help="actions per call: only the number of round trips (every action is the same)")
    action: Optional[List[float]] = param(None, help="the 7 values sent every step; null: LIBERO's dummy action "
                                                     "(zero deltas, gripper open)")

    def __post_init__(self) -> None:
        if self.action is not None and len(self.action) != 7:
            raise ParamError("action", f"must be a list of 7 numbers, got {len(self.action)} values")


@dataclass
class ReplayParams:
    path: str = param(help="a demo file (HDF5 data/<demo>/actions, or NPZ) or a folder of "
                           "<task_name>_demo.hdf5 / .npz (each file's SHA-256 is in the identity, not where "
                           "it lies)", results=False)
    demo: str = param("0", help="which demonstration: an index (demo_<i>), a key, or init_index (demo_<i> on "
                                "trial i)")
    after: str = param("hold", choices=("hold", "stop"),
                       help="when the demo runs out: hold the dummy action, or stop (an empty plan)")
    chunk: Optional[int] = param(None, ge=1, results=False,
                                 help="actions returned per call (null: the rest of the demo); open-loop, so "
                                      "only the number of round trips")
    replan_steps: Optional[int] = param(None, ge=1, results=False,
                                        help="actions executed per call (null: the whole chunk); the demo's "
                                             "cursor follows, so the executed actions are the same")


@dataclass
class RemoteParams:
    url: str = param("ws://127.0.0.1:8000", check=ws_url, results=False, example="ws://127.0.0.1:8001", secret="url",
                     help="the policy server (ws:// or wss://; host:port means ws://host:port); the metadata "
                          "it reports is in the identity, not its address")
    protocol: str = param("openpi", choices=PROTOCOLS,
                          help="openpi (one request per episode) or starvla (one examples list per batch)")
    replan_steps: Optional[int] = param(None, ge=1,
                                        help="actions executed per request; null: what the server reports, else "
                                             "openpi 5 (its LIBERO client), starvla the whole chunk")
    resize: Optional[int] = param(None, ge=0, help="image side sent; null: 224 (both protocols' LIBERO clients); "
                                                   "0: the 256 px frames as rendered")
    timeout_s: float = param(120.0, gt=0, results=False, help="seconds to wait for the server to connect or reply")
    connect_retries: int = param(5, ge=1, results=False, help="attempts to (re)connect before giving up")
    backoff_s: float = param(0.5, ge=0, results=False, help="first wait between attempts (doubles each time)")
    max_backoff_s: float = param(8.0, ge=0, results=False, help="longest wait between attempts")
    checkpoint_id: Optional[str] = param(None, example="ckpt-a",
                                         help="names the checkpoint when the server's metadata is empty "
                                              "(openpi's server sends none unless configured)")
    api_key: Optional[str] = param(None, results=False, example="secret", secret="value",
                                   help="sent as 'Authorization: Api-Key ...' (hosted servers); never stored")


@dataclass
class StarVLAParams:
    stats_path: Optional[str] = param(None, kind="path", results=False,
                                      help="the checkpoint's dataset_statistics.json (or its folder); null: the "
                                           "statistics the server reports (their digest is in the identity)")
    unnorm_key: Optional[str] = param(None, example="libero_spatial_no_noops",
                                      help="which dataset's statistics (null: the only one in the file)")
    norm_mode: str = param("min_max", choices=NORM_MODES, help="how normalised actions map back: min_max or q99")
    sampling: Optional[Dict[str, Any]] = param(None, help="sampling settings sent with each request; null: "
                                                          "StarVLA's LIBERO client's (no sampling, DDIM 10 steps)")
    max_batch: Optional[int] = param(None, ge=1, results=False, help="most examples per request (null: the batch)")
    send_state: bool = param(False, help="add the 8-value state to each example (StarVLA's LIBERO client sends "
                                         "none)")
    reply_form: Optional[str] = param(None, choices=STARVLA_REPLY_FORMS,
                                      help="normalized (data.normalized_actions, un-normalised here) or unnormalized "
                                           "(data.actions: StarVLA's model server v3, resized with PIL bilinear); "
                                           "null: detected from the server's metadata (the form used is in the "
                                           "identity)")


class RemoteDeclaration(Composite):
    """The ``remote`` client's parameters: its own, and with ``protocol=starvla`` the
    StarVLA ones (given with ``protocol=openpi`` they are refused, not ignored)."""

    OWN = Group("remote", RemoteParams)
    STARVLA = Group("protocol starvla", StarVLAParams)

    def groups(self, values: Mapping[str, Any], suite: str | None) -> list[Group]:
        return [self.OWN, self.STARVLA] if values.get("protocol") == "starvla" else [self.OWN]

    def all_groups(self) -> list[Group]:
        return [self.OWN, self.STARVLA]

    def parse(self, values: Mapping[str, Any], suite: str | None) -> Parsed:
        """A StarVLA setting left at null or its default with ``protocol=openpi`` is no
        setting (a composed config lists every key); any other value is refused."""
        used = {f.name for g in self.groups(values, suite) for f in fields_of(g.params)}
        idle = {f.name: f.default for g in self.all_groups() for f in fields_of(g.params) if f.name not in used}
        kept = {k: v for k, v in values.items() if k not in idle or (v is not None and v != idle[k])}
        return super().parse(kept, suite)


@dataclass
class OpenVLAParams:
    protocol: str = param("openvla", choices=OPENVLA_PROTOCOLS,
                          help="openvla (openvla/openvla's deploy.py: one action per query, the client crops) or "
                               "openvla_oft (moojink/openvla-oft's deploy.py: both cameras + state, an action chunk)")
    url: Optional[str] = param(None, check=http_url, results=False, example="http://127.0.0.1:8777", secret="url",
                               help="the deploy server (its /act is appended); null: 127.0.0.1 on the script's "
                                    "default port (8000 openvla, 8777 openvla_oft)")
    checkpoint_id: Optional[str] = param(None, example="openvla-7b-oft-finetuned-libero-spatial",
                                         help="names the checkpoint served (the deploy servers report nothing; "
                                              "in the identity)")
    center_crop: Optional[bool] = param(None, help="openvla: centre-crop 0.9 of the area before sending (for "
                                                   "checkpoints trained with image augmentation); null: true, the "
                                                   "eval script's default. openvla_oft: the server's flag, refused")
    unnorm_key: Optional[str] = param(None, example="libero_spatial_no_noops",
                                      help="openvla: the dataset statistics the server un-normalises with; null: "
                                           "the task suite's name, else <name>_no_noops (the eval script's rule). "
                                           "openvla_oft: the server's flag, refused")
    num_open_loop_steps: Optional[int] = param(None, ge=1,
                                               help="openvla_oft: actions of each chunk executed before the next "
                                                    "query (the eval script's deque: the last N of a longer "
                                                    "chunk); null: 8. openvla: one action per query, refused")
    max_concurrent_calls: int = param(1, ge=1, le=64, results=False,
                                      help="queries in flight at once (one observation each)")
    timeout_s: float = param(120.0, gt=0, results=False,
                             help="seconds of wall clock one query may take (connecting, sending, the whole reply)")
    retries: int = param(5, ge=1, results=False, help="attempts per query on refused connections, timeouts, HTTP 5xx")
    backoff_s: float = param(0.5, ge=0, results=False, help="first wait between attempts (doubles each time)")
    max_backoff_s: float = param(8.0, ge=0, results=False, help="longest wait between attempts")

    def __post_init__(self) -> None:
        if self.protocol == "openvla_oft":
            for name in ("center_crop", "unnorm_key"):
                if getattr(self, name) is not None:
                    raise ParamError(name, "with protocol=openvla_oft it is the deploy server's setting (start "
                                           f"vla-scripts/deploy.py with --{name} ...), not the client's")
        elif self.num_open_loop_steps is not None:
            raise ParamError("num_open_loop_steps", "protocol=openvla answers one action per query")


@dataclass
class VLAParams:
    checkpoint: str = param(results=False, help="folder with vla_config.json (layout: policies/vla.py); the hashes of its "
                                 "config, head, backbone and adapter are in the identity, not its location")
    backbone: Optional[str] = param(None, results=False, example="Qwen/Qwen2-VL-2B-Instruct",
                                    help="swap the backbone (folder or hub id; null: the checkpoint's); its hash "
                                         "(or hub id) is in the identity")
    adapter: Optional[str] = param(None, results=False, example="none",
                                   help="LoRA folder; none drops the checkpoint's adapter; null: the checkpoint's; "
                                        "its hash is in the identity")
    device: str = param("cpu", check=_device, results=False, help="torch device the model runs on")
    dtype: str = param("float32", choices=DTYPES, help="torch dtype of the backbone and head")
    replan_steps: Optional[int] = param(None, ge=1, help="actions executed per call; null: the whole chunk")
    max_batch: int = param(16, ge=1, results=False, help="observations per forward pass")
    unnorm_key: Optional[str] = param(None, example="libero_goal",
                                      help="which dataset's statistics; null: vla_config.json's")
    allow_untrained_head: bool = param(False, results=False,
                                       help="load a head that was never trained (vla_config.json marks it untrained "
                                            "or carries no head_training record): tests and smoke runs only; a "
                                            "random head scores 0 % (the head's hash is in the identity)")


@dataclass
class LeRobotParams:
    policy: str = param(results=False, help="LeRobot checkpoint folder or hub id (e.g. a SmolVLA / pi0 fine-tuned on LIBERO); "
                             "a folder's hash, or the hub id and revision, is in the identity")
    device: str = param("cpu", check=_device, results=False, help="torch device the policy runs on")
    revision: Optional[str] = param(None, results=False, example="main",
                                    help="hub revision of a hub id (in the identity with it)")
    replan_steps: Optional[int] = param(None, ge=1, help="actions executed per call; null: the policy's "
                                                         "n_action_steps")


@dataclass
class ServeParams:
    """``harness serve-policy``'s own settings (beside ``policy=`` and ``policy.params.*``)."""

    host: str = param(LOOPBACK, results=False, help="address to listen on (0.0.0.0 exposes the server: a warning "
                                                    "says so; the protocols have no authentication)")
    port: int = param(8000, ge=0, le=65535, results=False,
                      help="port to listen on; 0: any free port (the port bound is printed)")
    max_batch: int = param(32, ge=1, results=False, help="most observations (from all connections) per policy call")
    max_wait_s: float = param(0.01, ge=0, results=False,
                              help="how long the first request of a batch waits for others (seconds)")
    stats_path: Optional[str] = param(None, kind="path", results=False,
                                      help="dataset_statistics.json (or its folder) StarVLA requests are "
                                           "normalised with; null: the policy's own, if it has any")
    unnorm_key: Optional[str] = param(None, help="which dataset of stats_path (null: the only one)")
    norm_mode: str = param("min_max", choices=NORM_MODES, help="how StarVLA replies are normalised: min_max or q99")
    max_connections: int = param(64, ge=1, le=100_000, results=False,
                                 help="connections served at once; at the limit a new client replaces the one idle "
                                      "longest (5 s or more), and is refused (HTTP 503) only when all are busy")
    max_frame_mb: int = param(64, ge=1, le=4096, results=False, help="largest frame accepted (MiB)")
    idle_timeout_s: float = param(120.0, gt=0, le=86_400, results=False,
                                  help="a connection with no request pending that sends nothing this long is closed")
    max_inflight_mb: int = param(256, ge=1, le=65_536, results=False,
                                 help="frame bytes received and not yet answered, over all connections (MiB); past "
                                      "it the server reads no more frames until replies free room (one larger "
                                      "frame is served alone)")


ZERO = AgentPlugin(name="zero", kind="policy", target="policies.zero:ZeroPolicy", params=ZeroParams,
                   summary="LIBERO's dummy action (no-op, gripper open) every step")
REPLAY = AgentPlugin(name="replay", kind="policy", target="policies.replay:ReplayPolicy", params=ReplayParams,
                     summary="plays a demonstration's actions (HDF5/NPZ) open-loop")
REMOTE = AgentPlugin(name="remote", kind="policy", target="policies.remote:RemotePolicy", extra="policies",
                     params=RemoteDeclaration(),
                     summary="a policy server over websockets (protocol=openpi | starvla)")
OPENVLA = AgentPlugin(name="openvla", kind="policy", target="policies.openvla:OpenVLAPolicy", extra="policies",
                      params=OpenVLAParams,
                      summary="OpenVLA / OpenVLA-OFT deploy server over REST (protocol=openvla | openvla_oft)")
VLA = AgentPlugin(name="vla", kind="policy", target="policies.vla:VLAPolicy", extra="models", params=VLAParams,
                  modules=("torch", "transformers"),
                  summary="in-process minimal VLA: HF VLM backbone (+LoRA) + action-chunk head")
LEROBOT = AgentPlugin(name="lerobot", kind="policy", target="policies.lerobot_policy:LeRobotPolicy",
                      params=LeRobotParams,
                      summary="LeRobot PreTrainedPolicy in-process (needs lerobot: Python >= 3.12; else serve it)")
