#include "kernels/common/activation.h"

namespace winfer {

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::kNone: return "none";
    case Activation::kRelu: return "relu";
    case Activation::kRelu6: return "relu6";
  }
  return "?";
}

}  // namespace winfer
