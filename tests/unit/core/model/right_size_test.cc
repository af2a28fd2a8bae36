// Right-sizing arithmetic (core/model/right_size.h): MIG profile names, the smallest shape a
// measured peak fits with headroom, GPU-hours requested against used.
#include "core/model/right_size.h"

#include <gtest/gtest.h>

namespace sluice {
namespace right_size_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

constexpr int64_t kGi = 1024;

// An H100 80GB and the MIG profiles NVIDIA offers on it, as a cluster may configure them.
std::vector<GpuShape> h100_cluster() {
  std::vector<GpuShape> shapes{{"H100", 80 * kGi}, {"L4", 24 * kGi}};
  for (const char* p : {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"})
    shapes.push_back(*mig_shape(p));
  return distinct_shapes(shapes);
}

TEST(RightSize, MigProfileNames) {
  auto s = mig_shape("nvidia.com/mig-1g.20gb");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "1g.20gb");
  EXPECT_EQ(s->memory_mib, 20 * kGi);
  EXPECT_EQ(s->compute_slices, 1);
  EXPECT_TRUE(s->mig);
  EXPECT_EQ(mig_shape("1g.10gb+me")->memory_mib, 10 * kGi);
  EXPECT_EQ(mig_shape("3g.40gb")->compute_slices, 3);
  for (const char* bad : {"", "1g", "0g.10gb", "8g.80gb", "1g.gb", "1g.10", "1g.10gb+x", "H100",
                          "1g.10gbx", "g.10gb", "1g.1234567gb"})
    EXPECT_FALSE(mig_shape(bad)) << bad;
}

TEST(RightSize, ElevenGibOnAnH100FitsOneTwentyGbSlice) {
  // 11 GiB + 20% = 13.2 GiB: 1g.10gb is too small; 1g.20gb and 2g.20gb hold it, the one with
  // fewer compute slices wins.
  auto fit = smallest_fit(h100_cluster(), 11 * kGi, 80 * kGi);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->name, "1g.20gb");
}

TEST(RightSize, HeadroomDecidesAtTheEdge) {
  // 8.5 GiB fits a 10 GiB slice with 15% headroom (9.775 GiB) but not with 20% (10.2 GiB).
  const int64_t peak = 8 * kGi + kGi / 2;
  EXPECT_EQ(smallest_fit(h100_cluster(), peak, 80 * kGi, 0.15)->name, "1g.10gb");
  EXPECT_EQ(smallest_fit(h100_cluster(), peak, 80 * kGi, 0.2)->name, "1g.20gb");
}

TEST(RightSize, WholeSmallerGpuWhenNoSliceFits) {
  // 18 GiB + 20% = 21.6 GiB: no 20 GB slice; the 24 GiB L4 is smaller than a 40 GB slice.
  EXPECT_EQ(smallest_fit(h100_cluster(), 18 * kGi, 80 * kGi)->name, "L4");
}

TEST(RightSize, NothingSmallerThanTheRequest) {
  // 70 GiB + 20% needs more than 80 GiB: nothing; 30 GiB on a 40 GB slice request: nothing
  // smaller than what it has.
  EXPECT_FALSE(smallest_fit(h100_cluster(), 70 * kGi, 80 * kGi));
  EXPECT_FALSE(smallest_fit(h100_cluster(), 30 * kGi, 40 * kGi));
  EXPECT_FALSE(smallest_fit(h100_cluster(), 0, 80 * kGi));  // nothing measured
  EXPECT_FALSE(smallest_fit({}, 1 * kGi, 80 * kGi));
}

TEST(RightSize, DistinctShapesKeepTheLargestOfAModel) {
  auto shapes = distinct_shapes({{"A100", 40 * kGi}, {"A100", 80 * kGi}, {"", 1}, {"X", 0}});
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes[0].memory_mib, 80 * kGi);
}

TEST(RightSize, GpuHoursRequestedAndUsed) {
  auto h = gpu_hours(2, 1800, 25);  // 2 GPUs for half an hour at 25%
  EXPECT_DOUBLE_EQ(h.requested, 1.0);
  EXPECT_DOUBLE_EQ(h.used, 0.25);
  EXPECT_DOUBLE_EQ(gpu_hours(1, 3600, 150).used, 1.0);  // clamped
  EXPECT_DOUBLE_EQ(gpu_hours(1, -5, 50).requested, 0.0);
  EXPECT_DOUBLE_EQ(gpu_hours(0.5, 7200, 100).used, 1.0);  // a shared half GPU
}

TEST(RightSize, MibText) {
  EXPECT_EQ(mib_text(512), "512 MiB");
  EXPECT_EQ(mib_text(11 * kGi), "11 GiB");
  EXPECT_EQ(mib_text(11 * kGi + kGi / 5), "11.2 GiB");
}

// A one-pod-set job of `pods` pods with `gpus` whole GPUs each, on `models` (empty: any).
Job gpu_job(int32_t pods, int32_t gpus, std::vector<std::string> models = {}) {
  Job j;
  PodSet ps;
  ps.count = pods;
  ps.gpus = gpus;
  ps.requests[kGpu] = gpus * kMilliPerGpu;
  j.pod_sets.push_back(ps);
  j.allowed_models = std::move(models);
  return j;
}

TEST(RightSizePolicy, SmallestModelOrCoveredSliceBelowTheRequestedGpu) {
  const auto shapes = h100_cluster();  // H100 80, L4 24, 1g.10gb .. 7g.80gb
  // 11 GiB + 20% on an H100: a covered 20 GB slice wins; uncovered slices are skipped.
  auto s = right_size_shape(gpu_job(1, 1, {"H100"}), shapes, 11 * kGi, 0.2,
                            {"nvidia.com/mig-1g.20gb", "nvidia.com/mig-3g.40gb"});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "1g.20gb");
  s = right_size_shape(gpu_job(1, 1, {"H100"}), shapes, 11 * kGi, 0.2, {});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "L4");
  // Pods of two GPUs: never a MIG slice (one process sees one MIG instance), a model still.
  s = right_size_shape(gpu_job(2, 2), shapes, 11 * kGi, 0.2, {"nvidia.com/mig-1g.20gb"});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "L4");
  // Already on the smallest that fits: nothing smaller.
  EXPECT_FALSE(right_size_shape(gpu_job(1, 1, {"L4"}), shapes, 11 * kGi, 0.2, {}));
  // No GPU, a fraction of one: not right-sized.
  EXPECT_FALSE(right_size_shape(gpu_job(1, 0), shapes, 1 * kGi, 0.2, {}));
  Job frac = gpu_job(1, 1);
  frac.pod_sets[0].gpu_milli = 500;
  EXPECT_FALSE(right_size_shape(frac, shapes, 1 * kGi, 0.2, {}));
}

TEST(RightSizePolicy, RightSizedJobAsksForTheModelOrOneSlicePerPod) {
  const Job j = gpu_job(3, 1, {"H100"});
  const Job on_l4 = right_sized(j, {"L4", 24 * kGi}, 0);
  EXPECT_EQ(on_l4.allowed_models, std::vector<std::string>{"L4"});
  EXPECT_EQ(on_l4.pod_sets[0].requests[kGpu], kMilliPerGpu);
  const ResourceId mig = 5;
  const Job sliced = right_sized(j, *mig_shape("1g.10gb"), mig);
  EXPECT_TRUE(sliced.allowed_models.empty());
  EXPECT_EQ(sliced.pod_sets[0].gpus, 0);
  EXPECT_EQ(sliced.pod_sets[0].requests[kGpu], 0);
  EXPECT_EQ(sliced.pod_sets[0].requests[mig], kMilliPerGpu);
  EXPECT_EQ(sliced.pod_sets[0].count, 3);
}

}  // namespace
}  // namespace right_size_test
}  // namespace sluice
