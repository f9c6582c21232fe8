/* Built by install_test.sh with the C compiler against the installed winfer_c.h and
 * libwinfer.so (through pkg-config): checks that the header is C and the library links from C.
 * c_smoke MODEL.yaml: runs the model on a zero input and prints "ok <outputs> <argmax>". */
#include <stdio.h>
#include <stdlib.h>

#include <winfer/winfer_c.h>

int main(int argc, char** argv) {
  winfer_model* model = NULL;
  winfer_session* session = NULL;
  winfer_session_options options;
  int64_t dims[8];
  int rank = 0;
  size_t in_count = 1, out_count = 1, i, best = 0;
  float *input, *output;
  if (argc != 2) return 2;
  if (winfer_model_load("/nonexistent.yaml", NULL, &model) == WINFER_OK || winfer_last_error()[0] == '\0') {
    fprintf(stderr, "loading a missing file must fail with a message\n");
    return 1;
  }
  if (winfer_model_load(argv[1], NULL, &model) != WINFER_OK) {
    fprintf(stderr, "%s\n", winfer_last_error());
    return 1;
  }
  winfer_session_options_init(&options);
  options.conv_algorithm = "auto";
  if (winfer_session_create(model, &options, &session) != WINFER_OK) {
    fprintf(stderr, "%s\n", winfer_last_error());
    return 1;
  }
  winfer_model_destroy(model); /* the session keeps what it needs */
  winfer_session_input_shape(session, dims, 8, &rank);
  for (i = 0; i < (size_t)rank; ++i) in_count *= (size_t)dims[i];
  winfer_session_output_shape(session, 0, dims, 8, &rank);
  for (i = 0; i < (size_t)rank; ++i) out_count *= (size_t)dims[i];
  input = calloc(in_count, sizeof(float));
  output = calloc(out_count, sizeof(float));
  if (winfer_session_run(session, input, in_count, output, out_count) != WINFER_OK) {
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
