// MoeLayer's weights: the checkpoint's arrays checked and packed by the weight transform kernel (or packed ones
// adopted), the biases, and the weights' tensor maps.
#include <fmt/format.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "runtime/moe_layer.hpp"
#include "runtime/moe_layer_detail.hpp"
#include "runtime/role_graph.hpp"
#include "runtime/tensor_map_cache.hpp"
#include "runtime/weight_packing.hpp"

namespace moejit::runtime {

namespace {
// A layer's setup copies run on its setup stream, never the legacy one: work on the legacy stream is ordered
// against every blocking stream, and one that another thread is capturing would have its capture invalidated.
void download_on(CUstream s, void* host, CUdeviceptr from, std::size_t bytes) {
  MOEJIT_CU(cuMemcpyDtoHAsync, host, from, bytes, s);
  MOEJIT_CU(cuStreamSynchronize, s);
}
template <class T>
void upload_on(CUstream s, const DeviceBuffer& to, const std::vector<T>& host) {
  MOEJIT_CU(cuMemcpyHtoDAsync, to.ptr(), host.data(), host.size() * sizeof(T), s);
  MOEJIT_CU(cuStreamSynchronize, s);
}
}  // namespace

MoeLayer::MoeLayer(const codegen::MoeConfig& config, const CheckpointWeightsDevice& weights,
                   const MoeLayerOptions& options)
    : MoeLayer(config, options, Setup{}) {
  // Allocations, module loads and synchronizations that another thread's capture in global mode would forbid.
  const RelaxedCaptureScope relaxed(true);
  // With a fused shared expert the arrays hold E + 1 experts (the shared one last).
  const std::uint64_t E = config_.weight_experts(), H = config_.hidden, I = config_.intermediate;
  const std::string experts =
      config_.shared_expert ? fmt::format("{} (E + 1: the shared expert last)", E) : std::to_string(E);
  for (auto [name, ptr, bytes, shape] :
       {std::tuple{"w1", weights.w1, E * 2 * I * H / 2, fmt::format("[{}][{}][{}] MXFP4 codes", experts, 2 * I, H / 2)},
        std::tuple{"s1", weights.s1, E * 2 * I * H / 32,
                   fmt::format("[{}][{}][{}] UE8M0 scales", experts, 2 * I, H / 32)},
        std::tuple{"w2", weights.w2, E * H * I / 2, fmt::format("[{}][{}][{}] MXFP4 codes", experts, H, I / 2)},
        std::tuple{"s2", weights.s2, E * H * I / 32, fmt::format("[{}][{}][{}] UE8M0 scales", experts, H, I / 32)}}) {
    if (ptr == 0 || ptr % 16 != 0)
      throw InvalidInput(name, fmt::format("weights.{} = 0x{:x} is invalid: must be a non-null 16-byte aligned "
                                           "device pointer",
                                           name, ptr));
    detail::require_device_bytes(name, fmt::format("weights.{}", name), ptr, bytes, shape);
  }
  adopt_biases(weights.b1, weights.b2, "weights");  // every input checked before the transform kernels run
  pack_weights(weights);
  map_weights();
}

MoeLayer::MoeLayer(const codegen::MoeConfig& config, const PackedWeightsDevice& packed, const MoeLayerOptions& options)
    : MoeLayer(config, options, Setup{}) {
  const RelaxedCaptureScope relaxed(true);
  adopt_packed(packed);
  adopt_biases(packed.b1, packed.b2, "packed");
  map_weights();
}

void MoeLayer::pack_weights(const CheckpointWeightsDevice& weights) {
  // Step blobs: 4352 B per 64 rows x K128, i.e. the payload plus 1/16 for the scale words.
  const std::size_t w1_bytes = packed_bytes(config_, codegen::Projection::w1);
  const std::size_t w2_bytes = packed_bytes(config_, codegen::Projection::w2);
  w1_ = DeviceBuffer(w1_bytes);
  w2_ = DeviceBuffer(w2_bytes);
  DeviceBuffer status(8);  // the largest scale code; whether a code-0 block holds a nonzero value
  struct Projection {
    codegen::Projection which;
    CUdeviceptr in, in_scales, out;
    std::size_t bytes;
  };
  const Projection projections[] = {{codegen::Projection::w1, weights.w1, weights.s1, w1_.ptr(), w1_bytes},
                                    {codegen::Projection::w2, weights.w2, weights.s2, w2_.ptr(), w2_bytes}};
  // Both transforms are built (or refused, under MOEJIT_NO_JIT) before either launches: a failure after a launch
  // would unwind, freeing `status` and the packed buffers under a running kernel.
  std::vector<codegen::KernelSpec> specs;
  std::vector<detail::Loaded> kernels;
  for (const Projection& p : projections) {
    specs.push_back(codegen::moe_weight_transform_spec(config_, *atom_, target_, p.which));
    kernels.push_back(detail::load(specs.back()));
  }
  try {
    MOEJIT_CU(cuMemsetD8Async, status.ptr(), 0, 8, setup_stream_);
    for (std::size_t i = 0; i < 2; ++i) {
      const Projection& p = projections[i];
      KernelArgs args = NamedArgs()
                            .ptr("payload_in", p.in)
                            .ptr("scales_in", p.in_scales)
                            .ptr("packed", p.out)
                            .ptr("status", status.ptr())
                            .bind(specs[i]);
      const std::size_t words = p.bytes / 4;
      const unsigned grid = static_cast<unsigned>(std::min<std::size_t>((words + 255) / 256, 65535));
      kernels[i].kernel->launch({grid, codegen::k_transform_threads, 0}, setup_stream_, args.pointers());
    }
  } catch (...) {
    driver().cuStreamSynchronize(setup_stream_);  // the first transform may be running
    throw;
  }
  int flags[2] = {};
  download_on(setup_stream_, flags, status.ptr(), 8);
  const int top_code = flags[0];
  if (flags[1]) options_.codegen.subnormal_weight_scales = true;
  if (top_code > contract::kFrameMaxWeightScaleCode) options_.codegen.wide_weight_scales = true;
  if (top_code > atom_->max_weight_scale_code)
    throw InvalidInput(
        "weight scales",
        fmt::format("weight scales: a UE8M0 code of {} was found; the {} path ({}) supports codes "
                    "[0, {}]{}",
                    top_code, codegen::path_name(*options_.codegen.path), atom_->name, atom_->max_weight_scale_code,
                    top_code == 255 ? " (255 is NaN in UE8M0)" : "; --path fast takes every code to 254"));
  w1_ptr_ = w1_.ptr();
  w2_ptr_ = w2_.ptr();
}

void MoeLayer::adopt_packed(const PackedWeightsDevice& packed) {
  if (packed.atom != atom_->name)
    throw InvalidInput("packed.atom", fmt::format("packed.atom = '{}' is invalid: this layer's {} path on {} runs the "
                                                  "{} atom; pack the weights for it",
                                                  packed.atom, codegen::path_name(*options_.codegen.path),
                                                  target_.name(), atom_->name));
  if (packed.top_scale_code < 0 || packed.top_scale_code > atom_->max_weight_scale_code)
    throw InvalidInput("packed.top_scale_code",
                       fmt::format("packed.top_scale_code = {} is invalid: the {} atom supports codes [0, {}]",
                                   packed.top_scale_code, atom_->name, atom_->max_weight_scale_code));
  for (auto [name, ptr, which] : {std::tuple{"packed.w1", packed.w1, codegen::Projection::w1},
                                  std::tuple{"packed.w2", packed.w2, codegen::Projection::w2}}) {
    if (ptr == 0 || ptr % 16 != 0)
      throw InvalidInput(
          name, fmt::format("{} = 0x{:x} is invalid: must be a non-null 16-byte aligned device pointer", name, ptr));
    detail::require_device_bytes(name, name, ptr, packed_bytes(config_, which), "the packed projection");
  }
  w1_ptr_ = packed.w1;
  w2_ptr_ = packed.w2;
  if (packed.subnormal_weight_scales) options_.codegen.subnormal_weight_scales = true;
  if (packed.top_scale_code > contract::kFrameMaxWeightScaleCode) options_.codegen.wide_weight_scales = true;
}

void MoeLayer::adopt_biases(CUdeviceptr b1, CUdeviceptr b2, const char* owner) {
  const std::size_t E = config_.weight_experts(), H = config_.hidden, I = config_.intermediate;
  for (auto [name, ptr] : {std::pair{"b1", b1}, std::pair{"b2", b2}}) {
    if (!config_.biases && ptr != 0)
      throw InvalidInput(name, fmt::format("{}.{} = 0x{:x} is invalid: the config has no biases (set \"biases\": "
                                           "true to use them)",
                                           owner, name, ptr));
    if (config_.biases && (ptr == 0 || ptr % 2 != 0))
      throw InvalidInput(name, fmt::format("{}.{} = 0x{:x} is invalid: the config has biases; it must be a "
                                           "non-null 2-byte aligned device pointer to BF16 [{}][{}]",
                                           owner, name, ptr, E, name == std::string("b1") ? 2 * I : H));
  }
  if (!config_.biases) return;
  for (auto [name, ptr, bytes] : {std::tuple{"b1", b1, E * 2 * I * 2}, std::tuple{"b2", b2, E * H * 2}})
    detail::require_device_bytes(name, fmt::format("{}.{}", owner, name), ptr, bytes, "its BF16 biases");
  // The kernels read FP32 (exact images of the BF16 values) at the padded extents: b1 as (gate, up) pairs per
  // intermediate column, b2 per output row; zero in the padding.
  std::vector<std::uint16_t> host1(E * 2 * I), host2(E * H);
  download_on(setup_stream_, host1.data(), b1, host1.size() * 2);
  download_on(setup_stream_, host2.data(), b2, host2.size() * 2);
  auto value = [](std::uint16_t bits) {
    const std::uint32_t word = std::uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &word, 4);
    return f;
  };
  // A NaN or infinite bias would reach every output row its expert touches; refuse it here, naming the element,
  // rather than let the layer return NaN rows.
  for (auto [name, host, cols] : {std::tuple{"b1", &host1, 2 * I}, std::tuple{"b2", &host2, H}})
    for (std::size_t j = 0; j < host->size(); ++j)
      if (!std::isfinite(value((*host)[j])))
        throw InvalidInput(name, fmt::format("{}.{}[{}][{}] = {} (BF16 0x{:04x}) is invalid: biases must be "
                                             "finite",
                                             owner, name, j / cols, j % cols, value((*host)[j]), (*host)[j]));
  const std::size_t hp = codegen::padded_hidden(config_), ip = codegen::padded_intermediate(config_);
  const bool interleaved = config_.gate_up == codegen::GateUp::interleaved;
  std::vector<float> pairs(E * ip * 2, 0.0f), rows(E * hp, 0.0f);
  for (std::size_t e = 0; e < E; ++e) {
    for (std::size_t i = 0; i < I; ++i) {
      const std::size_t gate = interleaved ? 2 * i : i, up = interleaved ? 2 * i + 1 : I + i;
      pairs[(e * ip + i) * 2] = value(host1[e * 2 * I + gate]);
      pairs[(e * ip + i) * 2 + 1] = value(host1[e * 2 * I + up]);
    }
    for (std::size_t h = 0; h < H; ++h) rows[e * hp + h] = value(host2[e * H + h]);
  }
  b1_ = DeviceBuffer(pairs.size() * 4);
  b2_ = DeviceBuffer(rows.size() * 4);
  upload_on(setup_stream_, b1_, pairs);
  upload_on(setup_stream_, b2_, rows);
}

void MoeLayer::map_weights() {
  // Every plan of the layer has the same tiles per item, so one box size serves every batch.
  const std::uint32_t box_rows = static_cast<std::uint32_t>(contract::weight_box_rows(plan(1).tiles));
  const auto rows = [&](codegen::Projection p) { return packed_bytes(config_, p) / contract::kWeightMapRowBytes; };
  w1_map_ = TensorMapCache::global().weight_tile_map(w1_ptr_, rows(codegen::Projection::w1), box_rows);
  w2_map_ = TensorMapCache::global().weight_tile_map(w2_ptr_, rows(codegen::Projection::w2), box_rows);
}

}  // namespace moejit::runtime
