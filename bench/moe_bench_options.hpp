#pragma once
// moejit_bench_moe's command line: what to measure (models, batch sizes), the
// sweeps of codegen overrides (each combination a layer), and the extras
// (--trace, --leave-out), parsed and checked before the device is opened, so a
// bad value is named, never reported as a skip where there is no GPU nor found
// after minutes of other layers.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "codegen/moe_config.hpp"
#include "runtime/moe_layer.hpp"

namespace moejit::bench {

// One point of the tuning sweeps: the overrides a layer is built with (0 or unset: as planned).
struct MoeBenchVariant {
  int ctas_per_sm = 0;
  int consumer_groups = 0;
  int activation_warps = 0;
  std::optional<codegen::Schedule> schedule;
  std::optional<bool> paired_rows, token_frame, warp_tables;
};

struct MoeBenchModel {
  std::string name;
  codegen::MoeConfig config;  // its recipe already the run's
};

struct MoeBenchOptions {
  std::vector<int> batches = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  std::vector<MoeBenchModel> models;      // glm5.2, dsv4.1-flash, gpt-oss-120b unless --model / --config
  std::vector<MoeBenchVariant> variants;  // every combination of the sweeps, in the order they are run
  codegen::MoeCodegenOptions codegen;     // what every variant shares
  codegen::Recipe recipe = codegen::Recipe::w4a8_mx;
  bool trace = false;
  std::filesystem::path trace_dir;     // --trace-csv DIR: empty, no CSV
  std::optional<bool> pdl;             // MoeLayerOptions::pdl: as planned unless --pdl / --no-pdl
  std::vector<std::string> leave_out;  // --leave-out dispatch,finalize
  int sm_count = 0;                    // MoeLayerOptions::sm_count: 0, the device's

  // The layer of one variant, for graph capture (no host copies inside forward).
  runtime::MoeLayerOptions layer_options(const MoeBenchVariant& v) const;
};

// Parses and checks argv into `o`. Returns the exit status where the program is done (0 after --help; 2 after a
// usage error, named on stderr), nothing where it goes on. A value out of range throws std::invalid_argument
// naming the option and the value.
std::optional<int> parse_moe_bench_options(int argc, char** argv, MoeBenchOptions& o);

}  // namespace moejit::bench
