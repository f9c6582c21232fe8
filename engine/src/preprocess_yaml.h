// Reading a `preprocess:` block (resize, crop, mean, std, channel_order) from YAML: the model
// loader's `preprocess:` key and the files of `winfer classify/eval --preprocess FILE.yaml`
// (read_preprocess_file, winfer/image.h) share this one reader and its messages.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "winfer/model.h"
#include "winfer/status.h"

namespace winfer::detail {

// Reads the mapping `node` into *out (out->present becomes true). `file` starts every error,
// with the line: "m.yaml:12: 'preprocess.std' values must be > 0". `prefix` names the keys in
// messages: "preprocess" gives 'preprocess.std' (a model's block); "" gives 'std' (a file
// holding the keys at its top level). Refuses a non-mapping, duplicate or unknown keys, control
// characters, a resize or crop that is not a positive integer, mean/std that are not lists of
// numbers, a std value <= 0, and a channel order other than RGB, BGR or GRAY. How many mean/std
// values the model's input needs is check_preprocess's business (winfer/image.h).
Status read_preprocess_yaml(const YAML::Node& node, const std::string& file, const std::string& prefix,
                            Preprocess* out);

}  // namespace winfer::detail
