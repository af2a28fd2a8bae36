#include "cli/client_parse_errors.h"

#include <gtest/gtest.h>

namespace sluice::cli::parse_errors_test {

TEST(UnknownOption, NamesTheOptionAndTheCommand) {
  EXPECT_EQ(unknown_option_text("run", "The following arguments were not expected: -- --bogus"),
            "sluice run: unknown option --bogus (sluice run --help lists them)");
  EXPECT_EQ(unknown_option_text("nodes cordon", "The following argument was not expected: -x"),
            "sluice nodes cordon: unknown option -x (sluice nodes cordon --help lists them)");
  EXPECT_EQ(unknown_option_text("jobs", "The following argument was not expected: --zz=3"),
            "sluice jobs: unknown option --zz (sluice jobs --help lists them)");
}

TEST(UnknownOption, AStrayWordOrANegativeNumberIsLeftToCli11) {
  EXPECT_EQ(unknown_option_text("run", "The following argument was not expected: true"), "");
  EXPECT_EQ(unknown_option_text("run", "The following argument was not expected: -5"), "");
  EXPECT_EQ(unknown_option_text("run", "no colon here"), "");
}

}  // namespace sluice::cli::parse_errors_test
