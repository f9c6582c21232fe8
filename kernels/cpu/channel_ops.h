// Channel-axis data movement on channels-last tensors, where every pixel is a row of C floats:
// concat/split/shuffle permute within each row.
#pragma once

#include <cstdint>

namespace winfer {

// out[p][offset_i + c] = inputs[i][p][c]; out row width = sum(channels). A null inputs[i] is
// one already in its place (its producer wrote it into out's channels offset_i...): skipped.
void concat_channels_nhwc(int64_t pixels, int num_inputs, const float* const* inputs, const int64_t* channels,
                          float* out, int threads);
// outputs[i][p][c] = in[p][offset_i + c]; in row width = sum(channels).
void split_channels_nhwc(int64_t pixels, const float* in, int num_outputs, const int64_t* channels,
                         float* const* outputs, int threads);
// The same with output i's pixel rows out_strides[i] floats apart (0: channels[i], dense), a
// channel slice of a wider tensor (a concat's output written in place).
void split_channels_strided_nhwc(int64_t pixels, const float* in, int num_outputs, const int64_t* channels,
                                 float* const* outputs, const int64_t* out_strides, int threads);
// ShuffleNet channel shuffle (PyTorch: view(N,g,C/g,H,W).transpose(1,2).reshape):
// out channel j*g + i  <-  in channel i*(C/g) + j. channels % groups == 0. May run in place
// (out == in).
void channel_shuffle_nhwc(int64_t pixels, int64_t channels, int64_t groups, const float* in, float* out, int threads);
// channel_shuffle_nhwc, then split_channels_strided_nhwc of its output, in one pass (ShuffleNetV2's
// shuffle and the next unit's split): outputs[i][p][c] = the shuffled row's channel offset_i + c,
// read straight from the input row; the input's row width is sum(channels), divisible by groups.
// Never in place.
void channel_shuffle_split_nhwc(int64_t pixels, int64_t groups, const float* in, int num_outputs,
                                const int64_t* channels, float* const* outputs, const int64_t* out_strides,
                                int threads);

}  // namespace winfer
