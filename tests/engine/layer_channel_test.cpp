// linear, add, split, dropout and identity through the op interface: parameter counts, FLOPs,
// fused activations, split's output count and pieces, running in place. The values of every
// channel op (concat, split, channel_shuffle, flatten, softmax, ...) against float64 through
// the public API: the op checker (op_check_test.cpp, op_cases.h).
#include <string>

#include "engine/src/fusion.h"
#include "layer_test_util.h"

namespace winfer {
namespace layer_test {
namespace {

// ---- linear -----------------------------------------------------------------------------

TEST_CASE("layer linear matches the float64 reference") {
  struct Case {
    int64_t rows, in, out;
    bool bias;
  };
  for (const Case& c : {Case{3, 17, 10, true}, Case{1, 64, 5, false}, Case{4, 1, 3, true}, Case{2, 33, 65, true}}) {
    MapParams params;
    const HostTensor& w = params.add_random("fc.weight", Shape{c.out, c.in});
    if (c.bias) params.add_random("fc.bias", Shape{c.out});
    std::unique_ptr<Op> fc = make_op(
        "linear", {{"in_features", int_attr(c.in)}, {"out_features", int_attr(c.out)}, {"bias", bool_attr(c.bias)}});
    const std::vector<Shape> out = prepare(*fc, {Shape{c.rows, c.in}}, params, "fc");
    CHECK(out[0] == Shape{c.rows, c.out});
    CHECK(fc->param_count() == c.out * c.in + (c.bias ? c.out : 0));
    CHECK(fc->flops({Shape{c.rows, c.in}}, out) == 2 * c.rows * c.in * c.out);

    const HostTensor x = random_tensor(Shape{c.rows, c.in});
    const RefTensor expected = linear_reference(x, w, c.bias ? &params.at("fc.bias") : nullptr);
    check_close(run_op(*fc, {x}, RunOptions{nullptr, 2, nullptr})[0], expected, kSumTol,
                "linear " + x.shape.to_string() + " -> " + std::to_string(c.out));

    // Fused relu equals linear then relu.
    std::unique_ptr<Op> relu = make_op("relu");
    const HostTensor separate = run_op(*relu, run_op(*fc, {x}))[0];
    REQUIRE(fuse_pair(*fc, *relu));
    CHECK_FALSE(fuse_pair(*fc, *make_op("relu6")));
    check_close(run_op(*fc, {x})[0], separate, kExact, "linear + relu");
  }
}

// ---- add --------------------------------------------------------------------------------

TEST_CASE("layer add, plain and with fused relu/relu6") {
  for (const Shape& shape : {Shape{3, 5, 4, 7}, Shape{2, 9}}) {
    const HostTensor a = random_tensor(shape, 5.f), b = random_tensor(shape, 5.f);
    RefTensor sum = to_ref(a);
    for (size_t i = 0; i < sum.data.size(); ++i) sum.data[i] += b.data[i];

    std::unique_ptr<Op> add = make_op("add");
    MapParams none;
    prepare(*add, {shape, shape}, none);
    check_close(run_op(*add, {a, b})[0], sum, kExact, "add " + shape.to_string());

    for (const char* act : {"relu", "relu6"}) {
      std::unique_ptr<Op> fused = make_op("add");
      std::unique_ptr<Op> activation = make_op(act);
      REQUIRE(fuse_pair(*fused, *activation));
      const HostTensor separate = run_op(*activation, run_op(*add, {a, b}))[0];
      check_close(run_op(*fused, {a, b})[0], separate, kExact, std::string("add + ") + act);
    }
  }
}

// ---- concat / split ---------------------------------------------------------------------

// Runs split and checks every piece against the matching channel slice.
void check_split(const HostTensor& x, const AttrList& attrs, const std::vector<int64_t>& expected_sizes) {
  INFO("split of ", x.shape.to_string());
  const Attrs a = make_attrs(attrs);
  CHECK(builtin_op_registry().find("split")->num_outputs(a) == static_cast<int>(expected_sizes.size()));
  std::unique_ptr<Op> split = make_op("split", attrs);
  MapParams none;
  prepare(*split, {x.shape}, none);
  const std::vector<HostTensor> pieces = run_op(*split, {x});
  REQUIRE(pieces.size() == expected_sizes.size());
  int64_t begin = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    check_close(pieces[i], channel_slice(x, begin, expected_sizes[i]), kExact, "piece " + std::to_string(i));
    begin += expected_sizes[i];
  }
}

TEST_CASE("layer split by chunks and by sizes") {
  // torch.chunk: ceil(C / chunks) channels per piece, the last one smaller.
  check_split(random_tensor(Shape{3, 7, 3, 5}), {{"chunks", int_attr(3)}}, {3, 3, 1});
  check_split(random_tensor(Shape{2, 10, 1, 3}), {{"chunks", int_attr(4)}}, {3, 3, 3, 1});
  check_split(random_tensor(Shape{2, 6, 4, 4}), {{"chunks", int_attr(2)}, {"dim", int_attr(1)}}, {3, 3});  // ShuffleNet
  check_split(random_tensor(Shape{1, 5, 2, 2}), {{"chunks", int_attr(1)}}, {5});
  check_split(random_tensor(Shape{2, 8, 3, 3}), {{"sizes", ints_attr({2, 5, 1})}}, {2, 5, 1});
  check_split(random_tensor(Shape{3, 9}), {{"sizes", ints_attr({4, 5})}}, {4, 5});
  check_split(random_tensor(Shape{3, 9}), {{"chunks", int_attr(3)}}, {3, 3, 3});
}

TEST_CASE("layer split then concat restores the input") {
  const HostTensor x = random_tensor(Shape{2, 11, 3, 4});
  std::unique_ptr<Op> split = make_op("split", {{"sizes", ints_attr({4, 2, 5})}});
  std::unique_ptr<Op> concat = make_op("concat");
  MapParams none;
  const std::vector<Shape> pieces = prepare(*split, {x.shape}, none);
  prepare(*concat, pieces, none);
  check_close(run_op(*concat, run_op(*split, {x}))[0], x, kExact);
}

// ---- dropout / identity -----------------------------------------------------------------

TEST_CASE("layer dropout and identity pass data through, also in place") {
  for (const Shape& shape : {Shape{3, 5, 2, 7}, Shape{4, 9}}) {
    const HostTensor x = random_tensor(shape);
    check_close(run_simple("identity", {}, x), x, kExact, "identity");
    check_close(run_simple("dropout", {{"p", text_attr("0.2")}}, x), x, kExact, "dropout");
    check_close(run_simple("dropout", {}, x), x, kExact, "dropout, default p");
  }
  // The planner may alias output and input: the kernel must then leave the data alone.
  std::unique_ptr<Op> dropout = make_op("dropout", {{"p", text_attr("0")}});
  const Shape shape{2, 3, 4, 4};
  CompileOptions options;
  options.conv_algorithm = find_conv_algorithm("direct");
  auto kernel = dropout->compile({shape}, {shape}, options);
  REQUIRE(kernel.ok());
  const HostTensor x = random_tensor(shape);
  Tensor storage = to_storage(x);
  kernel.value()->run({&storage}, {&storage}, nullptr, 1);
  check_close(from_storage(storage), x, kExact, "in place");
}

}  // namespace
}  // namespace layer_test
}  // namespace winfer
