/* Built by install_test.sh with the C compiler against the installed winfer_c.h and
 * libwinfer.so (through pkg-config): checks that the header is C and the library links from C.
 * c_smoke MODEL.yaml: runs the model on a zero input, through a session config and a run bound
 * by name, and prints "ok <outputs> <argmax>". With WINFER_EXPECT_CUDA_PLUGIN set, a session on
 * "cuda" must find the CUDA backend plug-in (it may still fail for want of a GPU). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <winfer/winfer_c.h>

int main(int argc, char** argv) {
  winfer_model* model = NULL;
  winfer_session* session = NULL;
  winfer_session_config* config = NULL;
  int64_t dims[8];
  int rank = 0;
  size_t in_count = 1, out_count = 1, i, best = 0;
  float *input, *output;
  const char* in_names[1];
  const char* out_names[1];
  const float* inputs[1];
  float* outputs[1];
  if (argc != 2) return 2;
  if (winfer_model_load("/nonexistent.yaml", NULL, &model) == WINFER_OK || winfer_last_error()[0] == '\0') {
    fprintf(stderr, "loading a missing file must fail with a message\n");
    return 1;
  }
  if (winfer_model_load_with_config(argv[1], NULL, &model) != WINFER_OK) {
    fprintf(stderr, "%s\n", winfer_last_error());
    return 1;
  }
  if (winfer_session_config_create(&config) != WINFER_OK ||
      winfer_session_config_set_conv_algorithm(config, "auto") != WINFER_OK) {
    fprintf(stderr, "%s\n", winfer_last_error());
    return 1;
  }
  if (winfer_session_config_set_threads(config, 0) == WINFER_OK) {
    fprintf(stderr, "threads 0 must be refused\n");
    return 1;
  }
  if (winfer_session_create_with_config(model, config, &session) != WINFER_OK) {
    fprintf(stderr, "%s\n", winfer_last_error());
    return 1;
  }
  if (getenv("WINFER_EXPECT_CUDA_PLUGIN") != NULL && getenv("WINFER_EXPECT_CUDA_PLUGIN")[0] != '\0') {
    /* libwinfer.so opens <libdir>/winfer/libwinfer_cuda.so on this first use of CUDA. */
    winfer_session_config* cuda = NULL;
    winfer_session* cuda_session = NULL;
    if (winfer_session_config_create(&cuda) != WINFER_OK ||
        winfer_session_config_set_device(cuda, "cuda") != WINFER_OK ||
        winfer_session_config_set_conv_algorithm(cuda, "im2win") != WINFER_OK) {
      fprintf(stderr, "%s\n", winfer_last_error());
      return 1;
    }
    if (winfer_session_create_with_config(model, cuda, &cuda_session) == WINFER_OK) {
      winfer_session_destroy(cuda_session);
    } else if (strstr(winfer_last_error(), "could not be loaded") != NULL) {
      fprintf(stderr, "%s\n", winfer_last_error());
      return 1;
    }
    winfer_session_config_destroy(cuda);
  }
  winfer_session_config_destroy(config); /* the session keeps a copy */
  winfer_model_destroy(model);           /* the session keeps what it needs */
  winfer_session_input_shape(session, dims, 8, &rank);
  for (i = 0; i < (size_t)rank; ++i) in_count *= (size_t)dims[i];
  winfer_session_output_shape(session, 0, dims, 8, &rank);
  for (i = 0; i < (size_t)rank; ++i) out_count *= (size_t)dims[i];
  input = calloc(in_count, sizeof(float));
  output = calloc(out_count, sizeof(float));
  in_names[0] = winfer_session_input_name(session, 0);
  out_names[0] = winfer_session_output_name(session, 0);
  inputs[0] = input;
  outputs[0] = output;
  if (winfer_session_run_named(session, 1, in_names, inputs, &in_count, 1, out_names, outputs, &out_count) !=
      WINFER_OK) {
    fprintf(stderr, "%s\n", winfer_last_error());
    return 1;
  }
  for (i = 1; i < out_count; ++i) {
    if (output[i] > output[best]) best = i;
  }
  printf("ok %zu %zu\n", out_count, best);
  free(input);
  free(output);
  winfer_session_destroy(session);
  return 0;
}
