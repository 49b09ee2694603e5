#pragma once
// The SM probe (templates/sm_probe.cuh): one u32 per CTA, the SM it ran on, and optionally the SM clock
// over its spin (bench::sm_clock_mhz).
// The GPU tests of SM partitions launch it on each partition's stream.

#include "codegen/kernel_spec.hpp"

namespace moejit::codegen {

// ABI: (u32* out [grid], u32 spin_ns, u32* clock [grid][2] or null: cycles and ns of the spin)
KernelSpec sm_probe_spec(Target target);

}  // namespace moejit::codegen
