//===- PtxasBucketsTest.cpp - How a split module's kernels go to ptxas ----===//
//
// The bucket plan decides both how many ptxas processes a clean link runs
// and how much an edit recompiles: buckets of at least KernelsPerPtxasBucket
// kernels (fewer processes), a power of two of them (the plan moves only when
// the kernel count doubles or halves), and a kernel's bucket chosen by its
// name alone, so editing one kernel changes one bucket.
//===----------------------------------------------------------------------===//
#include "oxide/DeviceLinker.h"
#include "gtest/gtest.h"
#include <algorithm>
#include <map>
#include <set>

using namespace oxide;

namespace {

std::vector<std::string> kernels(size_t N) {
  std::vector<std::string> Out = {""}; // the common part
  for (size_t I = 0; I < N; ++I)
    Out.push_back("_ZN5crate6kernel" + std::to_string(I) + "17h0123456789abcdefE");
  return Out;
}

TEST(PtxasBuckets, CountIsAPowerOfTwoOfAtLeast24KernelsEach) {
  EXPECT_EQ(ptxasBucketCount(2), 2u);
  EXPECT_EQ(ptxasBucketCount(47), 2u);
  EXPECT_EQ(ptxasBucketCount(96), 4u);
  EXPECT_EQ(ptxasBucketCount(191), 4u);
  EXPECT_EQ(ptxasBucketCount(200), 8u);
  EXPECT_EQ(ptxasBucketCount(383), 8u);
  EXPECT_EQ(ptxasBucketCount(384), 16u);
  for (size_t K = 48; K < 5000; K += 7) {
    unsigned B = ptxasBucketCount(K);
    EXPECT_EQ(B & (B - 1), 0u) << K;
    EXPECT_GE(K / B, KernelsPerPtxasBucket) << K;
    EXPECT_LT(K / B, 2 * KernelsPerPtxasBucket) << K;
  }
}

TEST(PtxasBuckets, CommonPartAloneFirstEveryPartOnce) {
  std::vector<std::string> E = kernels(200);
  auto Plan = planPtxasBuckets(E);
  ASSERT_FALSE(Plan.empty());
  EXPECT_EQ(Plan[0], std::vector<size_t>{0});
  EXPECT_LE(Plan.size(), 1 + ptxasBucketCount(200));
  std::set<size_t> Seen;
  for (const auto &B : Plan) {
    EXPECT_FALSE(B.empty());
    for (size_t I : B)
      EXPECT_TRUE(Seen.insert(I).second) << "part " << I << " in two buckets";
  }
  EXPECT_EQ(Seen.size(), E.size());
  // Buckets in the order of their first part, parts in order within each.
  for (size_t B = 0; B < Plan.size(); ++B) {
    EXPECT_TRUE(std::is_sorted(Plan[B].begin(), Plan[B].end()));
    if (B > 0)
      EXPECT_LT(Plan[B - 1].front(), Plan[B].front());
  }
}

// What the per-bucket cache relies on: a kernel's bucket depends on its name,
// not on its position or on the other kernels, as long as the bucket count
// stays; an edit that renames nothing keeps every other bucket as it was.
TEST(PtxasBuckets, BucketOfAKernelIsItsNameAlone) {
  std::vector<std::string> E = kernels(200);
  auto bucketOf = [](const std::vector<std::vector<size_t>> &Plan,
                     const std::vector<std::string> &Names) {
    std::map<std::string, size_t> Out;
    for (size_t B = 0; B < Plan.size(); ++B)
      for (size_t I : Plan[B])
        Out[Names[I]] = B;
    return Out;
  };
  auto Before = bucketOf(planPtxasBuckets(E), E);
  // Another order, one kernel removed and one added: still 8 buckets.
  std::vector<std::string> F(E.rbegin(), E.rend());
  F.erase(F.begin() + 10);
  F.push_back("_ZN5crate9new_kernel17h0123456789abcdefE");
  auto PlanF = planPtxasBuckets(F);
  auto After = bucketOf(PlanF, F);
  // Buckets are numbered among the non-empty ones; compare who shares one.
  for (const auto &[A, BA] : Before)
    for (const auto &[B, BB] : Before)
      if (After.count(A) && After.count(B))
        EXPECT_EQ(BA == BB, After[A] == After[B]) << A << " and " << B;
}

} // namespace
