// winfer::Session's names for its inputs and outputs, and Session::plan (the memory a session
// would need, for SessionOptions::arena). Kept apart from session.cpp, the device dispatch.
#include <string>
#include <vector>

#include "engine/src/graph.h"
#include "engine/src/session_impl.h"
#include "engine/src/split_batch_session.h"
#include "winfer/session.h"

namespace winfer {
namespace {

// kNotFound "no input named 'x' (the inputs: data)".
Result<size_t> index_of(const std::vector<std::string>& names, const std::string& name, const char* what) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return i;
  }
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "'" : ", '") + n + "'";
  return not_found("no " + std::string(what) + " named '" + name + "' (the model's " + what + "s: " + known + ")");
}

}  // namespace

std::vector<std::string> Session::input_names() const { return {impl_->model->input_name()}; }
std::vector<std::string> Session::output_names() const { return impl_->model->output_names(); }

Result<size_t> Session::input_index(const std::string& name) const { return index_of(input_names(), name, "input"); }
Result<size_t> Session::output_index(const std::string& name) const { return index_of(output_names(), name, "output"); }

Result<MemoryReport> Session::plan(std::shared_ptr<const Model> model, const SessionOptions& options) {
  if (!model) return invalid_argument("Session::plan: model is null");
  if (model->structure_only()) {
    return invalid_argument(model->path() + ": the model was loaded without weights (structure only)");
  }
  if (options.device != "cpu") {
    return unsupported("Session::plan: device '" + options.device +
                       "': the memory plan of a session (and SessionOptions::arena) is for the CPU only");
  }
  SessionOptions planned = options;
  planned.arena = nullptr;  // what is needed, whatever was given
  planned.arena_bytes = 0;
  WINFER_RETURN_IF_ERROR(check_common_options(planned));
  const Result<Shape> whole = session_input_shape(*model, planned);
  if (!whole.ok()) return whole.status();
  auto split = plan_split_batch_session(model, planned, whole.value());  // nullopt: the whole batch at once
  if (!split.ok()) return split.status();
  if (split.value()) return std::move(*std::move(split).value());
  return plan_cpu_session(std::move(model), planned);
}

}  // namespace winfer
