#pragma once
// KernelSpecs of the MoE operator's kernels: the three roles of one launch
// plan and the weight transforms. Each spec carries the contract checks its
// entry static_asserts (templates/moe_contract.cuh), so host and device
// cannot disagree on SMEM, threads or the workspace without a build error.

#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_spec.hpp"
#include "codegen/moe_launch_plan.hpp"
#include "templates/moe_weight_layouts.cuh"

namespace moejit::codegen {

inline constexpr int k_transform_threads = 256;

// nullopt when the plan launches no dispatch role.
std::optional<KernelSpec> moe_dispatch_spec(const MoeConfig& config, const MoeLaunchPlan& plan);
KernelSpec moe_compute_spec(const MoeConfig& config, const MoeLaunchPlan& plan);
KernelSpec moe_finalize_spec(const MoeConfig& config, const MoeLaunchPlan& plan);
// The role kernels a forward of the plan launches, in launch order.
std::vector<KernelSpec> moe_role_specs(const MoeConfig& config, const MoeLaunchPlan& plan);
// The key under which a layer shares one set of loaded role kernels between the B it runs: every role's summary,
// not the compute kernel's alone, since a dispatch or finalize kernel may change with B where the compute kernel
// does not (on a branch whose finalize block was sized to cover the SMs, a key of the compute kernel alone
// launched B = 1's finalize kernel with B = 2's block; on main today every B that shares a compute kernel shares
// the other roles' too, which the unit case of this key checks).
std::string role_kernels_key(const std::vector<KernelSpec>& role_specs);

// W1 (rows 2I, K = H, gate/up paired per tile) or W2 (rows H, K = I) into the atom's step blobs.
enum class Projection { w1, w2 };
// The projection as packed (H and I padded: padded_hidden) and as the checkpoint holds it: the one
// definition the transform kernel, the host packer and the layer's buffer sizes share.
contract::ProjectionShape projection_shape(const MoeConfig& config, Projection which);

KernelSpec moe_weight_transform_spec(const MoeConfig& config, const AtomTraits& atom, Target target, Projection which);

// Every kernel a layer needs for `batch` on the profile's target: the roles and both transforms.
std::vector<KernelSpec> moe_kernel_specs(const MoeConfig& config, int batch, const DeviceProfile& profile,
                                         const MoeCodegenOptions& options);

}  // namespace moejit::codegen
