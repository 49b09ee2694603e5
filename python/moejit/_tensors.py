"""Tensors as moejit sees them: a device pointer, a shape, a dtype, a device.

Duck-typed, so torch, CuPy, JAX or NumPy arrays all work, and the extension
never links a tensor library. Every check runs before anything launches and
names the argument, its value and what is allowed: every tensor's dtype,
shape and layout first, then every tensor's device (a CPU tensor is refused
before its pointer is read).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Sequence, Tuple

from .errors import MoejitError

# DLPack device types: kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3, kDLCUDAManaged 13.
_DLPACK_DEVICE = {1: "cpu", 2: "cuda", 3: "cuda_host", 13: "cuda_managed"}


@dataclass(frozen=True)
class TensorInfo:
    shape: Tuple[int, ...]
    dtype: str
    device: str  # "cuda", "cpu", ...
    index: int
    contiguous: bool
    tensor: Any

    @property
    def ptr(self) -> int:
        t = self.tensor
        if hasattr(t, "data_ptr"):
            return int(t.data_ptr())
        return int(t.__cuda_array_interface__["data"][0])


def _dtype_name(t: Any) -> str:
    return str(getattr(t, "dtype", "?")).replace("torch.", "")


def _contiguous(t: Any, shape: Tuple[int, ...]) -> bool:
    if hasattr(t, "is_contiguous"):
        return bool(t.is_contiguous())
    flags = getattr(t, "flags", None)
    if flags is not None and hasattr(flags, "c_contiguous"):
        return bool(flags.c_contiguous)
    cai = getattr(t, "__cuda_array_interface__", None)
    if cai is not None:
        return cai.get("strides") is None
    return False


def describe(t: Any, name: str) -> TensorInfo:
    if t is None:
        raise MoejitError(f"{name} is required", name)
    if not hasattr(t, "shape") or not hasattr(t, "dtype"):
        raise MoejitError(f"{name} must be a tensor (torch, or anything with shape, dtype and DLPack), "
                          f"not {type(t).__name__}", name)
    shape = tuple(int(s) for s in t.shape)
    if hasattr(t, "__dlpack_device__"):
        kind, index = t.__dlpack_device__()
        device = _DLPACK_DEVICE.get(int(kind), f"dlpack device type {int(kind)}")
    elif hasattr(t, "__cuda_array_interface__"):
        device, index = "cuda", -1
    else:
        device, index = "cpu", 0
    return TensorInfo(shape, _dtype_name(t), device, int(index), _contiguous(t, shape), t)


def check_form(t: Any, name: str, shape: Sequence[int], dtypes: Sequence[str]) -> TensorInfo:
    """`t` described, if it is contiguous, of `shape` and one of `dtypes` (wherever it lives)."""
    info = describe(t, name)
    if info.dtype not in dtypes:
        raise MoejitError(f"{name}: dtype {info.dtype} is invalid: must be {' or '.join(dtypes)}", name)
    if info.shape != tuple(shape):
        raise MoejitError(f"{name}: shape {list(info.shape)} is invalid: must be {list(shape)}", name)
    if not info.contiguous:
        raise MoejitError(f"{name} is not contiguous: moejit reads it as a dense row-major array", name)
    return info


def check_device(info: TensorInfo, name: str, device: int) -> int:
    """The device pointer of `info`, if it lives on CUDA device `device`."""
    if info.device != "cuda":
        raise MoejitError(f"{name} is on {info.device}: it must be a CUDA tensor (on cuda:{device})", name)
    if info.index not in (-1, device):
        raise MoejitError(f"{name} is on cuda:{info.index}: the layer runs on cuda:{device}", name)
    return info.ptr


def _torch_pointers(specs: Sequence[Tuple[str, Any, Sequence[int], Sequence[str]]], device: int):
    """The pointers when every tensor is a torch tensor that passes every check, else None.
    Plain attribute reads: the general path (DLPack device, duck typing) cost
    about 3 µs a tensor, most of a warm forward's host time in Python."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    tensor = torch.Tensor
    ptrs = {}
    for name, t, shape, dtypes in specs:
        if not (type(t) is tensor and t.is_cuda and t.get_device() == device and str(t.dtype)[6:] in dtypes
                and t.shape == shape and t.is_contiguous()):
            return None
        ptrs[name] = t.data_ptr()
    return ptrs


def pointers(specs: Sequence[Tuple[str, Any, Sequence[int], Sequence[str]]], device: int) -> dict:
    """{name: device pointer} for (name, tensor, shape, dtypes): every tensor's
    dtype, shape and layout are checked before any device, so the first
    refusal is the most specific one."""
    fast = _torch_pointers(specs, device)
    if fast is not None:
        return fast
    infos = [(name, check_form(t, name, shape, dtypes)) for name, t, shape, dtypes in specs]
    return {name: check_device(info, name, device) for name, info in infos}
