"""``torch.ops.moejit.moe``: a moejit layer as a torch custom op.

The op takes a layer handle (``MoeLayer.op`` registers the layer) so that
``torch.compile(fullgraph=True)`` traces it as one opaque node, with a fake
implementation that gives the output's shape; inside ``torch.cuda.graph``
capture the layer's role graph becomes a child graph of the capture.

The registry holds layers weakly: the module that registered a layer owns it,
and a layer freed by its owner (or at interpreter exit) leaves no native
object behind. Calling the op with the handle of a freed layer raises.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Optional

import torch

_layers: "weakref.WeakValueDictionary[int, object]" = weakref.WeakValueDictionary()
_next = itertools.count(1)
_lock = threading.Lock()


def register(layer) -> int:
    """A handle for ``layer``; the caller keeps the layer alive while the handle is in use."""
    with _lock:
        handle = next(_next)
        _layers[handle] = layer
    return handle


def _layer(handle: int):
    layer = _layers.get(handle)
    if layer is None:
        raise ValueError(f"moejit.moe: handle {handle} names no live layer (registered layers: "
                         f"{sorted(_layers.keys())}); keep the MoeLayer alive while its handle is used")
    return layer


@torch.library.custom_op("moejit::moe", mutates_args=())
def moe(handle: int, x: torch.Tensor, x_scales: Optional[torch.Tensor], topk_ids: torch.Tensor,
        topk_weights: torch.Tensor) -> torch.Tensor:
    layer = _layer(handle)
    return layer(x, topk_ids, topk_weights, x_scales=x_scales)


@moe.register_fake
def _(handle: int, x: torch.Tensor, x_scales: Optional[torch.Tensor], topk_ids: torch.Tensor,
      topk_weights: torch.Tensor) -> torch.Tensor:
    hidden = _layer(handle).config["hidden"]
    return x.new_empty((x.shape[0], hidden), dtype=torch.bfloat16)
