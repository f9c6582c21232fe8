// stb_image as winfer uses it: the same configuration for its implementation
// (stb_image_impl.cpp) and its users (image.cpp). Files are read by winfer (clear errors for
// missing or unreadable files), so stb's stdio functions are left out; its own dimension limit
// is set to ours as a second line of defence.
#pragma once

#define STBI_NO_STDIO
#define STBI_FAILURE_USERMSG
#define STBI_MAX_DIMENSIONS 32768
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#endif
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
