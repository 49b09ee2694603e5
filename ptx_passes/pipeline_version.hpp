#pragma once
// The version of the PTX pass pipeline. It is part of every cache key: bump it
// whenever a pass changes what it writes, so no cubin built by the old
// pipeline is ever loaded for the new one.
//
// Bump when:
// - a pass writes different text for the same input and options (a new
//   rewrite form, different spacing, a different instruction sequence);
// - a pass is added, removed or reordered (pipeline.cpp);
// - a pass accepts or rejects input it used to treat the other way (a cubin
//   cached under the old rule may be one the new rule would refuse).
// No bump for changes that cannot alter a cubin: messages, diagnostics,
// inspect output, comments. Options that come from the KernelSpec (register
// cap, co-residency, TensorMap uses) are keyed through the spec itself.
//
// History: 1 = no passes (NVRTC PTX assembled as is); 2 = version,
// occupancy, tensormap-by-value, validate.

namespace moejit::ptx {

inline constexpr int k_pass_pipeline_version = 2;

}  // namespace moejit::ptx
