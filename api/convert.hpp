#pragma once
// The public API's types (include/moejit/moejit.hpp) to and from the
// library's own. The public header names no internal type, so each public
// struct is mapped field by field here, and only here; tests/unit/test_api_convert.cpp
// checks that the defaults agree and that every field survives the round trip.

#include <exception>

#include "codegen/moe_config.hpp"
#include "codegen/moe_launch_plan.hpp"
#include "moejit/moejit.hpp"
#include "runtime/moe_layer.hpp"
#include "runtime/weight_packing.hpp"

namespace moejit::api {

codegen::MoeConfig to_internal(const Config& config);
Config to_public(const codegen::MoeConfig& config);

// Throws Error("path") for a path that is neither "", "exact" nor "fast".
codegen::MoeCodegenOptions codegen_options(const LayerOptions& options);
runtime::MoeLayerOptions layer_options(const LayerOptions& options);

Plan to_public(const codegen::MoeLaunchPlan& plan);

runtime::MoeForwardArgs to_internal(const ForwardArgs& args);
runtime::PackedWeightsDevice to_internal(const PackedWeightsDevice& packed);
runtime::CheckpointWeightsHost to_internal(const CheckpointWeightsHost& weights);

// Runs `f`, turning the library's exceptions into moejit::Error: a refused
// input keeps its field, anything else gets field "".
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const codegen::ConfigError& e) {
    throw Error(e.field(), e.what());
  } catch (const std::exception& e) {
    throw Error("", e.what());
  }
}

}  // namespace moejit::api
