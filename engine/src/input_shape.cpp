// The input shape of a session (SessionOptions::input_shape, batch): which dims a model lets a
// session choose (Model::input_dim_fixed), the one check every path runs on a requested shape
// (Model::check_input_shape: Session::create and plan on every backend, the C API, the CLI),
// and the graph's shapes for it, whose errors name the requested shape.
#include <string>
#include <vector>

#include "engine/src/graph.h"
#include "engine/src/session_impl.h"
#include "winfer/model.h"
#include "winfer/session.h"

namespace winfer {
namespace {

// "dim 1 (channels)": the dim's index, and its meaning for the ranks models have.
std::string dim_name(int rank, int dim) {
  std::string name = "dim " + std::to_string(dim);
  const char* meaning = nullptr;
  if (dim == 0) {
    meaning = "batch";
  } else if (rank == 4) {
    meaning = dim == 1 ? "channels" : dim == 2 ? "height" : "width";
  } else if (rank == 2) {
    meaning = "features";
  } else if (dim == 1) {
    meaning = "channels";
  }
  return meaning != nullptr ? name + " (" + meaning + ")" : name;
}

std::string dims_to_string(const std::vector<int64_t>& dims) { return Shape(dims).to_string(); }

}  // namespace

std::vector<bool> Model::input_dim_fixed() const {
  if (!input_dim_fixed_.empty()) return input_dim_fixed_;
  std::vector<bool> fixed(static_cast<size_t>(input_shape_.rank()), false);
  if (fixed.size() > 1) fixed[1] = true;  // channels (or features): the weights depend on them
  return fixed;
}

Status Model::check_input_shape(const Shape& shape) const {
  const std::string prefix = path_ + ": input shape " + shape.to_string() + ": ";
  if (shape.rank() != input_shape_.rank()) {
    return shape_mismatch(prefix + "rank " + std::to_string(shape.rank()) + ", but the model's input '" + input_name_ +
                          "' has rank " + std::to_string(input_shape_.rank()) + " (declared " +
                          input_shape_.to_string() + ")");
  }
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape[d] < 1 || shape[d] > kMaxInputDim) {
      return invalid_argument(prefix + dim_name(shape.rank(), d) + " is " + std::to_string(shape[d]) +
                              "; every dim must be in 1..16777216 (2^24)");
    }
  }
  const std::vector<bool> fixed = input_dim_fixed();
  for (int d = 0; d < shape.rank(); ++d) {
    if (static_cast<size_t>(d) < fixed.size() && fixed[static_cast<size_t>(d)] && shape[d] != input_shape_[d]) {
      return shape_mismatch(prefix + dim_name(shape.rank(), d) + " is fixed at " + std::to_string(input_shape_[d]) +
                            " by the model (declared " + input_shape_.to_string() + ")");
    }
  }
  auto checked = Shape::make(shape.dims());  // at most 2^40 elements
  if (!checked.ok()) return Status(checked.status()).with_context(path_ + ": input shape");
  return Status::Ok();
}

Result<Shape> session_input_shape(const Model& model, const SessionOptions& options) {
  if (options.batch < 0) return invalid_argument("batch must be >= 1, got " + std::to_string(options.batch));
  Shape shape = model.input_shape();
  if (!options.input_shape.empty()) {
    if (options.batch > 0 && options.batch != options.input_shape[0]) {
      return invalid_argument(model.path() + ": SessionOptions::batch " + std::to_string(options.batch) +
                              " disagrees with SessionOptions::input_shape " + dims_to_string(options.input_shape) +
                              " (batch " + std::to_string(options.input_shape[0]) +
                              "); give the batch in one of them, or the same in both");
    }
    shape = Shape(options.input_shape);
  } else if (options.batch > 0 && shape.rank() > 0) {
    shape[0] = options.batch;
  }
  WINFER_RETURN_IF_ERROR(model.check_input_shape(shape));
  return shape;
}

Status infer_session_shapes(const Model& model, const SessionOptions& options, std::vector<Shape>* shapes) {
  WINFER_ASSIGN_OR_RETURN(Shape input, session_input_shape(model, options));
  Status s = model.graph().infer_shapes(input, shapes, model.path());
  if (!s.ok() && input != model.input_shape()) {
    // The layers were checked at the declared shape when the model loaded: say which shape
    // this one is, and that the layer is what does not admit it.
    return Status(s.code(), s.message() + " (at input shape " + input.to_string() + "; the model declares " +
                                model.input_shape().to_string() + ", and this layer does not admit the other size)");
  }
  return s;
}

}  // namespace winfer
