// embed MODEL.yaml IMAGE: classifies one image with a winfer model and prints the top-5.
#include <winfer/winfer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

static int fail(const winfer::Status& s) { return std::fprintf(stderr, "%s\n", s.message().c_str()), 1; }

int main(int argc, char** argv) {
  if (argc != 3) return std::fprintf(stderr, "usage: embed MODEL.yaml IMAGE\n"), 2;
  auto model = winfer::Model::load(argv[1]);
  if (!model.ok()) return fail(model.status());
  const winfer::Shape shape = model.value()->input_shape();  // NCHW, batch 1
  const winfer::Preprocess pre = winfer::model_preprocess(*model.value());
  auto image = winfer::read_image(argv[2], winfer::color_mode(pre));
  if (!image.ok()) return fail(image.status());
  winfer::Tensor input = winfer::Tensor::allocate(shape, winfer::Layout::kNCHW);
  winfer::Status s = winfer::image_to_input(image.value(), pre, shape.c(), shape.h(), shape.w(), input.data());
  if (!s.ok()) return fail(s);
  winfer::SessionOptions options;
  options.conv_algorithm = "auto";  // per layer, the fastest algorithm measured on this machine
  auto session = winfer::Session::create(model.value(), options);
  if (!session.ok()) return fail(session.status());
  auto output = session.value()->run(input);  // [1, classes] logits
  if (!output.ok()) return fail(output.status());
  std::vector<double> p(output.value().data(), output.value().data() + output.value().numel());
  const double top = *std::max_element(p.begin(), p.end());
  for (double& v : p) v = std::exp(v - top);  // softmax
  const double sum = std::accumulate(p.begin(), p.end(), 0.0);
  auto labels_read = model.value()->labels();  // the model's `labels:` file; empty when it names none
  if (!labels_read.ok()) return fail(labels_read.status());
  const std::vector<std::string>& labels = labels_read.value();
  std::vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  for (size_t k = 0; k < std::min<size_t>(5, p.size()); ++k) {
    const size_t c = order[k];
    std::printf("%zu %.6g %s\n", k + 1, p[c] / sum, c < labels.size() ? labels[c].c_str() : "?");
  }
}
