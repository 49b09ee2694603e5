"""``torch.ops.moejit.moe``: a moejit layer as a torch custom op.

The op takes a layer handle (``MoeLayer.op`` registers the layer) so that
``torch.compile(fullgraph=True)`` traces it as one opaque node, with a fake
implementation that gives the output's shape; inside ``torch.cuda.graph``
capture the layer's role graph becomes a child graph of the capture.
"""

from __future__ import annotations

import itertools
import threading
from typing import Dict, Optional

import torch

_layers: Dict[int, "object"] = {}
_next = itertools.count(1)
_lock = threading.Lock()


def register(layer) -> int:
    with _lock:
        handle = next(_next)
        _layers[handle] = layer
    return handle


@torch.library.custom_op("moejit::moe", mutates_args=())
def moe(handle: int, x: torch.Tensor, x_scales: Optional[torch.Tensor], topk_ids: torch.Tensor,
        topk_weights: torch.Tensor) -> torch.Tensor:
    layer = _layers[handle]
    return layer(x, topk_ids, topk_weights, x_scales=x_scales)


@moe.register_fake
def _(handle: int, x: torch.Tensor, x_scales: Optional[torch.Tensor], topk_ids: torch.Tensor,
      topk_weights: torch.Tensor) -> torch.Tensor:
    hidden = _layers[handle].config["hidden"]
    return x.new_empty((x.shape[0], hidden), dtype=torch.bfloat16)
