#include "apps/winfer/classifier_flags.h"

#include <iostream>

#include "apps/winfer/format.h"

namespace winfer::cli {

const char* const kPreprocessFlagHelp =
    "imagenet, none or FILE.yaml: the images' preprocessing, in place of the model's own (see below)";
const char* const kLabelsFlagHelp = "Class names, one per line, in place of the model's labels: file";

std::string classifier_flags_footer(const std::string& example) {
  return "--preprocess imagenet: resize 256, center crop 224, ImageNet mean and std, RGB (the zoo's block);\n"
         "  none: no resize or crop, mean 0, std 1, GRAY for a 1-channel input (a model without a block);\n"
         "  FILE.yaml: the keys of a model's preprocess: block (resize, crop, mean, std, channel_order) at the\n"
         "  file's top level, e.g. 'resize: 256', 'crop: 224', 'mean: [0.485, 0.456, 0.406]', ... one per line.\n"
         "--labels FILE: line i names class i (a count other than the model's classes: class indices).\n"
         "An ONNX file carries no labels and no preprocessing: give them with these flags, e.g.\n" +
         (example.empty() ? "" : example + "\n") +
         "  winfer classify resnet50.onnx --preprocess imagenet --labels models/labels/imagenet.txt photo.jpg";
}

namespace {

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

Result<Preprocess> preset_or_file(const Model& model, const std::string& flag) {
  if (flag == "imagenet") return imagenet_preprocess();
  if (flag == "none") {
    Preprocess p;  // present = false: what model_preprocess gives a model without a block
    const Shape& input = model.input_shape();
    if (input.rank() == 4 && input[1] == 1) p.channel_order = "GRAY";
    return p;
  }
  if (ends_with(flag, ".yaml") || ends_with(flag, ".yml")) return read_preprocess_file(flag);
  return invalid_argument("--preprocess " + flag +
                          ": unknown preprocessing (choose imagenet, none, or a .yaml file with the keys of a "
                          "model's preprocess: block: resize, crop, mean, std, channel_order)");
}

}  // namespace

Result<Preprocess> chosen_preprocess(const Model& model, const std::string& flag) {
  if (flag.empty()) {
    const Preprocess own = model_preprocess(model);
    Status fits = check_preprocess(own, model.input_shape());
    if (!fits.ok()) return fits.with_context(model.path());
    return own;
  }
  WINFER_ASSIGN_OR_RETURN(Preprocess p, preset_or_file(model, flag));
  Status fits = check_preprocess(p, model.input_shape());
  if (!fits.ok()) return fits.with_context(model.path() + ": --preprocess " + flag);
  return p;
}

Result<std::optional<std::vector<std::string>>> read_labels_flag(const std::string& flag) {
  if (flag.empty()) return std::optional<std::vector<std::string>>();
  WINFER_ASSIGN_OR_RETURN(std::vector<std::string> labels, read_labels_file(flag));
  return std::optional<std::vector<std::string>>(std::move(labels));
}

std::vector<std::string> chosen_labels(const Model& model, const std::string& flag,
                                       const std::optional<std::vector<std::string>>& flag_labels, int64_t classes) {
  if (!flag_labels) return model_labels(model, classes);
  if (static_cast<int64_t>(flag_labels->size()) != classes) {
    std::cerr << "warning: --labels " << flag << " has " << flag_labels->size() << " labels for " << classes
              << " classes; printing class indices\n";
    return {};
  }
  return *flag_labels;
}

}  // namespace winfer::cli
