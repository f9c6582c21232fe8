// winfer.classify's engine part: images (files, encoded bytes or decoded pixels) through the
// model's preprocessing (winfer/image.h: the torchvision-exact resize, crop and normalization),
// run in batches of the session's, then the softmax and top-k of apps/winfer/format.cpp: the
// numbers `winfer classify` prints, from the same functions. python/winfer/__init__.py makes the
// session and wraps the results.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "apps/winfer/classifier_flags.h"
#include "apps/winfer/format.h"
#include "objects.h"
#include "winfer/image.h"

using namespace nb::literals;

namespace winfer::python {
namespace {

// One image as given: read while the GIL is released, so only plain pointers into Python
// objects the caller holds (the argument list keeps them alive for the call).
struct ImageSource {
  enum class Kind { kPath, kEncoded, kPixels } kind = Kind::kPath;
  std::string name;  // the path, or "image #i", starting error messages
  const uint8_t* data = nullptr;
  size_t size = 0;
  int64_t height = 0, width = 0, channels = 0;  // kPixels: HxW, HxWx1, HxWx3 or HxWx4 uint8
};

ImageSource source_of(nb::handle item, size_t index) {
  ImageSource s;
  s.name = "image #" + std::to_string(index);
  if (nb::isinstance<nb::str>(item)) {
    s.kind = ImageSource::Kind::kPath;
    s.name = nb::cast<std::string>(item);
  } else if (nb::isinstance<nb::bytes>(item)) {
    s.kind = ImageSource::Kind::kEncoded;
    nb::bytes b = nb::borrow<nb::bytes>(item);
    s.data = reinterpret_cast<const uint8_t*>(b.c_str());
    s.size = b.size();
  } else {
    nb::ndarray<nb::ro, uint8_t, nb::c_contig, nb::device::cpu> a;
    if (!nb::try_cast(item, a, /*convert=*/false)) {
      raise_builtin(PyExc_TypeError, "classify: " + s.name +
                                         ": expected a path, the bytes of an image file, or a C-contiguous uint8 "
                                         "array of pixels (HxW, HxWx1, HxWx3 or HxWx4), got " +
                                         std::string(nb::type_name(item.type()).c_str()));
    }
    const int64_t c = a.ndim() == 3 ? static_cast<int64_t>(a.shape(2)) : 1;
    if ((a.ndim() != 2 && a.ndim() != 3) || (c != 1 && c != 3 && c != 4) || a.shape(0) == 0 || a.shape(1) == 0) {
      std::vector<int64_t> dims(a.shape_ptr(), a.shape_ptr() + a.ndim());
      raise_error(ErrorCode::kShapeMismatch, "classify: " + s.name + " has shape " + shape_text(dims) +
                                                 ", expected pixels HxW, HxWx1, HxWx3 (RGB) or HxWx4 (RGBA)");
    }
    s.kind = ImageSource::Kind::kPixels;
    s.data = a.data();
    s.height = static_cast<int64_t>(a.shape(0));
    s.width = static_cast<int64_t>(a.shape(1));
    s.channels = c;
  }
  return s;
}

// Pixels as given -> an Image of 1 or 3 channels (an alpha channel dropped, as PIL's
// convert("RGB") does); image_to_input converts it to the preprocessing's color order.
Image pixels_image(const ImageSource& s) {
  Image image = Image::blank(s.width, s.height, s.channels == 1 ? 1 : 3);
  const int64_t pixels = s.width * s.height;
  if (s.channels == 1 || s.channels == 3) {
    std::memcpy(image.pixels.data(), s.data, static_cast<size_t>(pixels * s.channels));
  } else {
    for (int64_t p = 0; p < pixels; ++p) std::memcpy(&image.pixels[size_t(p * 3)], s.data + p * 4, 3);
  }
  return image;
}

Result<Image> decode(const ImageSource& s, ColorMode mode) {
  switch (s.kind) {
    case ImageSource::Kind::kPath: return read_image(s.name, mode);
    case ImageSource::Kind::kEncoded: return decode_image(s.data, s.size, s.name, mode);
    case ImageSource::Kind::kPixels: break;
  }
  return pixels_image(s);
}

struct Scored {
  std::vector<std::vector<cli::ClassScore>> top;  // per image
  std::vector<std::string> labels;
};

// Everything without the GIL: decode, preprocess, run, softmax, top-k.
Result<Scored> classify_all(PySession& self, const std::vector<ImageSource>& sources, const Preprocess& preprocess,
                            const std::optional<std::vector<std::string>>& flag_labels, const std::string& labels_flag,
                            int64_t top) {
  Session& session = *self.session;
  const Model& model = *self.model;
  const Shape& shape = session.input_shape();
  if (shape.rank() != 4) {
    return invalid_argument(model.path() + ": the input " + shape.to_string() + " is not an image batch [N,C,H,W]");
  }
  const int64_t batch = shape[0], per_image = shape[1] * shape[2] * shape[3];
  Tensor input = Tensor::allocate(shape, Layout::kNCHW);
  std::vector<Tensor> outputs;
  Scored scored;
  bool labels_loaded = false;
  for (size_t begin = 0; begin < sources.size(); begin += size_t(batch)) {
    const size_t end = std::min(sources.size(), begin + size_t(batch));
    std::fill(input.data(), input.data() + input.numel(), 0.0f);  // the unused tail of the last batch
    for (size_t i = begin; i < end; ++i) {
      WINFER_ASSIGN_OR_RETURN(Image image, decode(sources[i], color_mode(preprocess)));
      float* slot = input.data() + static_cast<int64_t>(i - begin) * per_image;
      Status s = image_to_input(image, preprocess, shape[1], shape[2], shape[3], slot);
      WINFER_RETURN_IF_ERROR(s.with_context(sources[i].name));
    }
    WINFER_RETURN_IF_ERROR(session.run_into(input, &outputs));
    const Tensor& output = outputs[0];
    if (output.shape().rank() != 2) {
      return invalid_argument(model.path() + ": the output " + output.shape().to_string() +
                              " is not [N, classes]: nothing to classify");
    }
    const int64_t classes = output.shape()[1];
    if (!labels_loaded) {
      scored.labels = cli::chosen_labels(model, labels_flag, flag_labels, classes);
      labels_loaded = true;
    }
    for (size_t i = begin; i < end; ++i) {
      const float* row = output.data() + static_cast<int64_t>(i - begin) * classes;
      scored.top.push_back(cli::top_classes(cli::class_probabilities(model, row, classes), top));
    }
  }
  return scored;
}

// _classify(session, images, top, preprocess, labels): a list per image of (label, probability,
// index) tuples, most probable first.
nb::list classify(PySession& self, nb::list images, int64_t top, const std::string& preprocess_flag,
                  nb::handle labels) {
  if (top < 1) raise_error(ErrorCode::kInvalidArgument, "classify: top must be >= 1, got " + std::to_string(top));
  std::vector<ImageSource> sources;
  for (size_t i = 0; i < images.size(); ++i) sources.push_back(source_of(images[i], i));
  // --labels FILE or a list of names, checked now as the CLI does before any image.
  std::optional<std::vector<std::string>> flag_labels;
  std::string labels_flag;
  if (nb::isinstance<nb::str>(labels)) {
    labels_flag = nb::cast<std::string>(labels);
    flag_labels = value_or_raise(cli::read_labels_flag(labels_flag));
  } else if (!labels.is_none()) {
    labels_flag = "(the list given)";
    flag_labels = nb::cast<std::vector<std::string>>(labels);
  }
  const Preprocess preprocess = value_or_raise(cli::chosen_preprocess(*self.model, preprocess_flag));
  Result<Scored> scored = invalid_argument("");
  {
    nb::gil_scoped_release release;
    scored = classify_all(self, sources, preprocess, flag_labels, labels_flag, top);
  }
  check(scored.status());
  nb::list result;
  for (const std::vector<cli::ClassScore>& image : scored.value().top) {
    nb::list row;
    for (const cli::ClassScore& c : image) {
      row.append(nb::make_tuple(cli::class_label(scored.value().labels, c.index), c.probability, c.index));
    }
    result.append(row);
  }
  return result;
}

}  // namespace

void bind_classify(nb::module_& m) {
  m.def("_classify", &classify, "session"_a, "images"_a, "top"_a = 5, "preprocess"_a = "", "labels"_a = nb::none(),
        nb::sig("def _classify(session: Session, images: list, top: int = 5, preprocess: str = '', labels: str | "
                "list[str] | None = None) -> list[list[tuple[str, float, int]]]"),
        "winfer.classify's engine part (use winfer.classify): per image, (label, probability, index)\n"
        "tuples of the top classes, as `winfer classify` computes them.");
}

}  // namespace winfer::python
