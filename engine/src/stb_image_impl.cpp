// stb_image's implementation, in a translation unit of its own so that sanitizer builds can
// treat this third-party code apart from ours: Debian's stb_image (2022-09) shifts a 32-bit
// value by a negative count while refilling its JPEG bit buffer on corrupt data
// (stbi__grow_buffer_unsafe, found by tests/fuzz/fuzz_image.cpp). The result is unused on such
// files and the decode fails cleanly, so cmake/sanitizers.cmake compiles this file without
// UBSan's shift check; everything else here stays under ASan and the other UBSan checks.
#define STB_IMAGE_IMPLEMENTATION
#include "engine/src/stb_image_config.h"
