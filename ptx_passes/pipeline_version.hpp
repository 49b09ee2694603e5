#pragma once
// The version of the PTX pass pipeline. It is part of every cache key: bump it
// whenever a pass changes what it writes, so no cubin built by the old
// pipeline is ever loaded for the new one.

namespace moejit::ptx {

inline constexpr int k_pass_pipeline_version = 1;

}  // namespace moejit::ptx
