// Builds small ONNX models in C++ with the onnx::ModelProto API that protoc generates from
// Debian's onnx.proto (the same schema the importer parses), for the ONNX import tests and the
// fuzz corpus. Weights go to raw_data unless a test asks for float_data or external data.
//
//   OnnxBuilder b;                                   // opset 13
//   b.input("x", {"N", 3, 8, 8});                    // symbolic batch
//   b.initializer("w", {4, 3, 3, 3}, values);
//   auto& conv = b.node("Conv", {"x", "w"}, {"y"});
//   set_ints(conv, "pads", {1, 1, 1, 1});
//   b.output("y");
//   b.write(dir.file("net.onnx"));
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "onnx/onnx.pb.h"

namespace winfer_test {

// One dim of a graph input: a number (fixed) or a name (symbolic, dim_param).
struct OnnxDim {
  OnnxDim(int64_t v) : value(v) {}      // NOLINT(runtime/explicit)
  OnnxDim(int v) : value(v) {}          // NOLINT(runtime/explicit)
  OnnxDim(const char* p) : param(p) {}  // NOLINT(runtime/explicit)
  int64_t value = -1;
  std::string param;
};

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int64_t opset = 13) {
    model_.set_ir_version(8);
    model_.set_producer_name("winfer-tests");
    auto* set = model_.add_opset_import();
    set->set_domain("");
    set->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  onnx::ModelProto& model() { return model_; }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }

  onnx::ValueInfoProto& input(const std::string& name, const std::vector<OnnxDim>& dims,
                              int32_t elem_type = onnx::TensorProto::FLOAT) {
    onnx::ValueInfoProto* in = graph().add_input();
    in->set_name(name);
    auto* type = in->mutable_type()->mutable_tensor_type();
    type->set_elem_type(elem_type);
    auto* shape = type->mutable_shape();
    for (const OnnxDim& d : dims) {
      auto* dim = shape->add_dim();
      if (d.param.empty()) {
        dim->set_dim_value(d.value);
      } else {
        dim->set_dim_param(d.param);
      }
    }
    return *in;
  }

  void output(const std::string& name) {
    onnx::ValueInfoProto* out = graph().add_output();
    out->set_name(name);
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }

  // A float32 initializer in raw_data (little-endian, as on every machine winfer builds for).
  onnx::TensorProto& initializer(const std::string& name, const std::vector<int64_t>& dims,
                                 const std::vector<float>& values) {
    onnx::TensorProto& t = tensor_header(name, dims, onnx::TensorProto::FLOAT);
    t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
    return t;
  }
  // The same with the values in float_data.
  onnx::TensorProto& float_data_initializer(const std::string& name, const std::vector<int64_t>& dims,
                                            const std::vector<float>& values) {
    onnx::TensorProto& t = tensor_header(name, dims, onnx::TensorProto::FLOAT);
    for (float v : values) t.add_float_data(v);
    return t;
  }
  // An INT64 initializer (shapes, axes) in int64_data.
  onnx::TensorProto& int_initializer(const std::string& name, const std::vector<int64_t>& dims,
                                     const std::vector<int64_t>& values) {
    onnx::TensorProto& t = tensor_header(name, dims, onnx::TensorProto::INT64);
    for (int64_t v : values) t.add_int64_data(v);
    return t;
  }
  // A float32 initializer whose data lies in an external file at `location` (relative to the
  // model's folder), bytes [offset, offset + length); the caller writes that file.
  onnx::TensorProto& external_initializer(const std::string& name, const std::vector<int64_t>& dims,
                                          const std::string& location, int64_t offset = -1, int64_t length = -1) {
    onnx::TensorProto& t = tensor_header(name, dims, onnx::TensorProto::FLOAT);
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&t](const std::string& key, const std::string& value) {
      auto* e = t.add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    add("location", location);
    if (offset >= 0) add("offset", std::to_string(offset));
    if (length >= 0) add("length", std::to_string(length));
    return t;
  }
  onnx::TensorProto& tensor_header(const std::string& name, const std::vector<int64_t>& dims, int32_t type) {
    onnx::TensorProto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    return *t;
  }

  // A node; its name defaults to "<op>_<index>".
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = std::string()) {
    onnx::NodeProto* n = graph().add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(graph().node_size() - 1) : name);
    for (const std::string& in : inputs) n->add_input(in);
    for (const std::string& out : outputs) n->add_output(out);
    return *n;
  }

  std::string serialize() const {
    std::string bytes;
    if (!model_.SerializeToString(&bytes)) return std::string();
    return bytes;
  }
  // Writes the model to `path` and returns the path.
  std::string write(const std::string& path) const {
    const std::string bytes = serialize();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  }

 private:
  onnx::ModelProto model_;
};

// ---- attributes ----

inline onnx::AttributeProto& add_attr(onnx::NodeProto& n, const std::string& name,
                                      onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return *a;
}
inline void set_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
  add_attr(n, name, onnx::AttributeProto::INT).set_i(v);
}
inline void set_float(onnx::NodeProto& n, const std::string& name, float v) {
  add_attr(n, name, onnx::AttributeProto::FLOAT).set_f(v);
}
inline void set_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  add_attr(n, name, onnx::AttributeProto::STRING).set_s(v);
}
inline void set_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto& a = add_attr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
}
// A tensor attribute (Constant's value, ConstantOfShape's value) of INT64 values.
inline void set_int_tensor(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& dims,
                           const std::vector<int64_t>& values) {
  onnx::TensorProto* t = add_attr(n, name, onnx::AttributeProto::TENSOR).mutable_t();
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
}

// Uniform values in [-1, 1], none closer to zero than 0.05 (so that a lost term shows).
inline std::vector<float> onnx_random_values(size_t count, uint32_t seed, float low = -1.f, float high = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> v(count);
  for (float& x : v) {
    x = dist(gen);
    if (x > -0.05f && x < 0.05f) x = x < 0 ? -0.5f : 0.5f;
  }
  return v;
}

}  // namespace winfer_test
