// The C++ objects behind winfer.Model and winfer.Session, and the functions that bind them
// (module.cpp calls each bind_*).
#pragma once

#include <memory>
#include <string>

#include "common.h"
#include "winfer/model.h"
#include "winfer/session.h"

namespace winfer::python {

// winfer.Model: the loaded model and how it was loaded (Model.plan loads it again per
// algorithm, packed for that algorithm, as `winfer plan` does).
struct PyModel {
  std::shared_ptr<const Model> model;
  LoadOptions options;
  std::string path;  // as given
};

// winfer.Session. The engine session keeps the model alive itself (a shared_ptr), so a session
// outlives the winfer.Model it came from.
struct PySession {
  std::unique_ptr<Session> session;
  std::shared_ptr<const Model> model;  // for classify(): its preprocessing and labels
  std::string conv;
  int threads = 1;
};

void bind_model(nb::module_& m);
void bind_session(nb::module_& m);
void bind_classify(nb::module_& m);

// SessionOptions from Model.session()'s keywords.
SessionOptions session_options(std::optional<int64_t> batch, std::optional<int> threads, const std::string& conv,
                               const std::string& device, std::optional<int64_t> memory_budget,
                               std::optional<std::vector<int64_t>> input_shape);
// A session, made with the GIL released (conv="auto" times every layer).
std::unique_ptr<PySession> make_session(const PyModel& model, const SessionOptions& options);

// MemoryReport as a dict with the struct's field names.
nb::dict memory_report_dict(const MemoryReport& report);

}  // namespace winfer::python
