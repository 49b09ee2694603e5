#pragma once
// Offline weight packing: checkpoint MXFP4 -> the layer's step blobs
// [E][N/128][K/128][2][4352 B] on the host, byte for byte what the weight
// transform kernel (templates/moe_weight_transform.cuh) writes on the GPU;
// both pack code by code from the one layout definition
// (moe_weight_layouts.cuh), and the GPU tests hold the kernel to this. An
// engine packs once, stores the blobs, and builds layers from them without
// ever holding the checkpoint and the packed copy on the GPU together.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "codegen/moe_atoms.hpp"
#include "codegen/moe_config.hpp"
#include "codegen/moe_kernels.hpp"

namespace moejit::runtime {

// One projection of `experts` experts (codegen::projection_shape: packed and
// checkpoint extents, W1's gate/up order); `layout` is a contract::WeightLayout.
std::vector<std::uint8_t> pack_projection(std::span<const std::uint8_t> payload, std::span<const std::uint8_t> scales,
                                          int experts, const contract::ProjectionShape& shape, int layout);

// A layer's packed weights, as the layer built from a checkpoint holds them.
struct PackedWeightsHost {
  std::vector<std::uint8_t> w1, w2;  // step blobs
  int top_scale_code = 0;            // the largest UE8M0 code of s1 and s2
  std::string atom;                  // AtomTraits::name whose layout they are in
  // A K32 block of scale code 0 holds a nonzero value (codegen::MoeCodegenOptions::subnormal_weight_scales).
  bool subnormal_weight_scales = false;
};

// Whether some K32 block of `scales` code 0 holds a nonzero E2M1 value in `payload` ([rows][k/2] codes, low
// nibble first; [rows][k/32] scales, any number of experts' rows).
bool has_subnormal_scales(std::span<const std::uint8_t> payload, std::span<const std::uint8_t> scales, int k);

// Checkpoint-layout host bytes of a layer with `config`, packed for `atom`.
// Throws ConfigError naming the array whose size is wrong, or a scale code
// the atom does not support.
struct CheckpointWeightsHost {
  const std::uint8_t *w1 = nullptr, *s1 = nullptr, *w2 = nullptr, *s2 = nullptr;
  std::size_t w1_bytes = 0, s1_bytes = 0, w2_bytes = 0, s2_bytes = 0;
};
PackedWeightsHost pack_weights(const codegen::MoeConfig& config, const codegen::AtomTraits& atom,
                               const CheckpointWeightsHost& weights);
// The bytes of each packed projection (its checkpoint payload + scale bytes, at the padded H and I).
std::uint64_t packed_bytes(const codegen::MoeConfig& config, codegen::Projection which);

}  // namespace moejit::runtime
