// --preprocess and --labels of `winfer classify` and `winfer eval`: the preprocessing and the
// class names a model file may not carry (an ONNX file carries neither), or that a user wants in
// place of the model's own. Without the flags, the model's own are used, as before.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "winfer/image.h"
#include "winfer/model.h"

namespace winfer::cli {

// The help text of the two flags, shared by both commands, and the end of their --help:
// the presets, the file's form, and `example` (a line, or "") before classify's ONNX example.
extern const char* const kPreprocessFlagHelp;
extern const char* const kLabelsFlagHelp;
std::string classifier_flags_footer(const std::string& example);

// The preprocessing for `model`: `flag` empty gives the model's own (model_preprocess);
// "imagenet" imagenet_preprocess(); "none" no resize or crop, mean 0, std 1, GRAY for a
// 1-channel input else RGB (what a model without a preprocess block gets); anything ending in
// .yaml/.yml read_preprocess_file(flag). Anything else is an error listing the choices. The
// result is checked against the model's input (check_preprocess); an error names the model file
// and the flag's value ("m.onnx: --preprocess pre.yaml: preprocess.mean has 3 values for 1 channel(s)").
Result<Preprocess> chosen_preprocess(const Model& model, const std::string& flag);

// --labels FILE read now, so that a file that cannot be read stops the command before any work
// (a model's own labels file only gives a warning, as it always did); empty flag: nullopt.
Result<std::optional<std::vector<std::string>>> read_labels_flag(const std::string& flag);

// The class names to print for `classes` outputs: those of --labels (`flag_labels`, read by
// read_labels_flag from `flag`) when given, else the model's (model_labels). A count that does
// not match `classes` is what it is for a model's labels file: a warning on stderr, and class
// indices instead of names.
std::vector<std::string> chosen_labels(const Model& model, const std::string& flag,
                                       const std::optional<std::vector<std::string>>& flag_labels, int64_t classes);

}  // namespace winfer::cli
