// The one helper for arithmetic on untrusted numbers (src/checked_math.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "checked_math.h"

namespace mlbridge {
namespace {

TEST(CheckedMath, OverflowIsReportedNotWrapped) {
  int64_t r;
  EXPECT_TRUE(checked::mul<int64_t>(int64_t(1) << 31, int64_t(1) << 31, &r));
  EXPECT_EQ(r, int64_t(1) << 62);
  EXPECT_FALSE(checked::mul<int64_t>(INT64_MAX, 2, &r));
  EXPECT_FALSE(checked::mul<int64_t>(INT64_MIN, -1, &r));
  EXPECT_FALSE(checked::add<int64_t>(INT64_MAX, 1, &r));
  EXPECT_TRUE(checked::add<int64_t>(INT64_MAX, -1, &r));
  EXPECT_FALSE(checked::sub<int64_t>(INT64_MIN, 1, &r));
  uint64_t u;
  EXPECT_FALSE(checked::mul<uint64_t>(uint64_t(1) << 32, uint64_t(1) << 32, &u));
  EXPECT_EQ(checked::magnitude(INT64_MIN), uint64_t(1) << 63);
  EXPECT_EQ(checked::magnitude(-5), 5u);
}

TEST(CheckedMath, ElementCount) {
  size_t n = 7;
  const int64_t ok[] = {2, 3, 4};
  EXPECT_TRUE(checked::elementCount(ok, 3, 4, 96, &n));
  EXPECT_EQ(n, 24u);
  EXPECT_FALSE(checked::elementCount(ok, 3, 4, 95, &n));  // 96 bytes over a 95-byte limit
  EXPECT_TRUE(checked::elementCount(ok, 0, 8, 8, &n));    // a scalar
  EXPECT_EQ(n, 1u);
  const int64_t negative[] = {2, -1};
  EXPECT_FALSE(checked::elementCount(negative, 2, 1, 1 << 20, &n));
  // A zero dimension does not hide a huge one, and the product never wraps.
  const int64_t hidden[] = {0, INT64_MAX};
  EXPECT_FALSE(checked::elementCount(hidden, 2, 1, uint64_t(1) << 40, &n));
  const int64_t empty[] = {0, 5};
  EXPECT_TRUE(checked::elementCount(empty, 2, 8, 64, &n));
  EXPECT_EQ(n, 0u);
  const int64_t wraps[] = {int64_t(1) << 32, int64_t(1) << 32, 2};
  EXPECT_FALSE(checked::elementCount(wraps, 3, 1, std::numeric_limits<uint64_t>::max(), &n));
}

}  // namespace
}  // namespace mlbridge
