// moejit::Layer: the public face of runtime::MoeLayer.
#include "api/convert.hpp"
#include "runtime/moe_layer.hpp"

namespace moejit {

struct Layer::Impl {
  template <class Weights>
  Impl(const codegen::MoeConfig& config, const Weights& weights, const runtime::MoeLayerOptions& options)
      : layer(config, weights, options) {}
  runtime::MoeLayer layer;
};

Layer::Impl& Layer::live() const {
  if (!impl_) throw Error("layer", "this moejit::Layer was moved from");
  return *impl_;
}

Layer::Layer(const Config& config, const CheckpointWeights& w, const LayerOptions& options) {
  impl_ = api::guarded([&] {
    return std::make_unique<Impl>(api::to_internal(config),
                                  runtime::CheckpointWeightsDevice{w.w1, w.s1, w.w2, w.s2, w.b1, w.b2},
                                  api::layer_options(options));
  });
}

Layer::Layer(const Config& config, const PackedWeightsDevice& p, const LayerOptions& options) {
  impl_ = api::guarded([&] {
    return std::make_unique<Impl>(api::to_internal(config), api::to_internal(p), api::layer_options(options));
  });
}

Layer::~Layer() = default;
Layer::Layer(Layer&&) noexcept = default;
Layer& Layer::operator=(Layer&&) noexcept = default;

void Layer::forward(const ForwardArgs& a, void* stream) {
  api::guarded([&] { live().layer.forward(api::to_internal(a), static_cast<CUstream>(stream)); });
}

Plan Layer::plan(int tokens) const {
  return api::guarded([&] {
    codegen::validate_batch(live().layer.config(), tokens);
    return api::to_public(live().layer.plan(tokens));
  });
}

std::int64_t Layer::workspace_bytes() const {
  return api::guarded([&] { return live().layer.workspace_bytes(); });
}

void Layer::release_stream(void* stream) {
  api::guarded([&] { live().layer.release_stream(static_cast<CUstream>(stream)); });
}

}  // namespace moejit
