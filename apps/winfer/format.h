// Small formatting and file helpers shared by the subcommands.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "winfer/model.h"
#include "winfer/session.h"
#include "winfer/status.h"
#include "winfer/tensor.h"

namespace winfer::cli {

std::string human_count(double value);  // 11.7M, 1.82G
std::string human_bytes(double bytes);  // 44.6 MiB
// Prints "error: <message>" to stderr and returns the exit code 1.
int fail(const Status& status);
// A zeroed tensor (NCHW for rank 4) of a size the user chose (a batch): refused with the numbers
// (check_host_memory_for, "WHAT [shape] needs X MiB, more than ...") when the machine has less
// memory available, rather than left to std::bad_alloc or the OOM killer.
Result<Tensor> allocate_checked(const Shape& shape, const std::string& what);
// A seeded uniform [-1, 1) tensor (NCHW for rank 4), checked as allocate_checked.
Result<Tensor> random_tensor(const Shape& shape, uint64_t seed);
// What to pack the model's weights for at load (LoadOptions::pack_for) when a session will run
// `conv` on `device`: that algorithm on the CPU, so that the process holds one copy of the
// weights, the default elsewhere (CUDA sessions upload their own; "auto" chooses per layer).
std::string pack_for(const std::string& device, const std::string& conv);
// --autotune-cache FILE (SessionOptions::autotune_cache) keeps the per-layer timings of
// --conv auto: refused, naming the flag, where none of `convs` is "auto" (it would be ignored).
Status check_autotune_cache_flag(const std::string& cache, const std::vector<std::string>& convs);
// How a session runs its batch (MemoryReport::images_per_run, lanes): " (runs of 2, 2 side by
// side)" when it runs the batch in several runs, "" when at once.
std::string batch_runs_note(const MemoryReport& report, int64_t batch);
// Text as a JSON string literal, quotes included.
std::string json_quote(const std::string& text);

// ---- classification results (run, classify, eval) ----

struct ClassScore {
  int64_t index = 0;
  double probability = 0;
};
// The model's labels if it has a labels file with one line per class; otherwise empty, after a
// warning on stderr (callers then print class indices).
std::vector<std::string> model_labels(const Model& model, int64_t classes);
// labels[index], or "class N" when there are no labels.
std::string class_label(const std::vector<std::string>& labels, int64_t index);
// Probabilities of one output row: its softmax, or the row itself when the model's last layer
// already is a softmax.
std::vector<double> class_probabilities(const Model& model, const float* row, int64_t classes);
// The k most probable classes, most probable first (ties: lower index first).
std::vector<ClassScore> top_classes(const std::vector<double>& probabilities, int64_t k);
// The index of the largest value (the first one on ties).
int64_t argmax(const float* row, int64_t classes);
// "  1  0.9731  Sneaker" lines, as `winfer run` and `winfer classify` print them.
void print_class_scores(const std::vector<ClassScore>& scores, const std::vector<std::string>& labels);

// A one-line progress bar on stderr for long runs, drawn only when stderr is a terminal (so
// logs and pipes stay clean). clear() erases it before another message goes to stderr.
class ProgressBar {
 public:
  ProgressBar(int64_t total, std::string unit, bool wanted = true);
  ~ProgressBar() { finish(); }
  void update(int64_t done);
  void clear();
  void finish();

 private:
  void draw();
  int64_t total_ = 0, done_ = 0;
  std::string unit_;
  bool enabled_ = false, visible_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace winfer::cli
