#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "codegen/resource_report.hpp"

using namespace moejit::codegen;

TEST_CASE("resource report parses nvJitLink's verbose log") {
  const char* log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'a' for 'sm_90a'\n"
      "ptxas info    : Function properties for a\n"
      "ptxas         .     24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 4096 bytes smem\n"
      "ptxas info    : Compile time = 16.314 ms\n"
      "info    : 0 bytes gmem\n"
      "info    : Function properties for 'a':\n"
      "info    : used 168 registers, used 1 barriers, 24 stack, 5120 bytes smem, 548 bytes cmem[0], 32 bytes lmem\n"
      "ptxas info    : Compiling entry function 'b' for 'sm_90a'\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 10 registers\n";
  const ResourceReport r = parse_resource_report(log);
  REQUIRE(r.kernels.size() == 2);
  const KernelResources* a = r.find("a");
  REQUIRE(a);
  CHECK(a->registers == 168);
  CHECK(a->barriers == 1);
  CHECK(a->shared_bytes == 4096);
  CHECK(a->stack_frame_bytes == 24);
  CHECK(a->spill_store_bytes == 8);
  CHECK(a->spill_load_bytes == 12);
  CHECK(a->local_bytes == 32);
  CHECK(a->ptxas_millis == doctest::Approx(16.314));
  CHECK(r.find("b")->registers == 10);
  CHECK(r.find("c") == nullptr);
  CHECK(nlohmann::json(r).get<ResourceReport>() == r);
}
