// The NCCL path of expert parallelism without a GPU: the peer-table kernel was
// built with nvcc for every target and is embedded; libnccl.so.2 loads and
// has every entry point moejit uses, at the major.minor the kernel was built
// against; bad calls are refused before any launch.
#include <doctest/doctest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "runtime/nccl/nccl_peers.hpp"

using namespace moejit;

TEST_CASE("the peer-table kernel is a cubin for each target, built with nvcc with moejit") {
  for (const char* target : {"sm_90a", "sm_100a", "sm_120a"}) {
    CAPTURE(target);
    const std::span<const std::uint8_t> cubin = runtime::peer_table_cubin(target);
    REQUIRE(cubin.size() > 64);
    CHECK(std::string_view(reinterpret_cast<const char*>(cubin.data()), 4) ==
          "\x7f"
          "ELF");
    const std::string_view bytes(reinterpret_cast<const char*>(cubin.data()), cubin.size());
    CHECK(bytes.find(runtime::k_peer_table_entry) != std::string_view::npos);
  }
  CHECK(runtime::peer_table_cubin("sm_80").empty());
  CHECK(runtime::peer_table_cubin("sm_90a").data() != runtime::peer_table_cubin("sm_120a").data());
}

TEST_CASE("libnccl.so.2 loads with every entry point moejit uses, at the NCCL it was built against") {
  std::string why;
  const runtime::NcclApi* nccl = runtime::try_nccl(&why);
  REQUIRE_MESSAGE(nccl, why);
#define MOEJIT_NCCL_CHECK(name) CHECK(static_cast<bool>(nccl->name));
  MOEJIT_NCCL_FUNCTIONS(MOEJIT_NCCL_CHECK)
#undef MOEJIT_NCCL_CHECK
  CHECK(nccl->version / 100 == runtime::k_nccl_built_version / 100);
  CHECK(nccl->lsa_windows);  // the CUDA toolkit's NCCL: the headers the peer-table kernel was built with
  CHECK(std::string(nccl->ncclGetErrorString(ncclInvalidArgument)).size() > 0);
  MESSAGE("NCCL " << nccl->version << " (built against " << runtime::k_nccl_built_version << ")");
}

TEST_CASE("fill_peer_table refuses an unknown target and a peer count out of range before any launch") {
  CHECK_THROWS_WITH_AS(runtime::fill_peer_table("sm_80", nullptr, 2, 0, nullptr),
                       doctest::Contains("no peer-table kernel for sm_80"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(runtime::fill_peer_table("sm_90a", nullptr, 0, 0, nullptr),
                       doctest::Contains("peers = 0 is outside [1, 1024]"), std::invalid_argument);
}

TEST_CASE("the NCCL library is $MOEJIT_NCCL_LIBRARY where set, and a library that does not load is named") {
  const char* saved = std::getenv(runtime::k_nccl_library_env);
  const std::string before = saved ? saved : "";
  setenv(runtime::k_nccl_library_env, "/opt/elsewhere/libnccl.so.2", 1);
  CHECK(runtime::nccl_library() == "/opt/elsewhere/libnccl.so.2");
  setenv(runtime::k_nccl_library_env, "", 1);
  CHECK(runtime::nccl_library() == "libnccl.so.2");
  if (saved)
    setenv(runtime::k_nccl_library_env, before.c_str(), 1);
  else
    unsetenv(runtime::k_nccl_library_env);
  std::string why;
  CHECK(runtime::try_nccl_at("/nonexistent/libnccl.so.2", &why) == nullptr);
  CHECK(why.find("cannot load /nonexistent/libnccl.so.2") != std::string::npos);
  // A library without NCCL's entry points (the C library) is refused by name.
  why.clear();
  CHECK(runtime::try_nccl_at("libc.so.6", &why) == nullptr);
  CHECK(why.find("libc.so.6 has no ncclGetVersion") != std::string::npos);
}
