#include <doctest/doctest.h>

#include "tools/batch_list.hpp"
#include "tools/cli_args.hpp"

using moejit::tools::parse_batch_list;
using moejit::tools::UsageError;

TEST_CASE("batch lists: sizes, comma lists and power-of-two ranges") {
  CHECK(parse_batch_list("batches", "1-256", 1, 256) == std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128, 256});
  CHECK(parse_batch_list("batches", "1,3,8", 1, 256) == std::vector<int>{1, 3, 8});
  CHECK(parse_batch_list("batches", "3-100", 1, 256) == std::vector<int>{4, 8, 16, 32, 64});
  CHECK(parse_batch_list("batches", "8,1-4,8,2", 1, 256) == std::vector<int>{8, 1, 2, 4});
  CHECK(parse_batch_list("batches", "200", 1, 256) == std::vector<int>{200});
}

TEST_CASE("batch lists: errors name the flag, the item and the range") {
  CHECK_THROWS_WITH_AS(parse_batch_list("batches", "0", 1, 256), "--batches: 0 is outside the allowed range [1, 256]",
                       UsageError);
  CHECK_THROWS_WITH_AS(parse_batch_list("batches", "1-512", 1, 256),
                       "--batches: 512 is outside the allowed range [1, 256]", UsageError);
  CHECK_THROWS_WITH_AS(parse_batch_list("batches", "1,x", 1, 256),
                       "--batches: 'x' is not a batch size or range (expected e.g. 8, 1,3,8 or 1-256)", UsageError);
  CHECK_THROWS_WITH_AS(parse_batch_list("batches", "", 1, 256), doctest::Contains("'' is not a batch size"),
                       UsageError);
  CHECK_THROWS_WITH_AS(parse_batch_list("batches", "1,", 1, 256), doctest::Contains("'' is not a batch size"),
                       UsageError);
  CHECK_THROWS_WITH_AS(parse_batch_list("batches", "8-4", 1, 256),
                       "--batches: range '8-4' is empty (its start exceeds its end)", UsageError);
  CHECK_THROWS_WITH_AS(parse_batch_list("batches", "5-7", 1, 256), "--batches: range '5-7' holds no power of two",
                       UsageError);
  CHECK_THROWS_WITH_AS(parse_batch_list("batches", "1-2-3", 1, 256), doctest::Contains("'1-2-3' is not a batch size"),
                       UsageError);
}
