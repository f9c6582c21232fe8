/* trace_code_pages: which pages of libwinfer.so's code one model's load and runs execute.
 *
 *   trace_code_pages LIB MODEL BATCH THREADS CONV RUNS OUT [random]
 *
 * scripts/code_order.sh runs it once per model, batch, thread count and ISA over a library built
 * with every function on a page of its own (-falign-functions=4096), and turns the pages into the
 * list of functions that cmake/code_order.txt puts first and together when libwinfer.so is linked.
 *
 * How: after dlopen, the library's executable segment is made inaccessible; the first
 * instruction fetched from each page faults, and the handler records the page and makes it
 * executable again, so every page costs one fault and the model runs at full speed otherwise
 * (the native ISA: valgrind would not run the AVX-512 kernels). The constructors run at dlopen,
 * before the trace: scripts/code_order.sh adds them by name. OUT gets one line per page, its
 * address as the ELF file gives it (hex), in the order the pages were first executed.
 * "random" loads the model with random weights (a zoo YAML without its weights file); BATCH 0
 * keeps the model's batch. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "winfer/winfer_c.h"

#define MAX_PAGES (1u << 20)

static uintptr_t text_begin, text_end, load_bias;
static uint32_t page_order[MAX_PAGES];
static atomic_uint pages_seen;

static void on_fault(int sig, siginfo_t* info, void* context) {
  (void)context;
  uintptr_t address = (uintptr_t)info->si_addr;
  if (address < text_begin || address >= text_end) {  // not ours: the default action (a crash)
    signal(sig, SIG_DFL);
    return;
  }
  uintptr_t page = address & ~(uintptr_t)4095;
  mprotect((void*)page, 4096, PROT_READ | PROT_EXEC);
  unsigned slot = atomic_fetch_add(&pages_seen, 1);
  if (slot < MAX_PAGES) page_order[slot] = (uint32_t)((page - load_bias) >> 12);
}

struct segment_query {
  uintptr_t bias;
  int found;
};

static int find_text_segment(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct segment_query* query = data;
  if (info->dlpi_addr != query->bias) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
      text_begin = (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)4095;
      text_end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~(uintptr_t)4095;
      query->found = 1;
      return 1;
    }
  }
  return 0;
}

static void check(winfer_status status, const char* what) {
  if (status != WINFER_OK) {
    fprintf(stderr, "trace_code_pages: %s: %s\n", what, winfer_last_error());
    exit(1);
  }
}

int main(int argc, char** argv) {
  if (argc < 8) {
    fprintf(stderr, "usage: trace_code_pages LIB MODEL BATCH THREADS CONV RUNS OUT [random]\n");
    return 2;
  }
  const char* model_path = argv[2];
  int64_t batch = atoll(argv[3]);
  int threads = atoi(argv[4]), runs = atoi(argv[6]);
  int random_weights = argc > 8 && strcmp(argv[8], "random") == 0;
  /* The program calls the library through its own PLT entries, bound now, before the trace. */
  void* handle = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  if (handle == NULL) {
    fprintf(stderr, "trace_code_pages: %s\n", dlerror());
    return 1;
  }
  struct link_map* map = NULL;
  dlinfo(handle, RTLD_DI_LINKMAP, &map);
  struct segment_query query = {map->l_addr, 0};
  dl_iterate_phdr(find_text_segment, &query);
  if (!query.found) {
    fprintf(stderr, "trace_code_pages: no executable segment in %s\n", argv[1]);
    return 1;
  }
  load_bias = map->l_addr;

  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_fault;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGSEGV, &action, NULL);
  if (mprotect((void*)text_begin, text_end - text_begin, PROT_NONE) != 0) {
    perror("trace_code_pages: mprotect");
    return 1;
  }

  winfer_load_options load;
  winfer_load_options_init(&load);
  load.use_random_weights = random_weights;
  load.random_seed = 1;
  load.pack_for = argv[5]; /* packed at load for the session's algorithm, as the benchmarks load */
  winfer_model* model = NULL;
  check(winfer_model_load(model_path, &load, &model), model_path);
  winfer_session_config* config = NULL;
  check(winfer_session_config_create(&config), "session config");
  check(winfer_session_config_set_conv_algorithm(config, argv[5]), "conv");
  check(winfer_session_config_set_threads(config, threads), "threads");
  if (batch > 0) check(winfer_session_config_set_batch(config, batch), "batch"); /* 0: the model's */
  winfer_session* session = NULL;
  check(winfer_session_create_with_config(model, config, &session), "session");
  winfer_session_config_destroy(config);
  winfer_model_destroy(model);

  int64_t dims[8];
  int rank = 0;
  check(winfer_session_input_shape(session, dims, 8, &rank), "input shape");
  size_t in_count = 1, out_count = 1;
  for (int i = 0; i < rank; ++i) in_count *= (size_t)dims[i];
  check(winfer_session_output_shape(session, 0, dims, 8, &rank), "output shape");
  for (int i = 0; i < rank; ++i) out_count *= (size_t)dims[i];
  float* input = malloc(in_count * sizeof(float));
  float* output = malloc(out_count * sizeof(float));
  for (size_t i = 0; i < in_count; ++i) input[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  for (int r = 0; r < runs; ++r) check(winfer_session_run(session, input, in_count, output, out_count), "run");
  winfer_session_destroy(session);

  mprotect((void*)text_begin, text_end - text_begin, PROT_READ | PROT_EXEC);  // exit's destructors
  FILE* out = fopen(argv[7], "w");
  if (out == NULL) {
    perror(argv[7]);
    return 1;
  }
  unsigned seen = atomic_load(&pages_seen);
  for (unsigned i = 0; i < seen && i < MAX_PAGES; ++i) fprintf(out, "%lx\n", (unsigned long)page_order[i] << 12);
  fclose(out);
  free(input);
  free(output);
  return 0;
}
