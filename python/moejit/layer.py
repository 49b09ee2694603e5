"""moejit.MoeLayer: the fused MoE layer of a decode step, on torch (or any DLPack) tensors."""

from __future__ import annotations

import contextlib
import json
from typing import Any, Dict, Optional

from . import _moejit
from ._config import ConfigLike, config_json
from ._tensors import check_device, describe, pointers
from .errors import MoejitError

_U8 = ("uint8",)
# What a packed layout depends on: the experts' count (the rank's, with ranks) and shapes, the gate/up row order
# and the recipe. Not the name, the batch capacity, the biases (arrays of their own) or the activation's constants.
_PACKED_LAYOUT_KEYS = ("experts", "ranks", "hidden", "intermediate", "shared_expert", "gate_up", "recipe")
_E4M3 = ("float8_e4m3fn", "uint8")  # E4M3 values, or their raw bytes


def weight_shapes(config: Dict[str, Any]) -> Dict[str, tuple]:
    """The checkpoint-layout MXFP4 shapes the layer takes (README, "Weights"). With a fused shared
    expert every array holds one more expert, the shared one last."""
    e = config["experts"] // config["ranks"] + (1 if config.get("shared_expert") else 0)
    h, i = config["hidden"], config["intermediate"]
    shapes = {"w1": (e, 2 * i, h // 2), "s1": (e, 2 * i, h // 32), "w2": (e, h, i // 2), "s2": (e, h, i // 32)}
    if config.get("biases"):
        shapes.update({"b1": (e, 2 * i), "b2": (e, h)})  # BF16, b1 in W1's row order
    return shapes


def forward_args(config: Dict[str, Any], device: int, input_bf16: bool, x: Any, topk_ids: Any,
                 topk_weights: Any, out: Any, x_scales: Any = None) -> Dict[str, int]:
    """The device pointers of one forward, after every check on its tensors."""
    tokens = int(x.shape[0]) if hasattr(x, "shape") and len(x.shape) > 0 else 0
    h, k = config["hidden"], config["top_k"]
    if not 1 <= tokens <= config["token_capacity"]:
        raise MoejitError(f"x: batch B = {tokens} is invalid: must be in [1, {config['token_capacity']}] "
                          "(token_capacity)", "x")
    specs = []
    if input_bf16:
        specs.append(("x", x, (tokens, h), ("bfloat16",)))
        if x_scales is not None:
            raise MoejitError("x_scales: a layer with input_bf16 quantizes x itself; pass no x_scales", "x_scales")
    else:
        specs.append(("x", x, (tokens, h), _E4M3))
        # UE8M0 codes [B, H/32] as bytes, or packed four to an int32 word [B, H/128] where H allows.
        if h % 128 == 0 and not str(getattr(x_scales, "dtype", "")).endswith("uint8"):
            specs.append(("x_scales", x_scales, (tokens, h // 128), ("int32",)))
        else:
            specs.append(("x_scales", x_scales, (tokens, h // 32), ("uint8",)))
    specs += [("topk_ids", topk_ids, (tokens, k), ("int32",)),
              ("topk_weights", topk_weights, (tokens, k), ("float32",)),
              ("out", out, (tokens, h), ("bfloat16",))]
    p = pointers(specs, device)
    args = {"x_q": 0 if input_bf16 else p["x"], "x_scales": p.get("x_scales", 0),
            "x_bf16": p["x"] if input_bf16 else 0, "topk_ids": p["topk_ids"], "topk_weights": p["topk_weights"],
            "y": p["out"]}
    args["tokens"] = tokens
    return args


def workspace_pointer(workspace: Any, need: int, device: int) -> int:
    """The device pointer of a caller's workspace: a contiguous uint8 vector of at least `need` bytes."""
    info = describe(workspace, "workspace")
    if info.dtype not in ("uint8", "int8"):
        raise MoejitError(f"workspace: dtype {info.dtype} is invalid: must be uint8", "workspace")
    if len(info.shape) != 1 or info.shape[0] < need:
        raise MoejitError(f"workspace: shape {list(info.shape)} is invalid: must be [n] with n >= {need} "
                          "(workspace_bytes)", "workspace")
    if not info.contiguous:
        raise MoejitError("workspace is not contiguous", "workspace")
    return check_device(info, "workspace", device)


class MoeLayer:
    """The MoE layer of one decode step on one GPU.

    ``config`` is a built-in model name (``"glm5.2"``, ``"dsv4.1-flash"``), a
    JSON file or a dict. ``w1, s1, w2, s2`` are the checkpoint's MXFP4 expert
    weights and scales on the GPU, uint8 (``weight_shapes(config)``); the
    layer packs them into its own layout on construction and keeps no
    reference to them. Options: ``path`` ("fast", the default, or "exact"), ``input_bf16``,
    ``tile_n``, ``stages``, ``ctas_per_sm``, ``schedule`` ("stream", "units" or "items"; default: planned), ``device``,
    ``check_routes_on_host``, ``pdl`` (PDL between the roles; default: planned, on up to B = 4 on sm_90a's
    fast path and up to B = 2 on its exact path), ``use_graphs``.
    """

    def __init__(self, config: ConfigLike, w1: Any, s1: Any, w2: Any, s2: Any, b1: Any = None, b2: Any = None,
                 **options: Any) -> None:
        self._setup(config, w1, options)
        shapes = weight_shapes(self.config)
        ptrs = pointers([(name, t, shapes[name], _U8) for name, t in (("w1", w1), ("s1", s1), ("w2", w2),
                                                                       ("s2", s2))], self.device)
        b = self._biases(b1, b2)
        with self._on_device():
            self._layer = _moejit.Layer(self._config_json, ptrs["w1"], ptrs["s1"], ptrs["w2"], ptrs["s2"], b["b1"],
                                        b["b2"], options)

    @classmethod
    def from_packed(cls, config: ConfigLike, packed: Dict[str, Any], w1: Any, w2: Any, b1: Any = None,
                    b2: Any = None, **options: Any) -> "MoeLayer":
        """A layer over weights packed offline (``moejit.pack_weights``) and uploaded:
        ``w1``, ``w2`` are uint8 CUDA tensors holding ``packed["w1"]``, ``packed["w2"]``.
        The layer reads them in place (keep them alive) and holds no second copy."""
        self = cls.__new__(cls)
        self._setup(config, w1, options)
        if "config" in packed:  # packed by this version: their layout is that configuration's
            packed_for = json.loads(packed["config"])
            differ = [k for k in _PACKED_LAYOUT_KEYS if packed_for.get(k) != self.config.get(k)]
            if differ:
                shown = ", ".join(f"{k} {packed_for.get(k)!r} (the layer's: {self.config.get(k)!r})" for k in differ)
                raise MoejitError(f"packed: packed for another configuration: {shown}; the kernels would read "
                                  "past or misread them", "packed")
        ptrs = pointers([("w1", w1, (len(packed["w1"]),), _U8), ("w2", w2, (len(packed["w2"]),), _U8)], self.device)
        b = self._biases(b1, b2)
        with self._on_device():
            self._layer = _moejit.Layer.from_packed(self._config_json, ptrs["w1"], ptrs["w2"],
                                                    int(packed["top_scale_code"]), str(packed["atom"]), b["b1"],
                                                    b["b2"], options, bool(packed.get("subnormal_weight_scales", True)))
        self._packed = (w1, w2)  # the layer reads them: keep them alive with it
        return self

    def _on_device(self):
        """The layer's GPU made current for its construction (the C++ layer builds in the current context and
        refuses another GPU's), after torch's work there is done: weights written on a side stream must be
        complete before the layer reads them, which it does on none of torch's streams."""
        torch = _torch_or_none()
        if torch is None or not torch.cuda.is_available():
            return contextlib.nullcontext()
        torch.cuda.synchronize(self.device)
        return torch.cuda.device(self.device)

    def _biases(self, b1: Any, b2: Any) -> Dict[str, int]:
        """The BF16 biases' pointers (a config with "biases": true needs both; others take none)."""
        if not self.config.get("biases"):
            for name, t in (("b1", b1), ("b2", b2)):
                if t is not None:
                    raise MoejitError(f"{name}: the config has no biases (set \"biases\": true to use them)", name)
            return {"b1": 0, "b2": 0}
        shapes = weight_shapes(self.config)
        return pointers([(name, t, shapes[name], ("bfloat16",)) for name, t in (("b1", b1), ("b2", b2))],
                        self.device)

    def _setup(self, config: ConfigLike, w1: Any, options: Dict[str, Any]) -> None:
        """The config, and the device: options["device"], else w1's (set into options for the C++ layer)."""
        self._config_json = config_json(config)
        self.config: Dict[str, Any] = json.loads(self._config_json)
        device = options.get("device")
        if device is None:
            info = describe(w1, "w1")
            device = info.index if info.device == "cuda" and info.index >= 0 else 0
        options["device"] = self.device = int(device)
        # W4A16 has one input format, BF16 x: the recipe implies input_bf16 (as the planner does).
        self.input_bf16 = bool(options.get("input_bf16", False)) or self.config.get("recipe") == "w4a16"
        self._handle: Optional[int] = None

    @property
    def workspace_bytes(self) -> int:
        """Device memory of the workspace each stream gets on its first forward."""
        return self._layer.workspace_bytes

    def plan(self, tokens: int) -> Dict[str, Any]:
        """What a forward of ``tokens`` launches (grids, threads, SMEM, path, tile_n, ...)."""
        return json.loads(self._layer.plan_json(tokens))

    def __call__(self, x: Any, topk_ids: Any, topk_weights: Any, out: Any = None, *, x_scales: Any = None,
                 workspace: Any = None, stream: Optional[int] = None) -> Any:
        """``y = sum_j topk_weights[:, j] * expert_{topk_ids[:, j]}(x)``, BF16 ``[B, hidden]``.

        ``x`` is E4M3 ``[B, hidden]`` with ``x_scales`` uint8 ``[B, hidden/32]`` (or int32 ``[B, hidden/128]``),
        or BF16 ``[B, hidden]`` for a layer built with ``input_bf16=True``;
        ``topk_ids`` int32 and ``topk_weights`` float32, ``[B, top_k]``. ``out``
        is allocated (with torch) when not given. ``stream`` is a CUstream as
        an integer; by default torch's current stream on the layer's device.
        ``workspace`` is the caller's (uint8, at least ``workspace_bytes``,
        zeroed once before its first use); layers with the same config and
        options that run in sequence on one stream may share one. Without it
        the layer uses its own, one per stream.
        """
        if out is None:
            # x first: its batch sizes the allocation (a 1-D x of H elements would have allocated [H, hidden]).
            shape = tuple(describe(x, "x").shape)
            if len(shape) != 2 or shape[1] != self.config["hidden"]:
                raise MoejitError(f"x: shape {list(shape)} is invalid: must be [B, {self.config['hidden']}]", "x")
            torch = _torch_or_none()
            if torch is None:
                raise MoejitError("out is required when torch is not installed (moejit allocates it with torch)",
                                  "out")
            out = torch.empty((shape[0], self.config["hidden"]), dtype=torch.bfloat16, device=f"cuda:{self.device}")
        args = forward_args(self.config, self.device, self.input_bf16, x, topk_ids, topk_weights, out, x_scales)
        if stream is None:
            torch = _torch_or_none()
            stream = torch.cuda.current_stream(self.device).cuda_stream if torch is not None else 0
        ws = 0 if workspace is None else workspace_pointer(workspace, self.workspace_bytes, self.device)
        self._layer.forward(args["x_q"], args["x_scales"], args["x_bf16"], args["topk_ids"],
                            args["topk_weights"], args["y"], args["tokens"], ws, int(stream))
        return out

    def op(self, x: Any, topk_ids: Any, topk_weights: Any, x_scales: Any = None) -> Any:
        """The forward as the torch op ``torch.ops.moejit.moe`` (for torch.compile and CUDA graphs)."""
        from . import torch_ops
        if self._handle is None:
            self._handle = torch_ops.register(self)
        return torch_ops.moe(self._handle, x, x_scales, topk_ids, topk_weights)

    def release_stream(self, stream: int) -> None:
        """Waits for ``stream``, then frees its workspace and graphs."""
        self._layer.release_stream(int(stream))


def _torch_or_none():
    try:
        import torch
        return torch
    except ImportError:
        return None
