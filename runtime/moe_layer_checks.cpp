// MoeLayer's checks of a forward's arguments against the driver, before any
// launch: is each buffer device memory of this GPU, holding the bytes the
// layer reads or writes; the caller's workspace; the route ids on the host.
#include <fmt/format.h>

#include <optional>
#include <vector>

#include "runtime/moe_layer.hpp"
#include "runtime/moe_layer_detail.hpp"

namespace moejit::runtime {

namespace detail {
bool not_device_memory(CUresult r) {
  return r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_NOT_FOUND;
}

std::uint64_t device_bytes_from(CUdeviceptr ptr, std::uint64_t want, PFN_cuMemGetAddressRange_v3020 range,
                                PFN_cuPointerGetAttribute_v4000 reservation, CUresult* error) {
  CUdeviceptr base = 0;
  std::size_t size = 0;
  *error = range(&base, &size, ptr);
  if (*error != CUDA_SUCCESS) return 0;
  if (ptr < base || ptr - base >= size) return 0;  // an answer that does not hold ptr holds none of its bytes
  std::uint64_t held = base + size - ptr;
  // Any other failure than "not device memory" stops the walk with it in *error: the driver could not tell.
  auto failed = [&](CUresult r) {
    if (r != CUDA_SUCCESS && !not_device_memory(r)) *error = r;
    return r != CUDA_SUCCESS;
  };
  auto reserved_at = [&](CUdeviceptr p) {
    CUdeviceptr start = 0;
    return failed(reservation(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p)) ? CUdeviceptr{0} : start;
  };
  const CUdeviceptr own = held < want ? reserved_at(ptr) : 0;
  // The next region counts if it starts where this one ends, in the same reservation.
  for (CUdeviceptr next = base + size; held < want && own != 0; next = base + size) {
    if (failed(range(&base, &size, next)) || base != next || size == 0 || reserved_at(next) != own) break;
    held += size;
  }
  return held;
}

std::optional<std::uint64_t> device_bytes(CUdeviceptr ptr, std::uint64_t want) {
  CUresult error = CUDA_SUCCESS;
  const std::uint64_t held =
      device_bytes_from(ptr, want, driver().cuMemGetAddressRange, driver().cuPointerGetAttribute, &error);
  if (error == CUDA_SUCCESS) return held;
  if (!not_device_memory(error)) check_cu(error, "cuMemGetAddressRange");
  return std::nullopt;
}

void require_device_bytes(const char* field, const std::string& shown, CUdeviceptr ptr, std::uint64_t bytes,
                          std::string_view what) {
  if (device_bytes(ptr, bytes).value_or(0) < bytes)
    throw InvalidInput(field, fmt::format("{} = 0x{:x} is invalid: it must be device memory holding the {} B of {}",
                                          shown, ptr, bytes, what));
}
}  // namespace detail

void MoeLayer::check_caller_workspace(CUdeviceptr ws) const {
  // The memory from `ws` on must hold the whole workspace.
  const std::optional<std::uint64_t> room = detail::device_bytes(ws, static_cast<std::uint64_t>(workspace_bytes_));
  if (!room)
    throw InvalidInput("workspace", fmt::format("workspace = 0x{:x} is invalid: it is not device memory of this "
                                                "context",
                                                ws));
  if (*room < static_cast<std::uint64_t>(workspace_bytes_))
    throw InvalidInput("workspace", fmt::format("workspace = 0x{:x} is invalid: its memory holds {} B from this "
                                                "pointer; the layer needs {} B (workspace_bytes())",
                                                ws, *room, workspace_bytes_));
}

void MoeLayer::check_forward_buffers(const MoeForwardArgs& a) const {
  const auto rows = static_cast<std::uint64_t>(a.tokens), h = static_cast<std::uint64_t>(config_.hidden),
             k = static_cast<std::uint64_t>(config_.top_k);
  struct Buffer {
    const char* field;
    CUdeviceptr ptr;
    std::uint64_t bytes;
    const char* what;
  };
  const Buffer buffers[] = {{"x_q", a.x_q, rows * h, "B rows of E4M3 x"},
                            {"x_scales", a.x_scales, rows * h / 32, "B rows of UE8M0 scales"},
                            {"x_bf16", a.x_bf16, rows * h * 2, "B rows of BF16 x"},
                            {"topk_ids", a.topk_ids, rows * k * 4, "B rows of int32 expert ids"},
                            {"topk_weights", a.topk_weights, rows * k * 4, "B rows of FP32 routing weights"},
                            {"y", a.y, rows * h * 2, "B rows of BF16 y"}};
  for (const Buffer& b : buffers) {
    if (!b.ptr) continue;  // validate_forward_args required the ones this layer reads
    detail::require_device_bytes(b.field, b.field, b.ptr, b.bytes, fmt::format("{} (B = {})", b.what, a.tokens));
    int ordinal = -1;
    if (driver().cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, b.ptr) == CUDA_SUCCESS &&
        ordinal != device_.ordinal)
      throw InvalidInput(b.field, fmt::format("{} = 0x{:x} is invalid: it is memory of GPU {}, and this layer runs "
                                              "on GPU {}",
                                              b.field, b.ptr, ordinal, device_.ordinal));
  }
}

void MoeLayer::check_routes(const MoeForwardArgs& a, CUstream stream, bool capturing) const {
  if (capturing)
    throw InvalidInput("check_routes_on_host",
                       "check_routes_on_host = true cannot be used while the stream is capturing (it copies topk_ids "
                       "to the host); turn it off: out-of-range ids poison their token with NaN on the GPU");
  std::vector<std::int32_t> ids(std::size_t(a.tokens) * config_.top_k);
  // On the caller's stream: the router that wrote the ids may run on a non-blocking stream, which a copy on the
  // legacy default stream would not wait for.
  MOEJIT_CU(cuMemcpyDtoHAsync, ids.data(), a.topk_ids, ids.size() * 4, stream);
  MOEJIT_CU(cuStreamSynchronize, stream);
  validate_route_ids(config_, ids);
}

}  // namespace moejit::runtime
