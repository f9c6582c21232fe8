// What winfer's OpenMP workers cost the rest of the process after a multi-threaded run returns,
// and what putting them to sleep costs winfer's own back-to-back runs. Built and run by
// bench/tools/spin_probe.sh; links libwinfer.so through the C API.
//
// Each round runs, in turn, two modes on one session (THREADS threads, BATCH images):
//   as built  the session as the library runs it: whatever its workers do after the run is
//             what a caller gets;
//   pause     the run, then omp_pause_resource_all(omp_pause_soft) called by this program.
// and in each mode measures
//   - run_ms: the run's wall time, calls back to back (so each run starts where the previous
//     one's workers are left: spinning, sleeping, or gone);
//   - worker_cpu_ms: CPU time the process spent on threads other than this one during the 5 ms
//     after the run returned (RUSAGE_SELF minus RUSAGE_THREAD): spinning workers;
//   - other_ms: the wall time of "another library's call" started right after the run: two
//     threads (this one and a helper of the probe's own, woken by a condition variable) each
//     doing a fixed amount of arithmetic sized to take about OTHER_MS on an idle machine.
// Plus "idle": other_ms after 30 ms without any winfer call (the other library alone).
// Run against a libwinfer.so from before the engine slept its workers (LD_LIBRARY_PATH=DIR,
// which wins over this program's RUNPATH), "as built" is the spinning engine and "pause" the
// fix, A/B in one process; against today's library both modes sleep.
//
//   spin_probe MODEL.yaml THREADS BATCH ROUNDS [OTHER_MS] [--no-pause-mode]
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "winfer/winfer_c.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double cpu_ms(int who) {
  rusage u{};
  getrusage(who, &u);
  return u.ru_utime.tv_sec * 1e3 + u.ru_utime.tv_usec * 1e-3 + u.ru_stime.tv_sec * 1e3 + u.ru_stime.tv_usec * 1e-3;
}

volatile double sink;

// Arithmetic that keeps one core busy for `iterations` dependent steps.
void burn(long iterations) {
  double x = 1.0;
  for (long i = 0; i < iterations; ++i) x = x * 1.0000001 + 1e-9;
  sink = x;
}

// "Another library": a team of two (the caller and one helper thread), each burning `iterations`.
class OtherLibrary {
 public:
  OtherLibrary() : helper_([this] { loop(); }) {}
  ~OtherLibrary() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
    }
    wake_.notify_one();
    helper_.join();
  }
  double call(long iterations) {
    const auto start = Clock::now();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      iterations_ = iterations;
      ++generation_;
    }
    wake_.notify_one();
    burn(iterations);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return finished_ == generation_; });
    return ms_since(start);
  }

 private:
  void loop() {
    long seen = 0;
    for (;;) {
      long iterations;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return quit_ || generation_ != seen; });
        if (quit_) return;
        seen = generation_;
        iterations = iterations_;
      }
      burn(iterations);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        finished_ = seen;
      }
      done_.notify_one();
    }
  }
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  long generation_ = 0, finished_ = 0, iterations_ = 0;
  bool quit_ = false;
  std::thread helper_;
};

struct Series {
  std::vector<double> values;
  void add(double v) { values.push_back(v); }
  double quantile(double q) const {
    std::vector<double> v = values;
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[static_cast<size_t>(q * double(v.size() - 1) + 0.5)];
  }
};

void check(winfer_status s, const char* what) {
  if (s != WINFER_OK) {
    std::fprintf(stderr, "spin_probe: %s: %s\n", what, winfer_last_error());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: spin_probe MODEL.yaml THREADS BATCH ROUNDS [OTHER_MS] [--no-pause-mode]\n");
    return 2;
  }
  const std::string model_path = argv[1];
  const int threads = std::atoi(argv[2]);
  const long batch = std::atol(argv[3]);
  const int rounds = std::atoi(argv[4]);
  const double other_target_ms = argc > 5 ? std::atof(argv[5]) : 1.0;
  const bool pause_mode = !(argc > 6 && std::string(argv[6]) == "--no-pause-mode");

  winfer_load_config* load = nullptr;
  check(winfer_load_config_create(&load), "load config");
  check(winfer_load_config_set_random_weights(load, 1, 1), "random weights");
  winfer_model* model = nullptr;
  check(winfer_model_load_with_config(model_path.c_str(), load, &model), "load");
  winfer_session_config* config = nullptr;
  check(winfer_session_config_create(&config), "session config");
  check(winfer_session_config_set_threads(config, threads), "threads");
  check(winfer_session_config_set_batch(config, batch), "batch");
  winfer_session* session = nullptr;
  check(winfer_session_create_with_config(model, config, &session), "session");
  int64_t dims[8];
  int rank = 0;
  check(winfer_session_input_shape(session, dims, 8, &rank), "input shape");
  size_t in_count = 1, out_count = 1;
  for (int i = 0; i < rank; ++i) in_count *= size_t(dims[i]);
  check(winfer_session_output_shape(session, 0, dims, 8, &rank), "output shape");
  for (int i = 0; i < rank; ++i) out_count *= size_t(dims[i]);
  std::vector<float> input(in_count, 0.5f), output(out_count);
  auto run = [&] { check(winfer_session_run(session, input.data(), in_count, output.data(), out_count), "run"); };

  OtherLibrary other;
  // Size the other library's call: iterations for other_target_ms on an idle pair of cores.
  long iterations = 1 << 16;
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  for (int i = 0; i < 12; ++i) {
    const double ms = other.call(iterations);
    iterations = std::max<long>(1000, long(double(iterations) * other_target_ms / std::max(ms, 1e-3)));
  }
  for (int i = 0; i < 3; ++i) run();

  const char* names[] = {"as built", "pause"};
  const int modes = pause_mode ? 2 : 1;
  Series run_ms[2], worker_ms[2], other_ms[2], idle_ms;
  for (int r = 0; r < rounds; ++r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    idle_ms.add(other.call(iterations));
    for (int m = 0; m < modes; ++m) {
      // Back-to-back runs: the first one starts after the sleep above, so only the rest count.
      for (int k = 0; k < 4; ++k) {
        const auto start = Clock::now();
        run();
        if (m == 1) omp_pause_resource_all(omp_pause_soft);
        if (k > 0) run_ms[m].add(ms_since(start));
      }
      // The workers after the last run: CPU they spend in the next 5 ms.
      const double self0 = cpu_ms(RUSAGE_SELF), thread0 = cpu_ms(RUSAGE_THREAD);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      worker_ms[m].add((cpu_ms(RUSAGE_SELF) - self0) - (cpu_ms(RUSAGE_THREAD) - thread0));
      // Another library's call right after a run.
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      run();
      if (m == 1) omp_pause_resource_all(omp_pause_soft);
      other_ms[m].add(other.call(iterations));
    }
  }
  double load_average[1] = {0};
  if (getloadavg(load_average, 1) < 1) load_average[0] = -1;
  std::printf("%s threads %d batch %ld, %d rounds, other library: 2 threads x %.2f ms, load average %.2f\n",
              model_path.c_str(), threads, batch, rounds, other_target_ms, load_average[0]);
  std::printf("%-9s %22s %26s %24s\n", "mode", "run ms (median, p10)", "worker CPU ms in 5 ms after",
              "other call ms (med, p90)");
  for (int m = 0; m < modes; ++m)
    std::printf("%-9s %12.3f %9.3f %16.3f %9.3f %14.3f %9.3f\n", names[m], run_ms[m].quantile(0.5),
                run_ms[m].quantile(0.1), worker_ms[m].quantile(0.5), worker_ms[m].quantile(0.9),
                other_ms[m].quantile(0.5), other_ms[m].quantile(0.9));
  std::printf("%-9s %12s %9s %16s %9s %14.3f %9.3f\n", "idle", "-", "-", "-", "-", idle_ms.quantile(0.5),
              idle_ms.quantile(0.9));
  winfer_session_destroy(session);
  winfer_session_config_destroy(config);
  winfer_model_destroy(model);
  winfer_load_config_destroy(load);
  return 0;
}
