// conv_algorithm "auto": see conv_autotune.h.
#include "engine/src/conv_autotune.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <sstream>

#include "engine/src/conv_capability.h"
#include "engine/src/core/file_io.h"
#include "engine/src/graph.h"
#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/conv_then_conv.h"
#include "kernels/cpu/cpu_common.h"
#include "winfer/log.h"

namespace winfer {
namespace {

constexpr size_t kTooLarge = std::numeric_limits<size_t>::max();

size_t local_bytes(const ConvCandidate& c) { return c.workspace_bytes + c.packed_weight_bytes; }

std::string format_ms(double ms) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g ms", ms);
  return buffer;
}

std::string format_bytes(size_t bytes) {
  char buffer[48];
  if (bytes >= (size_t(1) << 20)) {
    std::snprintf(buffer, sizeof buffer, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  } else if (bytes >= 1024) {
    std::snprintf(buffer, sizeof buffer, "%.1f KiB", static_cast<double>(bytes) / 1024);
  } else {
    std::snprintf(buffer, sizeof buffer, "%zu B", bytes);
  }
  return buffer;
}

// Index of the fastest candidate; ties: the smaller memory, then the earlier one.
int fastest_of(const std::vector<ConvCandidate>& candidates) {
  int best = 0;
  for (int c = 1; c < static_cast<int>(candidates.size()); ++c) {
    const ConvCandidate& a = candidates[c];
    const ConvCandidate& b = candidates[best];
    if (a.milliseconds < b.milliseconds || (a.milliseconds == b.milliseconds && local_bytes(a) < local_bytes(b))) {
      best = c;
    }
  }
  return best;
}

// Index of the candidate with the least memory; ties: the faster, then the earlier one.
int smallest_of(const std::vector<ConvCandidate>& candidates) {
  int best = 0;
  for (int c = 1; c < static_cast<int>(candidates.size()); ++c) {
    const ConvCandidate& a = candidates[c];
    const ConvCandidate& b = candidates[best];
    if (local_bytes(a) < local_bytes(b) || (local_bytes(a) == local_bytes(b) && a.milliseconds < b.milliseconds)) {
      best = c;
    }
  }
  return best;
}

std::string others_list(const std::vector<ConvCandidate>& candidates, int chosen) {
  std::string s;
  for (int c = 0; c < static_cast<int>(candidates.size()); ++c) {
    if (c == chosen) continue;
    s += (s.empty() ? "" : ", ") + candidates[c].algorithm + " " + format_ms(candidates[c].milliseconds);
  }
  return s;
}

}  // namespace

size_t session_bytes_of(const MemoryReport& report, bool plan_memory) {
  size_t activations = report.arena_bytes;
  if (!plan_memory) {
    activations = report.max_workspace_bytes;
    for (const MemoryBuffer& b : report.buffers) {
      if (!b.workspace) activations += b.bytes;
    }
  }
  return activations + report.session_weights_bytes;
}

namespace {

// Phase 1: while the session is over budget, switch the one layer whose smaller candidate costs
// the fewest milliseconds per byte saved; returns the session's bytes, or why no switch is left.
Result<size_t> downgrade_to_budget(const std::vector<ConvLayerCandidates>& layers, size_t budget,
                                   const SessionBytesFn& session_bytes, std::vector<int>* choice, size_t bytes) {
  const size_t count = layers.size();
  while (bytes > budget) {
    int best_layer = -1, best_candidate = -1;
    double best_penalty = 0;
    size_t best_bytes = 0;
    int fallback_layer = -1, fallback_candidate = -1;  // saves only the layer's own bytes
    double fallback_penalty = 0;
    for (size_t i = 0; i < count; ++i) {
      const std::vector<ConvCandidate>& cands = layers[i].candidates;
      const ConvCandidate& current = cands[(*choice)[i]];
      for (int c = 0; c < static_cast<int>(cands.size()); ++c) {
        if (local_bytes(cands[c]) >= local_bytes(current)) continue;
        const double lost = std::max(0.0, cands[c].milliseconds - current.milliseconds);
        std::vector<int> trial = *choice;
        trial[i] = c;
        const size_t trial_bytes = session_bytes(trial);
        if (trial_bytes < bytes) {
          const double penalty = lost / static_cast<double>(bytes - trial_bytes);
          if (best_layer < 0 || penalty < best_penalty || (penalty == best_penalty && trial_bytes < best_bytes)) {
            best_layer = static_cast<int>(i), best_candidate = c, best_penalty = penalty, best_bytes = trial_bytes;
          }
        } else {
          const double penalty = lost / static_cast<double>(local_bytes(current) - local_bytes(cands[c]));
          if (fallback_layer < 0 || penalty < fallback_penalty) {
            fallback_layer = static_cast<int>(i), fallback_candidate = c, fallback_penalty = penalty;
          }
        }
      }
    }
    if (best_layer >= 0) {
      (*choice)[best_layer] = best_candidate;
      bytes = best_bytes;
    } else if (fallback_layer >= 0) {
      (*choice)[fallback_layer] = fallback_candidate;
      bytes = session_bytes(*choice);
    } else {
      std::vector<int> smallest(count);
      for (size_t i = 0; i < count; ++i) smallest[i] = smallest_of(layers[i].candidates);
      const size_t minimum = std::min(bytes, session_bytes(smallest));
      return out_of_memory("memory_budget of " + std::to_string(budget) + " bytes (" + format_bytes(budget) +
                           ") cannot be met: the session needs at least " + std::to_string(minimum) + " bytes (" +
                           format_bytes(minimum) + ") with the least memory-hungry algorithm of every convolution");
    }
  }
  return bytes;
}

// Phase 2: the downgrade may have overshot; move layers back to faster candidates, the largest
// gain first, wherever the budget still holds. Returns the session's bytes.
size_t upgrade_within_budget(const std::vector<ConvLayerCandidates>& layers, const std::vector<int>& fastest,
                             size_t budget, const SessionBytesFn& session_bytes, std::vector<int>* choice,
                             size_t bytes) {
  std::vector<size_t> order;
  for (size_t i = 0; i < layers.size(); ++i) {
    if ((*choice)[i] != fastest[i]) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto gain = [&](size_t i) {
      return layers[i].candidates[(*choice)[i]].milliseconds - layers[i].candidates[fastest[i]].milliseconds;
    };
    return gain(a) > gain(b);
  });
  for (size_t i : order) {
    const std::vector<ConvCandidate>& cands = layers[i].candidates;
    std::vector<int> faster;
    for (int c = 0; c < static_cast<int>(cands.size()); ++c) {
      if (cands[c].milliseconds < cands[(*choice)[i]].milliseconds) faster.push_back(c);
    }
    std::stable_sort(faster.begin(), faster.end(),
                     [&](int a, int b) { return cands[a].milliseconds < cands[b].milliseconds; });
    for (int c : faster) {
      std::vector<int> trial = *choice;
      trial[i] = c;
      const size_t trial_bytes = session_bytes(trial);
      if (trial_bytes <= budget) {
        *choice = trial;
        bytes = trial_bytes;
        break;
      }
    }
  }
  return bytes;
}

// Phase 3: each layer's rule and reason for its choice, as the session's memory report shows them.
void explain_choices(const std::vector<ConvLayerCandidates>& layers, const std::vector<int>& fastest, size_t budget,
                     const SessionBytesFn& session_bytes, ConvSelection* sel) {
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::vector<ConvCandidate>& cands = layers[i].candidates;
    const int c = sel->choice[i];
    const std::string chosen = cands[c].algorithm + " " + format_ms(cands[c].milliseconds);
    if (cands.size() == 1) {
      sel->rules.push_back("only supported");
      sel->reasons.push_back("only " + chosen + " supports this layer");
    } else if (c == fastest[i]) {
      sel->rules.push_back("fastest");
      sel->reasons.push_back("fastest: " + chosen + " (" + others_list(cands, c) + ")");
    } else {
      std::vector<int> trial = sel->choice;
      trial[i] = fastest[i];
      const size_t over = session_bytes(trial);
      const ConvCandidate& f = cands[fastest[i]];
      sel->rules.push_back("memory_budget");
      sel->reasons.push_back(
          chosen + " to stay within memory_budget: the faster " + f.algorithm + " " + format_ms(f.milliseconds) +
          " would need " +
          (over == kTooLarge || over <= budget ? std::string("more memory") : format_bytes(over - budget) + " more") +
          " (" + format_bytes(local_bytes(f)) + " of workspace and packed weights against " +
          format_bytes(local_bytes(cands[c])) + ")");
    }
  }
}

}  // namespace

// Every layer's fastest candidate, then (over budget) downgrade and upgrade, then the reasons.
Result<ConvSelection> select_conv_algorithms(const std::vector<ConvLayerCandidates>& layers, size_t budget,
                                             const SessionBytesFn& session_bytes) {
  for (const ConvLayerCandidates& layer : layers) {
    if (layer.candidates.empty())
      return internal_error("layer '" + layer.layer + "': no convolution algorithm supports it");
  }
  ConvSelection sel;
  std::vector<int> fastest(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) fastest[i] = fastest_of(layers[i].candidates);
  sel.choice = fastest;
  size_t bytes = session_bytes(sel.choice);
  if (budget > 0 && bytes > budget) {
    WINFER_ASSIGN_OR_RETURN(bytes, downgrade_to_budget(layers, budget, session_bytes, &sel.choice, bytes));
    bytes = upgrade_within_budget(layers, fastest, budget, session_bytes, &sel.choice, bytes);
  }
  sel.session_bytes = bytes;
  explain_choices(layers, fastest, budget, session_bytes, &sel);
  return sel;
}

namespace {

const char* isa_name() {
  switch (cpu::cpu_isa()) {
    case cpu::Isa::kAvx512: return "avx512";
    case cpu::Isa::kAvx2: return "avx2";
    case cpu::Isa::kGeneric: return "generic";
  }
  return "unknown";
}

// The autotune cache's first line: what marks a file as one. A path that holds anything else is
// refused, never read as a cache nor replaced by one (SessionOptions::autotune_cache).
constexpr const char* kCacheMagic = "# winfer conv autotune cache";
constexpr detail::InputKind kCacheInput{"autotune cache", uint64_t(16) << 20};  // 16 MiB

bool looks_like_cache(const std::string& head, uint64_t /*size*/) { return head.rfind(kCacheMagic, 0) == 0; }
const detail::OutputKind kCacheOutput{"autotune cache", "a winfer autotune cache", looks_like_cache};

// The autotune cache: one line per measurement, "key<TAB>milliseconds"; '#' starts a comment.
class TimingCache {
 public:
  // The cache at `path` (none when empty): read when the file is there, refused when the path
  // holds anything but a winfer autotune cache (or an empty file), started empty otherwise.
  static Result<TimingCache> open(const std::string& path) {
    TimingCache cache;
    cache.path_ = path;
    if (path.empty()) return cache;
    WINFER_RETURN_IF_ERROR(detail::check_output_path(path, kCacheOutput));
    auto text = detail::read_input_file(path, kCacheInput);
    if (!text.ok()) {
      if (text.status().code() == ErrorCode::kNotFound) return cache;  // not there yet: save() creates it
      return text.status();
    }
    cache.parse(text.value());
    return cache;
  }

  // `layer`: what was timed, the layer's shape (with " then " and its absorbed convolution's for a pair).
  static std::string key(const std::string& layer, int threads, const std::string& algorithm) {
    return std::string(isa_name()) + " threads=" + std::to_string(threads) + " " + layer + " " + algorithm;
  }
  // A time read from the file, or measured earlier in this session (a layer of the same shape).
  struct Entry {
    double ms = 0;
    bool from_file = false;
  };
  const Entry* find(const std::string& key) const {
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }
  void add(const std::string& key, double ms) {
    entries_[key] = {ms, false};
    dirty_ = true;
  }

  // Rewrites the file (entries read + measured) through a temporary file and a rename
  // (detail::FileWriter), so that a concurrent reader never sees half a file and nothing but a
  // cache is ever replaced. A failure only costs a warning.
  void save() const {
    if (path_.empty() || !dirty_) return;
    std::string text = std::string(kCacheMagic) + ": <isa> threads=<T> <conv shape> <algorithm><TAB><milliseconds>\n";
    char ms[32];
    for (const auto& [k, v] : entries_) {
      std::snprintf(ms, sizeof ms, "%.6g", v.ms);
      text += k + '\t' + ms + '\n';
    }
    Status s = detail::write_output_file(path_, kCacheOutput, text.data(), text.size());
    if (!s.ok()) log_message(LogLevel::kWarning, "the autotune cache was not saved: " + s.message());
  }

 private:
  void parse(const std::string& text) {
    std::istringstream in(text);
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (line.empty() || line[0] == '#') continue;
      const size_t tab = line.rfind('\t');
      char* end = nullptr;
      const double ms = tab == std::string::npos ? -1 : std::strtod(line.c_str() + tab + 1, &end);
      if (tab == std::string::npos || end == line.c_str() + tab + 1 || !(ms >= 0) || !std::isfinite(ms)) {
        log_message(LogLevel::kWarning, path_ + ":" + std::to_string(number) +
                                            ": autotune cache line ignored (expected key<TAB>milliseconds)");
        continue;
      }
      entries_[line.substr(0, tab)] = {ms, true};
    }
  }

  std::string path_;
  std::map<std::string, Entry> entries_;
  bool dirty_ = false;
};

// Milliseconds on the calling thread's CPU clock: time the thread was not running (another
// process had the core) does not count. Used when the kernels run on this thread only.
double thread_cpu_ms() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

double wall_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Milliseconds of one call of `run`. With threads == 1 the thread's CPU time (robust on a busy
// machine), else wall time (a team's work is not on this thread's clock).
template <class Run>
double time_once(int threads, const Run& run) {
  const bool cpu_clock = threads == 1;
  const double start = cpu_clock ? thread_cpu_ms() : wall_ms();
  run();
  return (cpu_clock ? thread_cpu_ms() : wall_ms()) - start;
}

// huge_pages: as the session will hold them (ConvAlgorithm::packed_weights_in_huge_pages), so
// that the timing sees the same placement.
Tensor allocate_bytes(size_t bytes, bool huge_pages = false) {
  return Tensor::allocate(Shape{static_cast<int64_t>((bytes + sizeof(float) - 1) / sizeof(float))}, Layout::kPlain,
                          DType::kFloat32, huge_pages);
}

Tensor packed_for(const ConvAlgorithm& a, const ConvParams& p, const float* weight_oihw) {
  Tensor packed = allocate_bytes(a.packed_weight_bytes(p), a.packed_weights_in_huge_pages());
  a.pack_weights(p, weight_oihw, packed.data());
  return packed;
}

// One candidate ready to run: its packed weights and workspace, and for a layer with an absorbed
// convolution (ConvCapability::absorbed_conv) the pair as its kernel runs it, band by band, with
// the second stage's algorithm and weights.
struct PreparedCandidate {
  Tensor packed, workspace;
  std::optional<ConvThenConv> pair;
  ConvStage second;
};

// One run of candidate `a` on the layer (or on its pair); milliseconds.
double run_once(const ConvAlgorithm& a, const ConvParams& p, const ConvCapability& op, const PreparedCandidate& c,
                const float* input, float* output, int threads) {
  const float* bias = op.bias().empty() ? nullptr : op.bias().data();
  void* workspace = c.workspace.empty() ? nullptr : const_cast<float*>(c.workspace.data());
  if (c.pair) {
    const ConvStage first{&a, c.packed.data(), bias, op.activation(), std::nullopt};
    return time_once(threads, [&] { c.pair->run(input, first, c.second, output, workspace, threads); });
  }
  return time_once(threads,
                   [&] { a.run(p, input, c.packed.data(), bias, output, workspace, op.activation(), threads); });
}

// Times every candidate whose time is not known yet, in rounds: each round runs every candidate
// once, in turn, and each keeps its best run, so that a run slowed down by another process on a
// busy machine does not decide. From the second round on, candidates more than 8x slower than
// the best so far (the reference loops, typically) are not run again, except, once, those whose
// first call took under kColdCallMs: a first call can pay a one-time cost of a few
// milliseconds (im2col's first in a process loads OpenBLAS: 5 ms for a layer of 0.02, which then
// stood as im2col's time), which makes a slow-looking call of more than kColdCallMs at most
// 1.3x its true time; a second call of a truly slow candidate costs no more than that. A layer that absorbed a
// convolution is timed with it: the pair's second stage follows the first's algorithm
// (RegNet's 1x1 -> grouped 3x3: the 1x1 alone timed indirect 0.9x im2win, the pair with its
// grouped 3x3 indirect too ran 1.2-1.35x).
constexpr double kColdCallMs = 20;

void measure_layer(const ConvParams& p, const ConvCapability& op, const Shape& input_shape, const Tensor& weight,
                   const std::vector<const ConvAlgorithm*>& algorithms, const std::vector<bool>& known,
                   std::vector<ConvCandidate>* candidates, int threads, int repeats) {
  std::vector<size_t> todo;
  for (size_t c = 0; c < candidates->size(); ++c) {
    if (!known[c]) todo.push_back(c);
  }
  if (todo.empty()) return;
  std::vector<PreparedCandidate> prepared(candidates->size());
  std::map<const ConvAlgorithm*, Tensor> second_weights;  // per second-stage algorithm, packed once
  int64_t output_floats = p.batch * p.out_h() * p.out_w() * p.out_channels;
  for (size_t c : todo) {
    const ConvAlgorithm& a = *algorithms[c];
    PreparedCandidate& prep = prepared[c];
    prep.packed = packed_for(a, p, weight.data());
    const auto absorbed = op.absorbed_conv(a, input_shape);
    if (!absorbed) {
      if (a.workspace_bytes(p) > 0) prep.workspace = allocate_bytes(a.workspace_bytes(p));
      continue;
    }
    const ConvParams& q = absorbed->params;
    Tensor& second = second_weights[absorbed->algorithm];
    if (second.empty()) {
      auto oihw = absorbed->op->weight_oihw("auto");
      if (!oihw.ok()) {  // timed alone
        if (a.workspace_bytes(p) > 0) prep.workspace = allocate_bytes(a.workspace_bytes(p));
        continue;
      }
      second = packed_for(*absorbed->algorithm, q, oihw.value().data());
    }
    prep.pair.emplace(a, p, *absorbed->algorithm, q, BandSizing{threads});
    const Tensor& bias = absorbed->op->bias();
    prep.second = ConvStage{absorbed->algorithm, second.data(), bias.empty() ? nullptr : bias.data(),
                            absorbed->op->activation(), std::nullopt};
    if (prep.pair->workspace_bytes() > 0) prep.workspace = allocate_bytes(prep.pair->workspace_bytes());
    output_floats = std::max(output_floats, q.batch * q.out_h() * q.out_w() * q.out_channels);
  }
  Tensor input = Tensor::allocate(Shape{p.batch * p.in_h * p.in_w * p.in_channels});
  Tensor output = Tensor::allocate(Shape{output_floats});
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  for (int64_t i = 0; i < input.numel(); ++i) input.data()[i] = uniform(rng);
  std::vector<double> best(candidates->size(), std::numeric_limits<double>::infinity());
  double overall = std::numeric_limits<double>::infinity();
  // `repeats` rounds, and more (up to 3x as many) while this layer has taken under 30 ms: short
  // layers get more chances at a run nobody interrupted.
  const double started = wall_ms();
  const int rounds = std::max(1, repeats);
  for (int round = 0; round < rounds || (round < 3 * rounds && wall_ms() - started < 30.0); ++round) {
    for (size_t c : todo) {
      if (round > 0 && best[c] > 8 * overall && (round > 1 || best[c] >= kColdCallMs)) continue;
      const double ms = run_once(*algorithms[c], p, op, prepared[c], input.data(), output.data(), threads);
      best[c] = std::min(best[c], ms);
      overall = std::min(overall, best[c]);
    }
  }
  for (size_t c : todo) (*candidates)[c].milliseconds = best[c];
}

}  // namespace

bool is_tuned_conv(const Model& model, const std::vector<Shape>& shapes, size_t node) {
  const GraphNode& n = model.graph().nodes[node];
  const ConvCapability* conv = n.op->conv();
  return conv != nullptr && !conv->params_for(shapes[n.inputs[0]]).is_depthwise();
}

Result<ConvAutotuneResult> autotune_conv_layers(const Model& model, const std::vector<Shape>& shapes,
                                                std::vector<KernelMemory> memory, const ConvAutotuneOptions& options) {
  const Graph& graph = model.graph();
  WINFER_ASSIGN_OR_RETURN(TimingCache cache, TimingCache::open(options.cache_path));
  std::vector<size_t> nodes;                                  // tuned nodes
  std::vector<ConvLayerCandidates> layers;                    // per tuned node
  std::vector<std::vector<const ConvAlgorithm*>> algorithms;  // per tuned node, per candidate
  std::vector<size_t> bias_bytes;
  std::vector<const ConvCapability*> ops;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!is_tuned_conv(model, shapes, n)) continue;
    const GraphNode& node = graph.nodes[n];
    const ConvCapability& op = *node.op->conv();
    const ConvParams p = op.params_for(shapes[node.inputs[0]]);
    std::vector<Shape> in_shapes, out_shapes;
    for (int t : node.inputs) in_shapes.push_back(shapes[t]);
    for (int t : node.outputs) out_shapes.push_back(shapes[t]);
    // What is timed: the convolution, or the pair it heads (a different time for the same shape).
    std::string shape_text = p.to_string();
    if (const auto absorbed = op.absorbed_conv(*find_conv_algorithm("im2win"), in_shapes[0]))
      shape_text += " then " + absorbed->params.to_string();
    ConvLayerCandidates layer;
    layer.layer = node.name;
    std::vector<const ConvAlgorithm*> supported;
    std::vector<bool> have;  // per candidate: time known (cache file, or a layer of the same shape)
    for (const ConvAlgorithm* a : selectable_conv_algorithms()) {
      if (!a->supports(p)) continue;
      ConvCandidate c;
      c.algorithm = a->name();
      // The kernel's: with a fused pooling's or depthwise convolution's bands.
      c.workspace_bytes = op.kernel_workspace_bytes(*a, in_shapes, out_shapes, options.threads);
      c.packed_weight_bytes = a->packed_weight_bytes(p);
      const TimingCache::Entry* known = cache.find(TimingCache::key(shape_text, options.threads, c.algorithm));
      const bool known_time = known != nullptr;
      if (known_time) {
        c.milliseconds = known->ms;
        c.cached = known->from_file;
      }
      have.push_back(known_time);
      layer.candidates.push_back(c);
      supported.push_back(a);
    }
    if (supported.empty())
      return internal_error(node.context(model.path()) + ": no convolution algorithm supports " + p.to_string());
    auto weight = op.weight_oihw("auto");
    if (!weight.ok()) return Status(weight.status()).with_context(node.context(model.path()));
    measure_layer(p, op, in_shapes[0], weight.value(), supported, have, &layer.candidates, options.threads,
                  options.repeats);
    for (size_t c = 0; c < supported.size(); ++c) {
      if (!have[c]) {
        cache.add(TimingCache::key(shape_text, options.threads, layer.candidates[c].algorithm),
                  layer.candidates[c].milliseconds);
      }
    }
    nodes.push_back(n);
    layers.push_back(std::move(layer));
    algorithms.push_back(std::move(supported));
    // A fused depthwise convolution's weights do not depend on the choice: counted as the
    // model's.
    bias_bytes.push_back(op.bias().bytes() + op.absorbed_conv_weight_bytes());

    ops.push_back(&op);
  }
  cache.save();

  Status plan_error;
  std::map<std::vector<int>, size_t> planned;  // the planner is deterministic: plan each choice once
  const SessionBytesFn session_bytes = [&](const std::vector<int>& choice) -> size_t {
    auto it = planned.find(choice);
    if (it != planned.end()) return it->second;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const ConvCandidate& c = layers[i].candidates[choice[i]];
      const ConvAlgorithm* a = algorithms[i][choice[i]];
      // What the kernel compiled with this choice will say (layers/conv2d.cpp): the model's
      // packed weights are shared, not the session's; a fused residual may be overwritten.
      const bool shared = a == ops[i]->packed_for();
      const int residual = ops[i]->has_input_scale() ? 2 : 1;
      const int in_place = ops[i]->has_residual() && a->residual_may_alias_output() ? residual : -1;
      memory[nodes[i]] = {c.workspace_bytes, shared ? 0 : c.packed_weight_bytes,
                          bias_bytes[i] + (shared ? c.packed_weight_bytes : 0), in_place};
    }
    auto plan = plan_session_memory(model, shapes, memory, options.alignment);
    size_t bytes = kTooLarge;
    if (plan.ok()) {
      bytes = session_bytes_of(plan.value().report, options.plan_memory);
    } else if (plan_error.ok()) {
      plan_error = plan.status();
    }
    planned[choice] = bytes;
    return bytes;
  };
  auto selection = select_conv_algorithms(layers, options.budget, session_bytes);
  if (!plan_error.ok()) return plan_error;
  if (!selection.ok()) return Status(selection.status()).with_context(model.path() + ": conv_algorithm auto");

  ConvAutotuneResult result;
  result.algorithm_of.assign(graph.nodes.size(), nullptr);
  result.session_bytes = selection.value().session_bytes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int c = selection.value().choice[i];
    result.algorithm_of[nodes[i]] = algorithms[i][c];
    ConvChoice choice;
    choice.layer = layers[i].layer;
    choice.algorithm = layers[i].candidates[c].algorithm;
    choice.rule = selection.value().rules[i];
    choice.reason = selection.value().reasons[i];
    choice.candidates = layers[i].candidates;
    log_message(LogLevel::kInfo, "conv auto: " + choice.layer + ": " + choice.reason);
    result.choices.push_back(std::move(choice));
  }
  return result;
}

}  // namespace winfer
