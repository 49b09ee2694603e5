"""moejit: JIT-compiled fused MoE layers for the decode step (MXFP4 experts).

    import moejit
    layer = moejit.MoeLayer("glm5.2", w1, s1, w2, s2)        # torch CUDA tensors, uint8
    y = layer(x_q, topk_ids, topk_weights, x_scales=x_s)       # BF16 [B, hidden]
    moejit.plan("glm5.2", 8)                                   # what B = 8 launches (no GPU)
    moejit.precompile("glm5.2", "1-256", targets=["sm_90a"])   # fill the kernel cache (no GPU)

Errors are ``moejit.MoejitError`` (a ``ValueError``) with ``.field`` naming
the refused input. The kernel cache lives in ``MOEJIT_CACHE_DIR`` (else
``$XDG_CACHE_HOME/moejit`` or ``~/.cache/moejit``).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Iterable, Optional, Sequence, Union

from . import _moejit
from ._config import ConfigLike, config, config_json
from .errors import MoejitError
from .layer import MoeLayer, weight_shapes

__version__ = _moejit.version()
__all__ = ["MoeLayer", "MoejitError", "builtin_models", "builtin_devices", "config", "plan", "precompile",
           "weight_shapes", "workspace_bytes", "pack_weights", "__version__"]


def builtin_models() -> list:
    """The built-in model names."""
    return _moejit.builtin_models()


def builtin_devices() -> list:
    """The built-in device profiles plan() accepts."""
    return _moejit.builtin_devices()


def plan(config: ConfigLike, batch: int, device: str = "h200", **options: Any) -> Dict[str, Any]:
    """What a forward of ``batch`` tokens launches on a built-in device profile; needs no GPU."""
    return json.loads(_moejit.plan_json(config_json(config), int(batch), device, options))


def workspace_bytes(config: ConfigLike, device: str = "h200", **options: Any) -> int:
    """Bytes of one layer workspace (for ``layer(..., workspace=)``); needs no GPU."""
    return _moejit.workspace_bytes(config_json(config), device, options)


def _host_bytes(t: Any, name: str) -> bytes:
    if isinstance(t, (bytes, bytearray, memoryview)):
        return bytes(t)
    if hasattr(t, "is_cuda") and t.is_cuda:
        raise MoejitError(f"{name} is on the GPU: pack_weights packs host copies (t.cpu())", name)
    if hasattr(t, "numpy"):  # torch CPU tensors
        t = t.contiguous().numpy()
    if hasattr(t, "tobytes"):
        if str(getattr(t, "dtype", "uint8")) not in ("uint8", "int8"):
            raise MoejitError(f"{name}: dtype {t.dtype} is invalid: must be uint8", name)
        return t.tobytes(order="C")
    raise MoejitError(f"{name} must be a host array of uint8 (NumPy, a CPU tensor or bytes), not {type(t).__name__}",
                      name)


def pack_weights(config: ConfigLike, w1: Any, s1: Any, w2: Any, s2: Any, target: str = "sm_90a",
                 **options: Any) -> Dict[str, Any]:
    """Pack checkpoint MXFP4 weights (host arrays) into the layer's own layout, offline; needs no GPU.

    Returns ``{"w1": bytes, "w2": bytes, "top_scale_code": int, "atom": str,
    "subnormal_weight_scales": bool, "config": str}`` (whether a code-0 scale block holds a nonzero value; the
    configuration they were packed for, as JSON); upload ``w1``/``w2`` (e.g. ``torch.frombuffer(...).cuda()``)
    and build the layer with ``MoeLayer.from_packed``: the GPU never holds the checkpoint beside them.
    """
    arrays = [_host_bytes(t, n) for t, n in ((w1, "w1"), (s1, "s1"), (w2, "w2"), (s2, "s2"))]
    packed = _moejit.pack_weights(config_json(config), *arrays, options, target)
    packed["config"] = config_json(config)  # from_packed refuses them for another configuration
    return packed


_MAX_BATCH_RANGE = 65536  # sizes in one "lo-hi" range; a batch size itself is checked against the config


def _batches(batches: Union[int, str, Iterable[int]]) -> list:
    if isinstance(batches, int):
        return [batches]
    if isinstance(batches, str):
        out = set()
        for part in batches.split(","):
            lo, _, hi = part.strip().partition("-")
            try:
                first, last = int(lo), int(hi or lo)
            except ValueError:
                raise MoejitError(f"batches: {part!r} is not a batch size or range (e.g. 8, 1,2,4 or 1-256)",
                                  "batches") from None
            # A range is bounded before it is expanded; each size is checked against the config's capacity later.
            if last < first or last - first >= _MAX_BATCH_RANGE:
                raise MoejitError(f"batches: {part!r} is not a range of 1 to {_MAX_BATCH_RANGE} sizes (lo-hi, "
                                  f"lo <= hi)", "batches")
            out.update(range(first, last + 1))
        return sorted(out)
    return [int(b) for b in batches]


def precompile(config: ConfigLike, batches: Union[int, str, Iterable[int]], targets: Sequence[str] = ("sm_90a",),
               jobs: int = 0, progress: Optional[Callable[[int, int, str], None]] = None,
               **options: Any) -> Dict[str, Any]:
    """Compile every kernel a layer with ``options`` can need for these batch sizes into the kernel cache.

    Needs no GPU. ``progress(done, total, kernel)`` is called after each kernel.
    Returns ``{"kernels", "compiled", "cached", "errors", "ok"}``; raises
    MoejitError when a kernel failed or is not in the cache afterwards.
    """
    report = _moejit.precompile(config_json(config), _batches(batches), list(targets), options, int(jobs), progress)
    if not report["ok"]:
        raise MoejitError("precompile failed: " + "; ".join(report["errors"] or ["kernels are missing"]))
    return report
