// Spearman rank correlation: the textbook cases, ties and the refusals.
#include <gtest/gtest.h>

#include <cmath>

#include "gemvtune/tuner.hpp"

using gemvtune::spearman_rank_correlation;

TEST(RankCorrelation, SameOrderIsOneReversedIsMinusOne) {
  EXPECT_DOUBLE_EQ(spearman_rank_correlation({1, 2, 3, 4}, {10, 20, 30, 45}), 1.0);
  EXPECT_DOUBLE_EQ(spearman_rank_correlation({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // Only the order counts, not the values.
  EXPECT_DOUBLE_EQ(spearman_rank_correlation({1, 2, 3}, {1, 100, 1000}), 1.0);
}

TEST(RankCorrelation, KnownValue) {
  // Ranks a = 1..5, b = 2,1,4,3,5: d^2 sum = 4, rho = 1 - 6*4 / (5*24) = 0.8.
  EXPECT_NEAR(spearman_rank_correlation({1, 2, 3, 4, 5}, {2, 1, 4, 3, 5}), 0.8, 1e-12);
}

TEST(RankCorrelation, TiesGetAverageRanks) {
  // b's ranks are 1.5, 1.5, 3: Pearson of (1,2,3) with (1.5,1.5,3) = 0.866...
  EXPECT_NEAR(spearman_rank_correlation({1, 2, 3}, {7, 7, 9}), std::sqrt(3.0) / 2, 1e-12);
}

TEST(RankCorrelation, UndefinedCasesAreNaN) {
  EXPECT_TRUE(std::isnan(spearman_rank_correlation({}, {})));
  EXPECT_TRUE(std::isnan(spearman_rank_correlation({1}, {2})));
  EXPECT_TRUE(std::isnan(spearman_rank_correlation({1, 2, 3}, {5, 5, 5})));
}

TEST(RankCorrelation, DifferentLengthsThrow) {
  EXPECT_THROW(spearman_rank_correlation({1, 2}, {1, 2, 3}), gemvtune::InvalidArgument);
}
