#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "templates/registry.hpp"

using namespace moejit::templates;

TEST_CASE("every template is embedded byte for byte") {
  REQUIRE(!all().empty());
  for (const TemplateFile& f : all()) {
    CAPTURE(f.name);
    std::ifstream in(std::string(MOEJIT_SOURCE_DIR) + "/templates/" + std::string(f.name), std::ios::binary);
    REQUIRE(in);
    std::stringstream ss;
    ss << in.rdbuf();
    CHECK(ss.str() == f.bytes);
  }
}

TEST_CASE("template closure follows includes and rejects unknown names") {
  auto c = closure("smoke_mxfp4_dequant.cuh");
  REQUIRE(c.size() == 2);
  CHECK(c[0]->name == "mx_types.cuh");
  CHECK_THROWS_WITH(closure("nope.cuh"), "unknown kernel template 'nope.cuh'");
}

TEST_CASE("templates are self-contained: no toolkit headers") {
  for (const TemplateFile& f : all()) {
    CAPTURE(f.name);
    CHECK(f.bytes.find("#include <") == std::string_view::npos);
  }
}
