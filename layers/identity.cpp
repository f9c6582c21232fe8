#include "layers/identity.h"

#include <sstream>

#include "layers/channel_rows.h"

namespace winfer {
namespace {

class CopyKernel : public Kernel {
 public:
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int) const override {
    copy_unless_aliased(*in[0], *out[0]);
  }
};

class PassThroughOp : public Op {
 public:
  explicit PassThroughOp(const char* type) : type_(type) {}
  const char* type() const override { return type_; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override {
    *outputs = {inputs[0]};
    return Status::Ok();
  }
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>&, const std::vector<Shape>&,
                                          const CompileOptions&) const override {
    return std::unique_ptr<Kernel>(new CopyKernel());
  }
  // In place there is nothing to copy (copy_unless_aliased).
  bool can_run_in_place(const std::vector<Shape>&) const override { return true; }

 private:
  const char* type_;
};

}  // namespace

Result<std::unique_ptr<Op>> create_identity(const Attrs&) { return std::unique_ptr<Op>(new PassThroughOp("identity")); }

Result<std::unique_ptr<Op>> create_dropout(const Attrs& attrs) {
  double p = 0.5;
  WINFER_RETURN_IF_ERROR(attrs.get_float("p", &p, 0.5));
  if (!(p >= 0.0 && p < 1.0)) {
    std::ostringstream text;  // "1", not std::to_string's "1.000000"
    text << p;
    return invalid_argument("attribute 'p' must be in [0, 1), got " + text.str());
  }
  return std::unique_ptr<Op>(new PassThroughOp("dropout"));
}

}  // namespace winfer
