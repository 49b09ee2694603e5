// MoeLayer's kernels for each B: built through the kernel cache, loaded into the layer's context and checked for
// residency once per role-kernel set, and bound to a forward's arguments (its setup, workspaces, graphs and
// forward: moe_layer.cpp).
#include <fmt/format.h>

#include <limits>
#include <vector>

#include "jit/kernel_cache.hpp"
#include "runtime/kernel_args.hpp"
#include "runtime/moe_layer.hpp"
#include "runtime/moe_layer_detail.hpp"
#include "runtime/residency.hpp"

namespace moejit::runtime {

namespace {
const char* role_name(const codegen::KernelSpec& spec) {
  if (spec.kernel == "moe_dispatch") return "dispatch";
  if (spec.kernel == "moe_compute") return "compute";
  return "finalize";
}
}  // namespace

namespace detail {
Loaded load(const codegen::KernelSpec& spec) {
  const std::shared_ptr<const jit::CachedKernel> kernel = jit::KernelCache::global().get_or_build(spec);
  return {std::make_unique<LoadedKernel>(kernel->cubin, spec.entry_name()), kernel->key};
}
}  // namespace detail

void MoeLayer::build_kernels_unlocked(int tokens) {
  {
    std::lock_guard lock(mutex_);
    if (by_tokens_[tokens]) return;
  }
  for (const codegen::KernelSpec& spec : codegen::moe_role_specs(config_, plan(tokens)))
    jit::KernelCache::global().get_or_build(spec);
}

const MoeLayer::TokenLaunch& MoeLayer::kernels_for_locked(int tokens) {
  if (by_tokens_[tokens]) return *by_tokens_[tokens];
  codegen::MoeLaunchPlan plan = this->plan(tokens);
  if (plan.workspace_bytes != workspace_bytes_)
    throw std::logic_error(fmt::format("B={}: the plan's workspace ({} B) differs from the layer's ({} B)", tokens,
                                       plan.workspace_bytes, workspace_bytes_));
  std::vector<codegen::KernelSpec> specs = codegen::moe_role_specs(config_, plan);
  // Inserted only once built, so a failed build leaves no empty entry.
  const std::string kernels_key = codegen::role_kernels_key(specs);
  auto slot_at = kernels_.find(kernels_key);
  if (slot_at == kernels_.end()) {
    auto k = std::make_unique<RoleKernels>();
    for (const codegen::KernelSpec& spec : specs) {
      detail::Loaded l = detail::load(spec);
      const codegen::RolePlan& role = spec.kernel == "moe_dispatch"  ? plan.dispatch
                                      : spec.kernel == "moe_compute" ? plan.compute
                                                                     : plan.finalize;
      if (role.smem_bytes > 0) {
        MOEJIT_CU(cuKernelSetAttribute, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, role.smem_bytes,
                  l.kernel->kernel(), cu_device_);
        CUfunction fn = nullptr;  // the attribute for this context's function too (direct launches)
        MOEJIT_CU(cuKernelGetFunction, &fn, l.kernel->kernel());
        MOEJIT_CU(cuFuncSetAttribute, fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, role.smem_bytes);
      }
      // The persistent compute role must have every CTA resident at the
      // planned CTAs per SM, or its waits on other CTAs could never return.
      const int per_sm = role_blocks_per_sm(*l.kernel, role.threads, role.smem_bytes);
      const bool persistent = spec.kernel == "moe_compute";
      if (persistent && per_sm < role.blocks_per_sm)
        throw ResidencyError(fmt::format(
            "role compute: the plan wants {} CTAs per SM ({} threads, {} B SMEM, .maxnreg {}), the driver allows {}",
            role.blocks_per_sm, role.threads, role.smem_bytes, role.register_cap, per_sm));
      require_residency(role_name(spec), persistent ? role.grid : 1, per_sm, profile_.sm_count, role.threads,
                        role.smem_bytes, persistent);
      k->kernels.push_back(std::move(l.kernel));
      k->keys.push_back(std::move(l.key));
    }
    k->specs = std::move(specs);
    slot_at = kernels_.emplace(kernels_key, std::move(k)).first;
  }
  by_tokens_[tokens] = std::make_unique<TokenLaunch>(TokenLaunch{slot_at->second.get(), std::move(plan)});
  return *by_tokens_[tokens];
}

int MoeLayer::kernels_built() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(kernels_.size());
}

std::vector<RoleLaunch> MoeLayer::role_launches(const TokenLaunch& t, const MoeForwardArgs& a, CUdeviceptr ws) const {
  const RoleKernels& k = *t.kernels;
  const auto tokens = static_cast<std::uint32_t>(a.tokens);
  const contract::WorkspaceLayout l = workspace_layout();
  const bool fp8_rows = contract::path_fp8_rows(atom_->contract_path);
  // The GEMM1 rows the compute role reads, in its atom's row format: what the dispatch role made of x where the
  // plan runs it, else the caller's x as it is (MXFP8 rows and scale words, or BF16 rows).
  const bool dispatched = t.plan.dispatch.launched;
  CUdeviceptr x_rows = 0, x_scales = 0;
  if (fp8_rows)
    x_rows = dispatched ? ws + l.x_q : a.x_q, x_scales = dispatched ? ws + l.x_scales : a.x_scales;
  else
    x_rows = dispatched ? ws + l.x_bf16 : a.x_bf16;

  std::vector<RoleLaunch> roles;
  for (std::size_t i = 0; i < k.specs.size(); ++i) {
    const codegen::KernelSpec& spec = k.specs[i];
    RoleLaunch r;
    r.role = role_name(spec);
    r.kernel = k.kernels[i].get();
    r.cubin_key = k.keys[i];
    NamedArgs args;
    const codegen::RolePlan* plan = nullptr;
    if (spec.kernel == "moe_dispatch") {
      plan = &t.plan.dispatch;
      args.ptr("x_q", a.x_q)
          .ptr("x_scales", a.x_scales)
          .ptr("x_bf16", a.x_bf16)
          .ptr("topk_ids", a.topk_ids)
          .ptr("topk_weights", a.topk_weights)
          .u32("tokens", tokens)
          .ptr("ws", ws);
    } else if (spec.kernel == "moe_compute") {
      plan = &t.plan.compute;
      args.ptr("topk_ids", a.topk_ids)
          .ptr("topk_weights", a.topk_weights)
          .ptr("x_rows", x_rows)
          .ptr("x_scales", x_scales)
          .map("w1_map", w1_map_)
          .map("w2_map", w2_map_)
          .ptr("ws", ws)
          .u32("tokens", tokens)
          .ptr("b1", config_.biases ? b1_.ptr() : 0)
          .ptr("b2", config_.biases ? b2_.ptr() : 0)
          .f32("clamp", config_.swiglu_clamp.value_or(std::numeric_limits<float>::infinity()))
          .f32("alpha", config_.alpha)
          .ptr("trace", a.trace);
    } else {
      plan = &t.plan.finalize;
      args.ptr("topk_ids", a.topk_ids).ptr("y", a.y).u32("tokens", tokens).ptr("ws", ws);
    }
    r.dims = {static_cast<unsigned>(plan->grid), static_cast<unsigned>(plan->threads),
              static_cast<unsigned>(plan->smem_bytes)};
    r.args = args.bind(spec);
    roles.push_back(std::move(r));
  }
  return roles;
}

}  // namespace moejit::runtime
