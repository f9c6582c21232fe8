// stb_image's implementation, in a translation unit of its own so that sanitizer builds can
// treat this third-party code apart from ours. tests/fuzz/fuzz_image.cpp found arithmetic UB in
// Debian's stb_image (2022-09) on corrupt files: a 32-bit shift by a negative count while
// refilling its JPEG bit buffer (stbi__grow_buffer_unsafe), and int overflow parsing PNM header
// numbers (stbi__pnm_getinteger; image.cpp now refuses numbers of more than 9 digits first).
// Both wrap harmlessly and the decode fails cleanly, so cmake/sanitizers.cmake compiles this
// file without UBSan; ASan still checks all of its memory accesses (the JPEG Huffman overflow
// it found is refused in image.cpp).
#define STB_IMAGE_IMPLEMENTATION
#include "engine/src/stb_image_config.h"
