#include <doctest/doctest.h>

#include "tools/cli_args.hpp"
#include "tools/codegen_flags.hpp"

using moejit::tools::Args;
using moejit::tools::OptionSpec;
using moejit::tools::UsageError;

namespace {
const std::vector<OptionSpec> k_options = {{"batch", true, "", "B"}, {"json", false, ""}};
Args parse(std::vector<std::string> words) {
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  return Args(k_options, static_cast<int>(argv.size()), argv.data(), 0);
}
}  // namespace

TEST_CASE("cli args: values, flags and positionals") {
  Args a = parse({"--batch", "8", "--json", "extra"});
  CHECK(a.get_int("batch", 1, 1, 256) == 8);
  CHECK(a.has("json"));
  CHECK(a.positional() == std::vector<std::string>{"extra"});
  CHECK(parse({"--batch=16"}).get_int("batch", 1, 1, 256) == 16);
  CHECK(parse({}).get_int("batch", 3, 1, 256) == 3);
}

TEST_CASE("cli args: errors name the option, the value and the range") {
  CHECK_THROWS_WITH_AS(parse({"--bogus"}), "unknown option '--bogus' (see --help)", UsageError);
  CHECK_THROWS_WITH_AS(parse({"--batch"}), "option '--batch' needs a B", UsageError);
  CHECK_THROWS_WITH_AS(parse({"--json=1"}), "option '--json' takes no value", UsageError);
  CHECK_THROWS_WITH_AS(parse({"--batch", "x"}).get_int("batch", 1, 1, 256), "--batch: 'x' is not an integer",
                       UsageError);
  CHECK_THROWS_WITH_AS(parse({"--batch", "300"}).get_int("batch", 1, 1, 256),
                       "--batch: 300 is outside the allowed range [1, 256]", UsageError);
}

TEST_CASE("cli args: a repeatable option keeps every value in order") {
  const std::vector<OptionSpec> options = {{"tensormap", true, "", "NAME", true}, {"batch", true, "", "B"}};
  std::vector<std::string> words = {"--tensormap", "a:2", "--batch", "4", "--tensormap=b"};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  const Args a(options, static_cast<int>(argv.size()), argv.data(), 0);
  CHECK(a.get_all("tensormap") == std::vector<std::string>{"a:2", "b"});
  CHECK(a.get_all("absent").empty());
  CHECK(a.get("batch") == "4");
  CHECK(moejit::tools::format_options(options).find("--tensormap NAME ...") != std::string::npos);
}

TEST_CASE("cli args: a codegen flag's range is its help's, and 0 (as planned) is the flag left out") {
  const std::vector<OptionSpec> options = moejit::tools::codegen_option_specs();
  auto options_of = [&](std::vector<std::string> words) {
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    return moejit::tools::codegen_options(Args(options, static_cast<int>(argv.size()), argv.data(), 0));
  };
  CHECK(options_of({}).stages == 0);
  CHECK(options_of({"--stages", "2"}).stages == 2);
  // An explicit 0 was taken as "planned", and 17 named the range [0, 16] against the help's 2..16.
  CHECK_THROWS_WITH_AS(options_of({"--stages", "0"}), "--stages: 0 is outside the allowed range [2, 16]", UsageError);
  CHECK_THROWS_WITH_AS(options_of({"--stages", "17"}), "--stages: 17 is outside the allowed range [2, 16]", UsageError);
  CHECK_THROWS_WITH_AS(options_of({"--tile-n", "0"}), "--tile-n: 0 is outside the allowed range [8, 64]", UsageError);
  CHECK_THROWS_WITH_AS(options_of({"--ctas-per-sm", "0"}), "--ctas-per-sm: 0 is outside the allowed range [1, 8]",
                       UsageError);
  CHECK_THROWS_AS(options_of({"--consumer-groups", "0"}), UsageError);
  CHECK_THROWS_AS(options_of({"--activation-warps", "0"}), UsageError);
}

TEST_CASE("cli args: a long bad value is quoted as an excerpt, not whole") {
  const std::vector<OptionSpec> options = moejit::tools::codegen_option_specs();
  for (const char* flag : {"--path", "--recipe"}) {
    std::vector<std::string> words = {flag, std::string(10000, 'x')};
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    const Args a(options, static_cast<int>(argv.size()), argv.data(), 0);
    try {
      moejit::codegen::MoeConfig config;
      moejit::codegen::MoeCodegenOptions o = moejit::tools::codegen_options(a);
      moejit::tools::apply_recipe(a, config, o);
      FAIL("accepted");
    } catch (const UsageError& e) {
      CAPTURE(flag);
      CHECK(std::string(e.what()).size() < 400);  // the 10000 characters were echoed
    }
  }
}
