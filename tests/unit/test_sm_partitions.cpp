// SM partitions without a GPU: the shape of R equal partitions in the driver's
// steps, bad part counts refused naming the field and the range, and the SM
// probe the GPU test launches in each partition compiles to a cubin.
#include <doctest/doctest.h>

#include <string>

#include "codegen/moe_config.hpp"
#include "codegen/sm_probe_kernel.hpp"
#include "codegen/target.hpp"
#include "jit/kernel_builder.hpp"
#include "runtime/sm_partitions.hpp"

using namespace moejit;

TEST_CASE("R partitions of the H200's 132 SMs in steps of 8: equal parts, the rest unused") {
  struct Case {
    int parts, sms, unused;
  };
  for (const Case c :
       {Case{1, 128, 4}, Case{2, 64, 4}, Case{3, 40, 12}, Case{4, 32, 4}, Case{8, 16, 4}, Case{16, 8, 4}}) {
    CAPTURE(c.parts);
    const runtime::PartitionShape s = runtime::partition_shape(132, 8, c.parts);
    CHECK(s.parts == c.parts);
    CHECK(s.sms_per_part == c.sms);
    CHECK(s.unused_sms == c.unused);
    CHECK(s.sms_per_part % 8 == 0);
  }
  CHECK(runtime::partition_shape(132, 2, 2).sms_per_part == 66);  // co-scheduling ignored: steps of 2
}

TEST_CASE("a part count outside [1, SMs / alignment] is refused, naming the field and the range") {
  CHECK_THROWS_WITH_AS(runtime::partition_shape(132, 8, 17),
                       "parts = 17 is outside the allowed range [1, 16] (132 SMs in steps of 8)", codegen::ConfigError);
  CHECK_THROWS_WITH_AS(runtime::partition_shape(132, 8, 0),
                       "parts = 0 is outside the allowed range [1, 16] (132 SMs in steps of 8)", codegen::ConfigError);
  try {
    runtime::partition_shape(132, 8, -1);
    FAIL("no error");
  } catch (const codegen::ConfigError& e) {
    CHECK(e.field() == "parts");
  }
  CHECK_THROWS_AS(runtime::partition_shape(0, 8, 1), codegen::ConfigError);
}

TEST_CASE("the SM probe compiles for sm_90a and reads %smid and %clock64") {
  const jit::BuildArtifacts built = jit::build_kernel(codegen::sm_probe_spec(*codegen::parse_target("sm_90a")));
  CHECK(built.cubin.size() > 64);
  CHECK(built.ptx.find("%smid") != std::string::npos);
  CHECK(built.ptx.find("%clock64") != std::string::npos);  // the benches' SM clock
}
