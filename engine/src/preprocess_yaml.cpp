#include "engine/src/preprocess_yaml.h"

#include <yaml-cpp/depthguard.h>

#include <cstdio>
#include <map>

#include "engine/src/core/file_io.h"
#include "engine/src/yaml_node_limit.h"
#include "engine/src/yaml_text.h"
#include "winfer/image.h"

namespace winfer {
namespace detail {
namespace {

const char* const kKnownKeys = "resize, crop, mean, std, channel_order";

int line_of(const YAML::Node& node) { return node.Mark().line >= 0 ? node.Mark().line + 1 : 0; }

// The same words as the model loader's YAML reader: "file:line: message".
class Reader {
 public:
  Reader(const std::string& file, const std::string& prefix) : file_(file), prefix_(prefix) {}

  // 'preprocess.std' for a model's block, 'std' for a preprocess file.
  std::string key(const std::string& name) const { return "'" + (prefix_.empty() ? name : prefix_ + "." + name) + "'"; }
  std::string block() const { return prefix_.empty() ? "the preprocess file" : "'" + prefix_ + "'"; }

  Status error(const YAML::Node& node, const std::string& message) const {
    const int line = line_of(node);
    return invalid_argument(file_ + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " + message);
  }

  Status printable(const YAML::Node& node, const std::string& text, const std::string& what) const {
    const size_t at = first_control_character(text);
    if (at == std::string::npos) return Status::Ok();
    return error(node, what + " is '" + escaped(text) + "', with a control character at byte " + std::to_string(at) +
                           "; names, keys and values must be printable text");
  }

  Status keys(const YAML::Node& map) const {
    std::map<std::string, int> first_line;
    for (const auto& kv : map) {
      if (!kv.first.IsScalar()) {
        return error(kv.first, "a key of " + block() + " must be a name, not a list or a mapping");
      }
      const std::string& name = kv.first.Scalar();
      WINFER_RETURN_IF_ERROR(printable(kv.first, name, "key of " + block()));
      const auto inserted = first_line.emplace(name, line_of(kv.first));
      if (!inserted.second) {
        return error(kv.first, "duplicate key '" + name + "' in " + block() + " (first at line " +
                                   std::to_string(inserted.first->second) + "); give each key once");
      }
    }
    return Status::Ok();
  }

  Status float_list(const YAML::Node& node, const std::string& name, std::vector<float>* out) const {
    if (!node.IsSequence()) return error(node, key(name) + " must be a list of numbers");
    out->clear();
    out->reserve(node.size());
    for (const YAML::Node& item : node) {
      double v = 0;
      if (!item.IsScalar() || !YAML::convert<double>::decode(item, v)) {
        return error(item, key(name) + " must be a list of numbers");
      }
      out->push_back(static_cast<float>(v));
    }
    return Status::Ok();
  }

  Status string(const YAML::Node& node, const std::string& name, std::string* out) const {
    if (!node.IsScalar()) return error(node, key(name) + " must be a string");
    WINFER_RETURN_IF_ERROR(printable(node, node.Scalar(), key(name)));
    *out = node.Scalar();
    return Status::Ok();
  }

 private:
  const std::string& file_;
  const std::string& prefix_;
};

}  // namespace

Status read_preprocess_yaml(const YAML::Node& node, const std::string& file, const std::string& prefix,
                            Preprocess* out) {
  const Reader yaml(file, prefix);
  if (!node.IsMap()) {
    return yaml.error(node, prefix.empty() ? "the preprocess file must be a mapping of " + std::string(kKnownKeys)
                                           : "'" + prefix + "' must be a mapping");
  }
  WINFER_RETURN_IF_ERROR(yaml.keys(node));
  Preprocess p;
  p.present = true;
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    if (key == "resize" || key == "crop") {
      int64_t x = 0;
      if (!v.IsScalar() || !YAML::convert<int64_t>::decode(v, x) || x < 1) {
        return yaml.error(v, yaml.key(key) + " must be a positive integer");
      }
      (key == "resize" ? p.resize : p.crop) = x;
    } else if (key == "mean" || key == "std") {
      WINFER_RETURN_IF_ERROR(yaml.float_list(v, key, key == "mean" ? &p.mean : &p.std));
    } else if (key == "channel_order") {
      WINFER_RETURN_IF_ERROR(yaml.string(v, key, &p.channel_order));
      if (p.channel_order != "RGB" && p.channel_order != "BGR" && p.channel_order != "GRAY") {
        return yaml.error(v, yaml.key(key) + " must be RGB, BGR or GRAY, got '" + p.channel_order + "'");
      }
    } else if (key == "preprocess" && prefix.empty()) {
      return yaml.error(kv.first,
                        "a preprocess file holds the keys of a model's 'preprocess:' block at its top level (" +
                            std::string(kKnownKeys) +
                            "), not under 'preprocess:'; remove that line and unindent "
                            "the keys below it");
    } else {
      return yaml.error(kv.first, "unknown key " + yaml.key(key) + " (known: " + kKnownKeys + ")");
    }
  }
  for (float s : p.std) {
    if (!(s > 0)) return yaml.error(node["std"], yaml.key("std") + " values must be > 0");
  }
  *out = std::move(p);
  return Status::Ok();
}

}  // namespace detail

Preprocess imagenet_preprocess() {
  Preprocess p;
  p.resize = 256;
  p.crop = 224;
  p.mean = {0.485f, 0.456f, 0.406f};
  p.std = {0.229f, 0.224f, 0.225f};
  p.channel_order = "RGB";
  p.present = true;
  return p;
}

Result<Preprocess> read_preprocess_file(const std::string& path) {
  // A preprocess block is a few lines; 1 MiB is far beyond any.
  static constexpr detail::InputKind kPreprocessFile{"preprocess file", uint64_t(1) << 20};
  WINFER_ASSIGN_OR_RETURN(std::string text, detail::read_input_file(path, kPreprocessFile));
  YAML::Node root;
  try {
    count_yaml_nodes(text);
    root = YAML::Load(text);
  } catch (const TooManyYamlNodes& e) {
    return invalid_argument(path + ":" + std::to_string(e.line) + ": the preprocess file has more than " +
                            std::to_string(kMaxYamlNodes) + " YAML values");
  } catch (const YAML::DeepRecursion& e) {
    const int line = e.mark.line >= 0 ? e.mark.line + 1 : 0;
    return parse_error(path + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": YAML nesting deeper than " +
                       std::to_string(e.depth() - 1) + " levels (yaml-cpp's limit; a preprocess file nests 2)");
  } catch (const YAML::Exception& e) {
    const int line = e.mark.line >= 0 ? e.mark.line + 1 : 0;
    return parse_error(path + (line > 0 ? ":" + std::to_string(line) : std::string()) +
                       ": YAML syntax error: " + e.msg);
  }
  Preprocess p;
  WINFER_RETURN_IF_ERROR(detail::read_preprocess_yaml(root, path, "", &p));
  return p;
}

}  // namespace winfer
