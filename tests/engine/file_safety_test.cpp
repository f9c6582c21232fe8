// Issue 20, classes 1, 3, 4 and 5: every file winfer reads is opened the same way (regular files
// only, checked before open(), a size limit, a message naming the file and what it is), and
// every file it writes replaces only a file of its own kind. The sweeps below try every input
// and output path against FIFOs, directories, a device, symlink loops and files of another kind.
// Special files are made inside the test's own folder; a device is only ever read (through a
// symlink to /dev/zero), never written.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <thread>

#include "bench/layer_set.h"
#include "engine/src/yaml_node_limit.h"
#include <yaml-cpp/exceptions.h>
#include "engine/cli_test_util.h"
#include "engine/model_test_util.h"
#include "winfer/idx_dataset.h"
#include "winfer/image.h"

namespace {

namespace fs = std::filesystem;
using winfer_test::contains;
using winfer_test::repo_path;
using winfer_test::TempDir;

// The special files of the sweep, each with a word its refusal must contain.
struct SpecialFile {
  std::string name, expected;
};

const std::vector<SpecialFile> kSpecials = {
    {"fifo", "FIFO"},
    {"folder", "directory"},
    {"zero", "character device"},
    {"loop", "symbolic link loop"},
};

// Makes the special files in `dir`: a FIFO, a folder, a symlink to /dev/zero, a symlink loop.
void make_specials(const TempDir& dir) {
  REQUIRE(::mkfifo(dir.file("fifo").c_str(), 0600) == 0);
  fs::create_directories(dir.file("folder"));
  fs::create_symlink("/dev/zero", dir.file("zero"));
  fs::create_symlink("loop", dir.file("loop"));
}

// Runs `call` (which returns a status message, empty on success) with a deadline: a read that
// blocks on the FIFO is a failure, and the FIFO is then opened for writing so that the blocked
// call returns and the test can end.
std::string within_deadline(const std::string& fifo, const std::function<std::string()>& call) {
  auto result = std::async(std::launch::async, call);
  if (result.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    FAIL_CHECK("the call blocked on a special file (FIFO)");
    const int unblock = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (unblock >= 0) ::close(unblock);
  }
  return result.get();
}

template <typename T>
std::string message_of(const winfer::Result<T>& r) {
  return r.ok() ? std::string() : r.status().message();
}

// tiny_net's YAML with absolute weights and the given `labels:` line.
std::string tiny_net_with_labels(const std::string& labels) {
  std::string yaml = winfer_test::read_bytes(repo_path("models/examples/tiny_net.yaml"));
  const auto replace_line = [&](const std::string& key, const std::string& value) {
    const size_t at = yaml.find("\n" + key + ": ");
    REQUIRE(at != std::string::npos);
    const size_t end = yaml.find('\n', at + 1);
    yaml.replace(at + 1, end - at - 1, key + ": " + value);
  };
  replace_line("weights", repo_path("models/examples/tiny_net.safetensors"));
  replace_line("labels", labels);
  return yaml;
}

}  // namespace

TEST_CASE(
    "files: every input path refuses a FIFO, a folder, a device and a symlink loop, naming it, without blocking") {
  TempDir dir;
  make_specials(dir);
  const std::string fifo = dir.file("fifo");
  const std::string tiny = repo_path("models/examples/tiny_net.yaml");
  // Each reader of a file, as a user reaches it.
  const std::vector<std::pair<std::string, std::function<std::string(const std::string&)>>> readers = {
      {"model file", [](const std::string& p) { return message_of(winfer::Model::load(p)); }},
      {"weights file",
       [&](const std::string& p) {
         winfer::LoadOptions options;
         options.weights_path = p;
         return message_of(winfer::Model::load(tiny, options));
       }},
      {".npy file", [](const std::string& p) { return message_of(winfer::read_npy(p)); }},
      {"image", [](const std::string& p) { return message_of(winfer::read_image(p, winfer::ColorMode::kRgb)); }},
      {"IDX file", [](const std::string& p) { return message_of(winfer::read_idx(p)); }},
      {"labels file",
       [&](const std::string& p) {
         TempDir model_dir;
         auto model = winfer_test::load_text(model_dir, tiny_net_with_labels(p));
         REQUIRE_MESSAGE(model.ok(), model.status().message());
         return message_of(model.value()->labels());
       }},
      {"autotune cache",
       [&](const std::string& p) {
         auto model = winfer::Model::load(tiny);
         REQUIRE(model.ok());
         winfer::SessionOptions options;
         options.conv_algorithm = "auto";
         options.autotune_cache = p;
         return message_of(winfer::Session::create(model.value(), options));
       }},
      {"layer set", [](const std::string& p) { return message_of(winfer::bench::load_layer_set(p)); }},
  };
  for (const auto& reader : readers) {
    for (const SpecialFile& special : kSpecials) {
      const std::string path = dir.file(special.name);
      INFO(reader.first << " <- " << special.name);
      const std::string message = within_deadline(fifo, [&] { return reader.second(path); });
      CHECK_FALSE(message.empty());
      CHECK(contains(message, path));
      CHECK(contains(message, special.expected));
    }
  }
}

TEST_CASE("files: the IDX split of a folder holding a FIFO is refused, naming it") {
  TempDir dir;
  REQUIRE(::mkfifo(dir.file("t10k-images-idx3-ubyte").c_str(), 0600) == 0);
  const std::string message = within_deadline(dir.file("t10k-images-idx3-ubyte"),
                                              [&] { return message_of(winfer::load_mnist_split(dir.path(), "test")); });
  CHECK(contains(message, "t10k-images-idx3-ubyte"));
  CHECK(contains(message, "FIFO"));
}

TEST_CASE("files: size limits are checked before reading, and a model's YAML nodes are bounded") {
  TempDir dir;
  const auto sparse_file = [&](const std::string& name, uint64_t bytes) {
    const std::string path = dir.file(name);
    winfer_test::write_bytes(path, "");
    fs::resize_file(path, bytes);  // sparse: no disk space, no memory
    return path;
  };
  {  // a model file over 16 MiB
    const std::string path = sparse_file("big.yaml", (uint64_t(16) << 20) + 1);
    auto model = winfer::Model::load(path);
    REQUIRE_FALSE(model.ok());
    CHECK(contains(model.status().message(), "model file '" + path + "' is 16777217 bytes, more than the limit"));
  }
  {  // an image of 2 GiB
    const std::string path = sparse_file("big.png", uint64_t(1) << 31);
    auto image = winfer::read_image(path, winfer::ColorMode::kRgb);
    REQUIRE_FALSE(image.ok());
    CHECK(contains(image.status().message(), "image '" + path + "' is 2147483648 bytes, more than the limit"));
  }
  {  // a labels file over 16 MiB
    const std::string path = sparse_file("labels.txt", (uint64_t(16) << 20) + 1);
    TempDir model_dir;
    auto model = winfer_test::load_text(model_dir, tiny_net_with_labels(path));
    REQUIRE(model.ok());
    auto labels = model.value()->labels();
    REQUIRE_FALSE(labels.ok());
    CHECK(contains(labels.status().message(), "labels file '" + path + "' is 16777217 bytes"));
  }
  {  // 300000 numbers inline (600 KB of text): refused by the node count before a tree is built
    std::string yaml = winfer_test::model_header(1, 4, 4) + "layers:\n  - {name: fc, op: flatten}\ntensors:\n  x: [";
    for (int i = 0; i < 300000; ++i) yaml += i ? ",1" : "1";
    yaml += "]\n";
    auto model = winfer_test::load_text(dir, yaml);
    REQUIRE_FALSE(model.ok());
    INFO(model.status().message());
    CHECK(contains(model.status().message(), "model.yaml:6: the model has more than 262144 YAML values"));
  }
}

TEST_CASE("files: yaml-cpp makes at most 3 nodes per byte, so short texts skip the node count") {
  // The densest texts known: a lone ':' or '?' (a map, a null key, a null value), and patterns
  // that repeat a null key and value, a sequence entry or a nested map as often as possible.
  for (const char* pattern : {":", "?", ":\n", "?\n", "? ? ", "?\n? ", "- ? ", "- - ", "-\n", "a:\n", "{?,", "[{},"}) {
    for (int repeats : {1, 2, 10, 1000, 20000}) {
      std::string text;
      for (int i = 0; i < repeats; ++i) text += pattern;
      CAPTURE(pattern);
      CAPTURE(repeats);
      try {
        const size_t nodes = winfer::count_yaml_nodes(text, /*even_if_short=*/true);
        CHECK(nodes <= winfer::kMaxYamlNodesPerByte * text.size());
      } catch (const YAML::Exception&) {
        // not YAML (an unclosed flow collection): Load refuses it as well
      }
    }
  }
  // 87381 bytes of the densest pattern stay within the limit; skipped, the count returns 0.
  std::string dense;
  while (dense.size() + 2 <= winfer::kYamlBytesWithinNodeLimit) dense += "?\n";
  CHECK(winfer::count_yaml_nodes(dense, /*even_if_short=*/true) <= winfer::kMaxYamlNodes);
  CHECK(winfer::count_yaml_nodes(dense) == 0);
}

TEST_CASE("files: a labels file must be text, one name per line") {
  TempDir dir;
  const std::string labels = dir.file("labels.txt");
  winfer_test::write_bytes(labels, "cat\r\ndog\nbird\n");
  auto model = winfer_test::load_text(dir, tiny_net_with_labels(labels));
  REQUIRE(model.ok());
  auto read = model.value()->labels();
  REQUIRE(read.ok());
  CHECK(read.value() == std::vector<std::string>{"cat", "dog", "bird"});

  winfer_test::write_bytes(labels, std::string("cat\ndo\0g\n", 9));
  read = model.value()->labels();
  REQUIRE_FALSE(read.ok());
  CHECK(contains(read.status().message(), "line 2 holds the control byte 0x00"));
}

TEST_CASE("files: a writer replaces only a file of its own kind, through a temporary file") {
  TempDir dir;
  const winfer::Tensor tensor = winfer_test::random_tensor(winfer::Shape{2, 3}, 1);
  const std::string text = dir.file("notes.txt");
  winfer_test::write_bytes(text, "my notes\n");
  {  // another kind of file: refused, left as it was
    const winfer::Status s = winfer::write_npy(text, tensor);
    REQUIRE_FALSE(s.ok());
    CHECK(contains(s.message(), ".npy file '" + text + "' exists and is not a .npy file"));
    CHECK(winfer::check_npy_output(text).message() == s.message());
    const winfer::Status st = winfer::write_safetensors(text, {{"t", tensor}});
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.message(), "exists and is not a safetensors file"));
    CHECK(winfer_test::read_bytes(text) == "my notes\n");
  }
  {  // its own kind, an empty file or a new path: written
    const std::string npy = dir.file("out.npy");
    REQUIRE(winfer::write_npy(npy, tensor).ok());
    REQUIRE(winfer::write_npy(npy, tensor).ok());  // replaces a .npy
    const std::string empty = dir.file("empty.npy");
    winfer_test::write_bytes(empty, "");
    REQUIRE(winfer::write_npy(empty, tensor).ok());
    auto back = winfer::read_npy(empty);
    REQUIRE(back.ok());
    CHECK(back.value().shape() == tensor.shape());
    const std::string weights = dir.file("w.safetensors");
    REQUIRE(winfer::write_safetensors(weights, {{"t", tensor}}).ok());
    REQUIRE(winfer::write_safetensors(weights, {{"t", tensor}}).ok());
  }
  {  // a symlink to a .npy: the target is replaced, the link kept
    const std::string link = dir.file("link.npy");
    fs::create_symlink("out.npy", link);
    REQUIRE(winfer::write_npy(link, tensor).ok());
    CHECK(fs::is_symlink(link));
  }
  {  // special files: refused without opening them (a FIFO would block)
    REQUIRE(::mkfifo(dir.file("fifo").c_str(), 0600) == 0);
    fs::create_directories(dir.file("folder"));
    fs::create_symlink("loop", dir.file("loop"));
    fs::create_symlink("missing.npy", dir.file("dangling"));
    for (const SpecialFile& target :
         std::vector<SpecialFile>{{"fifo", "is a FIFO (named pipe); winfer writes only regular files"},
                                  {"folder", "is a directory"},
                                  {"loop", "symbolic link loop"},
                                  {"dangling", "symbolic link to a file that does not exist"}}) {
      INFO(target.name);
      const std::string message =
          within_deadline(dir.file("fifo"), [&] { return winfer::write_npy(dir.file(target.name), tensor).message(); });
      CHECK(contains(message, dir.file(target.name)));
      CHECK(contains(message, target.expected));
    }
    CHECK(fs::is_fifo(dir.file("fifo")));
  }
  // No temporary file is left behind.
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    CHECK_FALSE(contains(entry.path().filename().string(), "winfer-tmp"));
  }
}

TEST_CASE("files: the autotune cache replaces only an autotune cache") {
  TempDir dir;
  auto model = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"));
  REQUIRE(model.ok());
  winfer::SessionOptions options;
  options.conv_algorithm = "auto";
  options.autotune_cache = dir.file("notes.txt");
  winfer_test::write_bytes(options.autotune_cache, "line one\nline two\n");
  auto refused = winfer::Session::create(model.value(), options);
  REQUIRE_FALSE(refused.ok());
  CHECK(contains(refused.status().message(),
                 "autotune cache '" + options.autotune_cache + "' exists and is not a winfer autotune cache"));
  CHECK(winfer_test::read_bytes(options.autotune_cache) == "line one\nline two\n");

  options.autotune_cache = dir.file("cache.txt");  // a new file: created, then read back
  REQUIRE(winfer::Session::create(model.value(), options).ok());
  const std::string written = winfer_test::read_bytes(options.autotune_cache);
  CHECK(written.rfind("# winfer conv autotune cache", 0) == 0);
  auto again = winfer::Session::create(model.value(), options);
  REQUIRE(again.ok());
  for (const auto& choice : again.value()->memory_report().conv_choices) {
    for (const auto& candidate : choice.candidates) CHECK(candidate.cached);
  }
}

TEST_CASE("files: CLI outputs (--output, --svg) refuse another kind of file before running") {
  TempDir dir;
  const std::string text = dir.file("notes.txt");
  winfer_test::write_bytes(text, "my notes\n");
  const std::string tiny = repo_path("models/examples/tiny_net.yaml");
  auto run = winfer_test::run_cli("run " + tiny + " --repeat 0 --output " + text);
  CHECK(run.exit_code == 1);
  CHECK(contains(run.stderr_text, "exists and is not a .npy file"));
  CHECK(run.stdout_text.empty());  // refused before the run
  auto plan = winfer_test::run_cli("plan " + tiny + " --no-measure --svg " + text);
  CHECK(plan.exit_code == 1);
  CHECK(contains(plan.stderr_text, "SVG file '" + text + "' exists and is not an SVG file"));
  CHECK(plan.stdout_text.empty());
  CHECK(winfer_test::read_bytes(text) == "my notes\n");
  // Their own kinds are replaced.
  const std::string svg = dir.file("plan.svg");
  REQUIRE(winfer_test::run_cli("plan " + tiny + " --no-measure --svg " + svg).exit_code == 0);
  CHECK(winfer_test::run_cli("plan " + tiny + " --no-measure --svg " + svg).exit_code == 0);
}

TEST_CASE("files: classify goes past a FIFO, a device and a symlink loop in a folder, and runs the good images") {
  TempDir dir;
  const std::string folder = dir.file("images");
  fs::create_directories(folder);
  fs::copy_file(repo_path("models/fashion/examples/sneaker.png"), folder + "/a_good.png");
  REQUIRE(::mkfifo((folder + "/b_fifo.png").c_str(), 0600) == 0);
  fs::create_symlink("/dev/zero", folder + "/c_zero.png");
  fs::create_symlink("d_loop.png", folder + "/d_loop.png");
  // A blocked read fails the test instead of hanging it: after 60 s the FIFO gets a writer.
  std::promise<void> done;
  std::atomic<bool> fired{false};
  std::thread watchdog([&, finished = done.get_future()] {
    if (finished.wait_for(std::chrono::seconds(60)) == std::future_status::ready) return;
    fired = true;
    const int unblock = ::open((folder + "/b_fifo.png").c_str(), O_WRONLY | O_NONBLOCK);
    if (unblock >= 0) ::close(unblock);
  });
  auto r = winfer_test::run_cli("classify " + repo_path("models/fashion/fashion_resnet.yaml") + " " + folder);
  done.set_value();
  watchdog.join();
  CHECK_FALSE(fired);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stdout_text, "a_good.png"));
  CHECK(contains(r.stderr_text, "b_fifo.png' is a FIFO"));
  CHECK(contains(r.stderr_text, "c_zero.png' is a character device"));
  CHECK(contains(r.stderr_text, "d_loop.png' is a symbolic link loop"));
}

namespace {

// Opens the FIFO for writing after `seconds` unless stopped first: a CLI run blocked on it then
// returns (with the FIFO read as empty), and fired() tells the test it had blocked.
class FifoWatchdog {
 public:
  FifoWatchdog(std::string fifo, int seconds)
      : fifo_(std::move(fifo)), thread_([this, seconds, finished = done_.get_future()] {
          if (finished.wait_for(std::chrono::seconds(seconds)) == std::future_status::ready) return;
          fired_ = true;
          const int unblock = ::open(fifo_.c_str(), O_WRONLY | O_NONBLOCK);
          if (unblock >= 0) ::close(unblock);
        }) {}
  ~FifoWatchdog() { stop(); }
  void stop() {
    if (!thread_.joinable()) return;
    done_.set_value();
    thread_.join();
  }
  bool fired() const { return fired_; }

 private:
  std::string fifo_;
  std::promise<void> done_;
  std::atomic<bool> fired_{false};
  std::thread thread_;
};

// Runs the CLI with `command`'s X replaced by `path`, under a FifoWatchdog on `fifo` (a run
// that blocked on it fails the check); the command line and stderr go into the test's log.
winfer_test::CommandResult run_cli_with(const std::string& command, const std::string& path, const std::string& fifo) {
  std::string line = command;
  line.replace(line.find('X'), 1, path);
  INFO("winfer " << line);
  FifoWatchdog watchdog(fifo, 60);
  auto r = winfer_test::run_cli(line);
  watchdog.stop();
  CHECK_FALSE(watchdog.fired());
  return r;
}

}  // namespace

TEST_CASE("files: every CLI file flag refuses a FIFO, a folder, a device and a symlink loop, naming it") {
  TempDir dir;
  make_specials(dir);
  const std::string tiny = repo_path("models/examples/tiny_net.yaml");
  const std::string image = repo_path("models/fashion/examples/sneaker.png");
  const std::string fashion = repo_path("models/fashion/fashion_resnet.yaml");
  // Each command line with X where the special file goes.
  const std::vector<std::string> commands = {
      "info X",
      "info " + tiny + " --weights X",
      "run X --repeat 0",
      "run " + tiny + " --weights X --repeat 0",
      "run " + tiny + " --input X --repeat 0",
      "run " + tiny + " --expect X --repeat 0",
      "plan X --no-measure",
      "plan " + tiny + " --weights X --no-measure",
      "classify X " + image,
      "classify " + fashion + " --weights X " + image,
      "classify " + fashion + " X",
      "eval " + fashion + " --data X",
      "bench X --runs 1",
      "bench --layers X --list",
  };
  for (const std::string& command : commands) {
    for (const SpecialFile& special : kSpecials) {
      const std::string path = dir.file(special.name);
      const auto r = run_cli_with(command, path, dir.file("fifo"));
      INFO(command << " (X = " << path << "): " << r.stderr_text);
      CHECK(r.exit_code == 1);
      CHECK(contains(r.stderr_text, path));
      // A folder given where a folder is expected (classify's images, eval's --data) is read
      // as one; the others say what the file is.
      const bool folder_expected =
          command.rfind("classify " + fashion + " X", 0) == 0 || command.find("--data X") != std::string::npos;
      if (!(folder_expected && special.name == "folder")) CHECK(contains(r.stderr_text, special.expected));
    }
  }
}

TEST_CASE("files: every CLI output flag refuses a FIFO, a folder, a symlink loop and another kind of file") {
  TempDir dir;
  make_specials(dir);  // (the symlink to a device is not used here: outputs never go near one)
  const std::string text = dir.file("notes.txt");
  winfer_test::write_bytes(text, "my notes\n");
  const std::string tiny = repo_path("models/examples/tiny_net.yaml");
  const std::string fashion = repo_path("models/fashion/fashion_resnet.yaml");
  const std::vector<std::string> commands = {
      "run " + tiny + " --repeat 0 --output X",
      "plan " + tiny + " --no-measure --svg X",
      "eval " + fashion + " --limit 10 --predictions X",
  };
  const std::vector<SpecialFile> targets = {
      {"fifo", "FIFO"}, {"folder", "directory"}, {"loop", "symbolic link loop"}, {"notes.txt", "exists and is not"}};
  for (const std::string& command : commands) {
    for (const SpecialFile& target : targets) {
      const std::string path = dir.file(target.name);
      const auto r = run_cli_with(command, path, dir.file("fifo"));
      INFO(command << " (X = " << path << "): " << r.stderr_text);
      CHECK(r.exit_code == 1);
      CHECK(contains(r.stderr_text, path));
      CHECK(contains(r.stderr_text, target.expected));
      CHECK(r.stdout_text.empty());  // refused before the work, not after
    }
  }
  CHECK(winfer_test::read_bytes(text) == "my notes\n");
  CHECK(fs::is_fifo(dir.file("fifo")));
  CHECK(fs::is_directory(dir.file("folder")));
}

TEST_CASE("files: LoadOptions::confine_to keeps the files a model names inside one folder") {
  TempDir dir;
  const std::string inside = dir.file("models");
  fs::create_directories(inside + "/sub");
  fs::copy_file(repo_path("models/examples/tiny_net.safetensors"), inside + "/sub/w.safetensors");
  winfer_test::write_bytes(inside + "/labels.txt", "a\nb\n");
  fs::create_symlink(repo_path("models/examples/tiny_net.labels.txt"), inside + "/escape.txt");
  std::string yaml = winfer_test::read_bytes(repo_path("models/examples/tiny_net.yaml"));
  const auto with = [&](const std::string& weights, const std::string& labels) {
    std::string text = yaml;
    text.replace(text.find("weights: tiny_net.safetensors"), 29, "weights: " + weights);
    text.replace(text.find("labels: tiny_net.labels.txt"), 27, "labels: " + labels);
    winfer_test::write_bytes(inside + "/sub/model.yaml", text);
    winfer::LoadOptions options;
    options.confine_to = inside + "/";
    return winfer::Model::load(inside + "/sub/model.yaml", options);
  };
  CHECK(with("w.safetensors", "../labels.txt").ok());                       // inside, through ..
  CHECK(with(inside + "/sub/w.safetensors", inside + "/labels.txt").ok());  // inside, absolute
  auto absolute = with("w.safetensors", repo_path("models/examples/tiny_net.labels.txt"));
  REQUIRE_FALSE(absolute.ok());
  CHECK(contains(absolute.status().message(),
                 "model.yaml:9: 'labels: " + repo_path("models/examples/tiny_net.labels.txt")));
  CHECK(contains(absolute.status().message(), "outside the folder '" + inside));
  auto dots = with("../../../w.safetensors", "../labels.txt");
  REQUIRE_FALSE(dots.ok());
  CHECK(contains(dots.status().message(), "'weights: ../../../w.safetensors' resolves to"));
  auto link = with("w.safetensors", "../escape.txt");  // a symlink out of the folder
  REQUIRE_FALSE(link.ok());
  CHECK(contains(link.status().message(),
                 "'labels: ../escape.txt' resolves to '" + repo_path("models/examples/tiny_net.labels.txt")));
  // Without confine_to, a model file names what it likes (the trust model of docs/MODEL_FORMAT.md).
  std::string text = yaml;
  text.replace(text.find("labels: tiny_net.labels.txt"), 27,
               "labels: " + repo_path("models/examples/tiny_net.labels.txt"));
  text.replace(text.find("weights: tiny_net.safetensors"), 29, "weights: " + inside + "/sub/w.safetensors");
  winfer_test::write_bytes(inside + "/sub/model.yaml", text);
  CHECK(winfer::Model::load(inside + "/sub/model.yaml").ok());
}

TEST_CASE("files: --confine-to refuses a model naming files outside the folder, in every command that loads one") {
  TempDir dir;
  const std::string folder = dir.file("downloaded");
  fs::create_directories(folder);
  fs::copy_file(repo_path("models/examples/tiny_net.safetensors"), folder + "/tiny_net.safetensors");
  std::string yaml = winfer_test::read_bytes(repo_path("models/examples/tiny_net.yaml"));
  const std::string outside = repo_path("models/examples/tiny_net.labels.txt");
  yaml.replace(yaml.find("labels: tiny_net.labels.txt"), 27, "labels: " + outside);
  winfer_test::write_bytes(folder + "/model.yaml", yaml);
  const std::string model = folder + "/model.yaml";
  const std::string image = repo_path("models/fashion/examples/sneaker.png");
  for (const std::string& command : {"info " + model, "run " + model + " --repeat 0", "plan " + model + " --no-measure",
                                     "classify " + model + " " + image, "eval " + model + " --limit 1"}) {
    INFO(command);
    auto refused = winfer_test::run_cli(command + " --confine-to " + folder);
    CHECK(refused.exit_code == 1);
    CHECK(contains(refused.stderr_text, "'labels: " + outside + "' resolves to"));
    CHECK(contains(refused.stderr_text, "outside the folder '" + folder + "'"));
  }
  CHECK(winfer_test::run_cli("run " + model + " --repeat 0 --confine-to " + repo_path("models/..")).exit_code == 0);
}
