#pragma once
// The host/device contract of the MoE role kernels, written once: the MMA
// paths, the weight step blob, the workspace layout and the compute role's
// shared-memory layout. The host includes this file as C++ (codegen sizes
// launches and the runtime carves the workspace from it); NVRTC includes it
// from the templates, whose entries static_assert that the SMEM size, thread
// count and workspace size the host planned are what these files compute.
//
// Plain integer arithmetic only: no headers (NVRTC has none), no device types.
//   moe_contract_paths.cuh      the MMA paths, their row formats and the weight step blob; the compute CTA's warps
//   moe_contract_workspace.cuh  the workspace: its header, the trace slots, its regions
//   moe_contract_compute.cuh    the compute role's schedules and its shared memory

#include "moe_contract_compute.cuh"
#include "moe_contract_paths.cuh"
#include "moe_contract_workspace.cuh"
