// The statistics every bench reports (bench/stats.h): medians of odd and even counts, the
// nearest-rank percentile, geometric means, a Timing from unsorted times, the stopping rule of
// the adaptive timers, and the JSON fields of a Timing in their order.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "bench/stats.h"

namespace winfer::bench {
namespace {

TEST_CASE("bench stats: median, percentile and geometric mean of unsorted values") {
  CHECK(median({}) == 0);
  CHECK(median({3}) == 3);
  CHECK(median({5, 1, 3}) == 3);
  CHECK(median({4, 1, 3, 2}) == 2.5);
  CHECK(percentile({}, 95) == 0);
  const std::vector<double> twenty = {20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  CHECK(percentile(twenty, 95) == 19);  // rank ceil(0.95 * 20) = 19
  CHECK(percentile(twenty, 100) == 20);
  CHECK(percentile(twenty, 1) == 1);   // rank at least 1
  CHECK(percentile({7, 9}, 50) == 7);  // nearest rank, not interpolated
  CHECK(geomean({}) == 0);
  CHECK(geomean({2, 8}) == doctest::Approx(4.0));
  CHECK(geomean({0.5, 2}) == doctest::Approx(1.0));
}

TEST_CASE("bench stats: a Timing is the median, extremes and count of the times") {
  const Timing none = summarize({});
  CHECK(none.runs == 0);
  CHECK(none.median_ms == 0);
  const Timing t = summarize({4.0, 1.0, 9.0, 2.0});
  CHECK(t.runs == 4);
  CHECK(t.min_ms == 1.0);
  CHECK(t.max_ms == 9.0);
  CHECK(t.median_ms == 3.0);
}

TEST_CASE("bench stats: timing goes on until the runs and the minimum time are reached, within max_runs") {
  CHECK(more_runs(0, 3, 1e9, 0.1));  // fewer than runs: on, however long it took
  CHECK(more_runs(2, 3, 1e9, 0.1));
  CHECK_FALSE(more_runs(3, 3, 100, 0.1));   // runs done and 100 ms reached
  CHECK(more_runs(3, 3, 99, 0.1));          // runs done, not yet 100 ms
  CHECK_FALSE(more_runs(1000, 3, 1, 0.1));  // 1000 timed: enough, however short
  CHECK_FALSE(more_runs(10, 3, 1, 0.1, 10));
}

TEST_CASE("bench stats: a Timing's JSON fields keep their names and order") {
  nlohmann::ordered_json j{{"layer", "a"}};
  Timing t;
  t.median_ms = 2;
  t.min_ms = 1;
  t.max_ms = 3;
  t.runs = 5;
  add_timing(&j, t);
  CHECK(j.dump() == R"({"layer":"a","median_ms":2.0,"min_ms":1.0,"max_ms":3.0,"runs":5})");
}

}  // namespace
}  // namespace winfer::bench
