// `winfer classify MODEL IMAGE...`: decode image files, apply the model's preprocessing (or
// --preprocess's), run them in batches, print the top classes of each with the model's labels
// (or --labels') (stdout; logs, errors and timing on stderr).
// A file that cannot be read or decoded is reported and skipped; the exit status is then 1.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "apps/winfer/classifier_flags.h"
#include "apps/winfer/commands.h"
#include "apps/winfer/format.h"
#include "winfer/image.h"
#include "winfer/model.h"
#include "winfer/session.h"

namespace winfer::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The outcome for one input file, in the order the files were given.
struct ImageResult {
  std::string path;
  std::string error;  // empty on success
  std::vector<ClassScore> top;
};

// File extensions of the formats stb_image decodes. Only a folder's files are filtered by them
// (so that a README next to the photos is not an error); a file named explicitly is always tried.
bool has_image_extension(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* known :
       {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".pgm", ".ppm", ".pnm", ".tga", ".psd", ".hdr", ".pic"}) {
    if (ext == known) return true;
  }
  return false;
}

// Expands folders into their image files (sorted by name, not recursive, hidden files left out).
std::vector<std::string> collect_images(const std::vector<std::string>& arguments) {
  std::vector<std::string> paths;
  for (const std::string& argument : arguments) {
    std::error_code ec;
    if (!fs::is_directory(argument, ec)) {
      paths.push_back(argument);  // missing or unreadable files are reported when they are read
      continue;
    }
    std::vector<std::string> found;
    int64_t skipped = 0;
    for (const fs::directory_entry& entry : fs::directory_iterator(argument, ec)) {
      const fs::path& p = entry.path();
      if (p.filename().string().front() == '.' || entry.is_directory(ec)) continue;
      if (has_image_extension(p)) {
        found.push_back(p.string());
      } else {
        ++skipped;
      }
    }
    if (ec) std::cerr << "error: " << argument << ": cannot list the folder: " << ec.message() << "\n";
    if (skipped > 0) {
      std::cerr << argument << ": skipped " << skipped << " file(s) without an image extension\n";
    }
    if (found.empty() && !ec) std::cerr << argument << ": the folder holds no image files\n";
    std::sort(found.begin(), found.end());
    paths.insert(paths.end(), found.begin(), found.end());
  }
  return paths;
}

// The model, the preprocessing that produces its input (--preprocess or its own) and the
// labels of --labels (read before any image is).
struct LoadedClassifier {
  std::shared_ptr<const Model> model;
  Preprocess preprocess;
  std::optional<std::vector<std::string>> flag_labels;
};

Result<LoadedClassifier> load_classifier(const ClassifyArgs& args) {
  LoadOptions options;
  options.weights_path = args.weights;
  options.confine_to = args.confine_to;
  options.pack_for = pack_for(args.device, args.conv.empty() ? SessionOptions().conv_algorithm : args.conv);
  LoadedClassifier loaded;
  WINFER_ASSIGN_OR_RETURN(loaded.model, Model::load(args.model, options));
  WINFER_ASSIGN_OR_RETURN(loaded.preprocess, chosen_preprocess(*loaded.model, args.preprocess));
  WINFER_ASSIGN_OR_RETURN(loaded.flag_labels, read_labels_flag(args.labels));
  return loaded;
}

void print_text(const ImageResult& result, const std::vector<std::string>& labels) {
  std::printf("%s\n", result.path.c_str());
  print_class_scores(result.top, labels);
}

std::string to_json(const Model& model, const std::vector<ImageResult>& results, const std::vector<std::string>& labels,
                    int64_t failed) {
  std::ostringstream out;
  out << "{\"model\": " << json_quote(model.path()) << ", \"images\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    const ImageResult& r = results[i];
    out << (i ? ", " : "") << "{\"path\": " << json_quote(r.path);
    if (!r.error.empty()) {
      out << ", \"error\": " << json_quote(r.error) << "}";
      continue;
    }
    out << ", \"top\": [";
    for (size_t k = 0; k < r.top.size(); ++k) {
      char probability[32];
      std::snprintf(probability, sizeof probability, "%.6g", r.top[k].probability);
      out << (k ? ", " : "") << "{\"rank\": " << k + 1 << ", \"class\": " << r.top[k].index
          << ", \"label\": " << json_quote(class_label(labels, r.top[k].index)) << ", \"probability\": " << probability
          << "}";
    }
    out << "]}";
  }
  out << "], \"failed\": " << failed << "}";
  return out.str();
}

// Runs the files in batches. Slots of files that failed (and the unused tail of the last
// batch) hold zeros; their outputs are ignored.
class Classifier {
 public:
  Classifier(const LoadedClassifier& loaded, std::unique_ptr<Session> session, const ClassifyArgs& args)
      : model_(loaded.model),
        session_(std::move(session)),
        args_(args),
        preprocess_(loaded.preprocess),
        flag_labels_(loaded.flag_labels) {
    const Shape& shape = session_->input_shape();
    batch_ = shape[0];
    channels_ = shape[1];
    height_ = shape[2];
    width_ = shape[3];
  }

  // Classifies every path; results come back in order, streamed to stdout unless --json.
  Result<std::vector<ImageResult>> run(const std::vector<std::string>& paths) {
    std::vector<ImageResult> results;
    ProgressBar progress(static_cast<int64_t>(paths.size()), "images", paths.size() > size_t(batch_));
    WINFER_ASSIGN_OR_RETURN(Tensor input, allocate_checked(session_->input_shape(), "a batch of images"));
    for (size_t begin = 0; begin < paths.size(); begin += size_t(batch_)) {
      const size_t end = std::min(paths.size(), begin + size_t(batch_));
      std::vector<ImageResult> batch = fill_batch(paths, begin, end, &input, &progress);
      WINFER_RETURN_IF_ERROR(classify_batch(input, &batch));
      if (stdout_is_terminal_ && !args_.json) progress.clear();  // results share the terminal line
      for (ImageResult& r : batch) {
        if (!r.error.empty()) ++failed_;
        if (r.error.empty() && !args_.json) print_text(r, labels_);
        results.push_back(std::move(r));
      }
      std::fflush(stdout);
      progress.update(static_cast<int64_t>(end));
    }
    return results;
  }

  const std::vector<std::string>& labels() const { return labels_; }
  int64_t failed() const { return failed_; }
  double decode_seconds() const { return decode_seconds_; }
  double inference_seconds() const { return inference_seconds_; }

 private:
  std::vector<ImageResult> fill_batch(const std::vector<std::string>& paths, size_t begin, size_t end, Tensor* input,
                                      ProgressBar* progress) {
    const auto start = Clock::now();
    std::fill(input->data(), input->data() + input->numel(), 0.0f);
    const int64_t per_image = channels_ * height_ * width_;
    std::vector<ImageResult> batch;
    for (size_t i = begin; i < end; ++i) {
      ImageResult r;
      r.path = paths[i];
      float* slot = input->data() + static_cast<int64_t>(i - begin) * per_image;
      Status s = load_into(r.path, slot);
      if (!s.ok()) {
        r.error = s.message();
        progress->clear();
        std::cerr << "error: " << r.error << " (skipped)\n";
      }
      batch.push_back(std::move(r));
    }
    decode_seconds_ += seconds_since(start);
    return batch;
  }

  Status load_into(const std::string& path, float* slot) {
    WINFER_ASSIGN_OR_RETURN(Image image, read_image(path, color_mode(preprocess_)));
    Status s = image_to_input(image, preprocess_, channels_, height_, width_, slot);
    return s.with_context(path);
  }

  Status classify_batch(const Tensor& input, std::vector<ImageResult>* batch) {
    if (std::all_of(batch->begin(), batch->end(), [](const ImageResult& r) { return !r.error.empty(); })) {
      return Status::Ok();
    }
    const auto start = Clock::now();
    WINFER_ASSIGN_OR_RETURN(Tensor output, session_->run(input));
    inference_seconds_ += seconds_since(start);
    if (output.shape().rank() != 2) {
      return invalid_argument(model_->path() + ": the output " + output.shape().to_string() +
                              " is not [N, classes]: nothing to classify");
    }
    const int64_t classes = output.shape()[1];
    if (!labels_loaded_) {
      labels_ = chosen_labels(*model_, args_.labels, flag_labels_, classes);
      labels_loaded_ = true;
    }
    for (size_t i = 0; i < batch->size(); ++i) {
      ImageResult& r = (*batch)[i];
      if (!r.error.empty()) continue;
      const std::vector<double> p = class_probabilities(*model_, output.data() + int64_t(i) * classes, classes);
      r.top = top_classes(p, args_.top);
    }
    return Status::Ok();
  }

  std::shared_ptr<const Model> model_;
  std::unique_ptr<Session> session_;
  const ClassifyArgs& args_;
  const Preprocess preprocess_;
  const std::optional<std::vector<std::string>> flag_labels_;  // --labels
  const bool stdout_is_terminal_ = ::isatty(STDOUT_FILENO) != 0;
  int64_t batch_ = 1, channels_ = 0, height_ = 0, width_ = 0;
  std::vector<std::string> labels_;
  bool labels_loaded_ = false;
  int64_t failed_ = 0;
  double decode_seconds_ = 0, inference_seconds_ = 0;
};

}  // namespace

int run_classify(const ClassifyArgs& args) {
  if (Status s = check_autotune_cache_flag(args.autotune_cache, {args.conv}); !s.ok()) return fail(s);
  const auto start = Clock::now();
  auto loaded = load_classifier(args);
  if (!loaded.ok()) return fail(loaded.status());
  const std::shared_ptr<const Model>& model = loaded.value().model;

  const std::vector<std::string> paths = collect_images(args.images);
  if (paths.empty()) return fail(invalid_argument("no image files to classify"));

  SessionOptions options;
  if (!args.conv.empty()) options.conv_algorithm = args.conv;
  options.autotune_cache = args.autotune_cache;
  options.device = args.device;
  options.threads = args.threads;
  // A session for more images than there are would only hold (and allocate) empty slots.
  options.batch = std::min<int64_t>(args.batch > 0 ? args.batch : 8, static_cast<int64_t>(paths.size()));
  options.images_per_run = args.images_per_run;
  auto session = Session::create(model, options);
  if (!session.ok()) return fail(session.status());
  const double setup_seconds = seconds_since(start);

  const std::string classifier_device = session.value()->device();
  const std::string runs = batch_runs_note(session.value()->memory_report(), options.batch);
  Classifier classifier(loaded.value(), std::move(session).value(), args);
  const auto run_start = Clock::now();
  auto results = classifier.run(paths);
  if (!results.ok()) return fail(results.status());
  const double run_seconds = seconds_since(run_start);

  if (args.json)
    std::printf("%s\n", to_json(*model, results.value(), classifier.labels(), classifier.failed()).c_str());
  const int64_t ok = static_cast<int64_t>(paths.size()) - classifier.failed();
  std::fprintf(stderr, "model %s (%s), device %s, conv %s, threads %d, batch %lld%s; load %.2f s\n",
               model->name().c_str(), model->weights_source().c_str(), classifier_device.c_str(),
               options.conv_algorithm.c_str(), args.threads, static_cast<long long>(options.batch), runs.c_str(),
               setup_seconds);
  std::fprintf(
      stderr, "classified %lld of %zu image(s) in %.3f s (%.1f images/s; decode+preprocess %.3f s, inference %.3f s)\n",
      static_cast<long long>(ok), paths.size(), run_seconds, run_seconds > 0 ? double(ok) / run_seconds : 0.0,
      classifier.decode_seconds(), classifier.inference_seconds());
  if (classifier.failed() > 0) {
    std::fprintf(stderr, "error: %lld image(s) could not be classified (see above)\n",
                 static_cast<long long>(classifier.failed()));
    return 1;
  }
  return 0;
}

}  // namespace winfer::cli
