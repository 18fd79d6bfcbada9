/*
 * gpukit-hold: holds GPU memory through the CUDA driver API, the way a real job does, so that
 * gpureap can be checked against a real NVIDIA driver (bench/gpu/validate.sh).
 *
 *   gpukit-hold [--gpu K] [--mib N] [--mode hold|fork|stop|exit] [--workers W]
 *               [--seconds S] [--ready-file PATH]
 *
 * It loads libcuda.so.1 with dlopen (no CUDA header or toolkit at build time: the few
 * functions are declared below with the types of NVIDIA's cuda.h), creates a context on GPU K,
 * allocates N MiB there and clears it (cuMemsetD8 over the whole allocation, so the memory is
 * backed, not merely reserved). Then, by mode:
 *
 *   hold  waits for SIGTERM/SIGINT/SIGHUP (or --seconds), frees, destroys the context, exits 0;
 *   fork  forks W workers that inherit the open device files and sleep, then exits at once
 *         without freeing: the forked-worker ghost (the driver keeps the context, and lists the
 *         gone PID, while a worker holds the files). Workers exit on a signal or after --seconds;
 *   stop  stops itself with SIGSTOP; once continued it holds as in `hold`;
 *   exit  exits at once without freeing (the driver tears the context down at exit).
 *
 * Readiness: once the memory is allocated (and, for fork, every worker started) it writes one
 * line "ready pid=P gpu=K mib=N mode=M workers=A,B" to --ready-file (atomically: a temporary
 * file renamed into place) and to stdout. A stopped holder writes it before it stops.
 *
 * --seconds (default 600) bounds every process it makes, so nothing outlives a crashed caller
 * for long. Exit status: 0 done, 2 usage, 3 libcuda.so.1 or one of its functions missing,
 * 4 a CUDA call failed (the message names the call, the error's name and its code).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { EXIT_USAGE = 2, EXIT_NO_LIBRARY = 3, EXIT_CUDA = 4 };
enum { MAX_WORKERS = 64 };

/* cuda.h: CUresult is an enum (int-sized), CUdevice an int, CUcontext an opaque pointer,
 * CUdeviceptr (the _v2 API on 64-bit hosts) an unsigned long long. */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef unsigned long long CUdeviceptr;

typedef CUresult (*cuInit_fn)(unsigned int flags);
typedef CUresult (*cuDeviceGetCount_fn)(int* count);
typedef CUresult (*cuDeviceGet_fn)(CUdevice* device, int ordinal);
typedef CUresult (*cuDeviceGetName_fn)(char* name, int len, CUdevice device);
typedef CUresult (*cuCtxCreate_v2_fn)(CUcontext* ctx, unsigned int flags, CUdevice device);
typedef CUresult (*cuCtxDestroy_v2_fn)(CUcontext ctx);
typedef CUresult (*cuMemAlloc_v2_fn)(CUdeviceptr* ptr, size_t bytes);
typedef CUresult (*cuMemFree_v2_fn)(CUdeviceptr ptr);
typedef CUresult (*cuMemsetD8_v2_fn)(CUdeviceptr ptr, unsigned char value, size_t count);
typedef CUresult (*cuCtxSynchronize_fn)(void);
typedef CUresult (*cuGetErrorName_fn)(CUresult error, const char** name);
typedef CUresult (*cuGetErrorString_fn)(CUresult error, const char** text);

static struct {
  cuInit_fn init;
  cuDeviceGetCount_fn device_get_count;
  cuDeviceGet_fn device_get;
  cuDeviceGetName_fn device_get_name;
  cuCtxCreate_v2_fn ctx_create;
  cuCtxDestroy_v2_fn ctx_destroy;
  cuMemAlloc_v2_fn mem_alloc;
  cuMemFree_v2_fn mem_free;
  cuMemsetD8_v2_fn memset_d8;
  cuCtxSynchronize_fn ctx_synchronize;
  cuGetErrorName_fn get_error_name;
  cuGetErrorString_fn get_error_string;
} cu;

struct options {
  int gpu;
  long mib;
  const char* mode;
  int workers;
  int seconds;
  const char* ready_file;
};

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

static void usage(const char* why) {
  fprintf(stderr,
          "gpukit-hold: %s\n"
          "usage: gpukit-hold [--gpu K] [--mib N] [--mode hold|fork|stop|exit] [--workers W]\n"
          "                   [--seconds S] [--ready-file PATH]\n",
          why);
  exit(EXIT_USAGE);
}

static long parse_number(const char* text, const char* option, long min, long max) {
  char* end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > max) {
    char why[160];
    snprintf(why, sizeof why, "%s takes a whole number from %ld to %ld, not '%s'", option, min, max,
             text);
    usage(why);
  }
  return value;
}

static struct options parse_options(int argc, char** argv) {
  struct options o = {0, 256, "hold", 2, 600, NULL};
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (strcmp(arg, "--help") == 0) {
      printf(
          "usage: gpukit-hold [--gpu K] [--mib N] [--mode hold|fork|stop|exit] [--workers W]\n"
          "                   [--seconds S] [--ready-file PATH]\n");
      exit(0);
    }
    if (i + 1 >= argc) usage("every option takes a value");
    const char* value = argv[++i];
    if (strcmp(arg, "--gpu") == 0)
      o.gpu = (int)parse_number(value, arg, 0, 1023);
    else if (strcmp(arg, "--mib") == 0)
      o.mib = parse_number(value, arg, 1, 1L << 24);
    else if (strcmp(arg, "--workers") == 0)
      o.workers = (int)parse_number(value, arg, 1, MAX_WORKERS);
    else if (strcmp(arg, "--seconds") == 0)
      o.seconds = (int)parse_number(value, arg, 1, 86400);
    else if (strcmp(arg, "--ready-file") == 0)
      o.ready_file = value;
    else if (strcmp(arg, "--mode") == 0)
      o.mode = value;
    else {
      char why[160];
      snprintf(why, sizeof why, "unknown option '%s'", arg);
      usage(why);
    }
  }
  if (strcmp(o.mode, "hold") != 0 && strcmp(o.mode, "fork") != 0 && strcmp(o.mode, "stop") != 0 &&
      strcmp(o.mode, "exit") != 0)
    usage("--mode is hold, fork, stop or exit");
  return o;
}

/* Stores the address of `name` into the function pointer at `slot`. ISO C has no cast from
 * dlsym's object pointer to a function pointer; POSIX guarantees the representation, so the
 * bytes are copied. A missing optional function leaves the slot NULL. */
static void load(void* lib, void* slot, size_t slot_size, const char* name, int required) {
  void* address = dlsym(lib, name);
  if (address == NULL && required) {
    fprintf(stderr,
            "gpukit-hold: libcuda.so.1 has no %s: the NVIDIA driver is too old or broken; "
            "check `nvidia-smi`\n",
            name);
    exit(EXIT_NO_LIBRARY);
  }
  if (slot_size != sizeof address) abort();
  memcpy(slot, &address, sizeof address);
}

static void load_cuda(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    const char* why = dlerror();
    fprintf(stderr,
            "gpukit-hold: libcuda.so.1 not found (%s): this machine has no NVIDIA driver, or "
            "its library folder is not in the loader's path (ldconfig -p | grep libcuda)\n",
            why != NULL ? why : "no reason given");
    exit(EXIT_NO_LIBRARY);
  }
  load(lib, &cu.init, sizeof cu.init, "cuInit", 1);
  load(lib, &cu.device_get_count, sizeof cu.device_get_count, "cuDeviceGetCount", 1);
  load(lib, &cu.device_get, sizeof cu.device_get, "cuDeviceGet", 1);
  load(lib, &cu.device_get_name, sizeof cu.device_get_name, "cuDeviceGetName", 0);
  load(lib, &cu.ctx_create, sizeof cu.ctx_create, "cuCtxCreate_v2", 1);
  load(lib, &cu.ctx_destroy, sizeof cu.ctx_destroy, "cuCtxDestroy_v2", 1);
  load(lib, &cu.mem_alloc, sizeof cu.mem_alloc, "cuMemAlloc_v2", 1);
  load(lib, &cu.mem_free, sizeof cu.mem_free, "cuMemFree_v2", 1);
  load(lib, &cu.memset_d8, sizeof cu.memset_d8, "cuMemsetD8_v2", 0);
  load(lib, &cu.ctx_synchronize, sizeof cu.ctx_synchronize, "cuCtxSynchronize", 0);
  load(lib, &cu.get_error_name, sizeof cu.get_error_name, "cuGetErrorName", 0);
  load(lib, &cu.get_error_string, sizeof cu.get_error_string, "cuGetErrorString", 0);
}

/* Exits with EXIT_CUDA unless `rc` is CUDA_SUCCESS (0), naming the call and the error. */
static void check(CUresult rc, const char* call) {
  if (rc == 0) return;
  const char* name = NULL;
  const char* text = NULL;
  if (cu.get_error_name == NULL || cu.get_error_name(rc, &name) != 0 || name == NULL)
    name = "an unknown CUDA error";
  if (cu.get_error_string == NULL || cu.get_error_string(rc, &text) != 0 || text == NULL)
    text = "no description";
  fprintf(stderr, "gpukit-hold: %s failed: %s (%d): %s\n", call, name, rc, text);
  exit(EXIT_CUDA);
}

static void write_ready(const struct options* o, const pid_t* workers, int nworkers) {
  char line[1024];
  int n = snprintf(line, sizeof line, "ready pid=%d gpu=%d mib=%ld mode=%s workers=", (int)getpid(),
                   o->gpu, o->mib, o->mode);
  for (int i = 0; i < nworkers && n < (int)sizeof line - 16; ++i)
    n += snprintf(line + n, sizeof line - (size_t)n, "%s%d", i ? "," : "", (int)workers[i]);
  snprintf(line + n, sizeof line - (size_t)n, "\n");
  fputs(line, stdout);
  fflush(stdout);
  if (o->ready_file == NULL) return;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", o->ready_file, (int)getpid());
  FILE* f = fopen(tmp, "w");
  if (f == NULL || fputs(line, f) == EOF || fclose(f) != 0 || rename(tmp, o->ready_file) != 0) {
    fprintf(stderr, "gpukit-hold: cannot write the ready file %s: %s\n", o->ready_file,
            strerror(errno));
    exit(EXIT_USAGE);
  }
}

/* Sleeps until a stop signal or the deadline. SIGCONT after SIGSTOP just resumes the wait. */
static void wait_for_stop(int seconds) {
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (!stop_requested) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= seconds) return;
    struct timespec tick = {0, 50 * 1000 * 1000};
    nanosleep(&tick, NULL);
  }
}

static void install_stop_handlers(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
}

int main(int argc, char** argv) {
  const struct options o = parse_options(argc, argv);
  install_stop_handlers();
  load_cuda();

  check(cu.init(0), "cuInit");
  int count = 0;
  check(cu.device_get_count(&count), "cuDeviceGetCount");
  if (o.gpu >= count) {
    fprintf(stderr, "gpukit-hold: GPU %d does not exist: the driver reports %d GPU%s\n", o.gpu,
            count, count == 1 ? "" : "s");
    return EXIT_CUDA;
  }
  CUdevice device = 0;
  check(cu.device_get(&device, o.gpu), "cuDeviceGet");
  char name[256] = "?";
  if (cu.device_get_name != NULL) cu.device_get_name(name, (int)sizeof name, device);
  CUcontext ctx = NULL;
  check(cu.ctx_create(&ctx, 0, device), "cuCtxCreate_v2");
  const size_t bytes = (size_t)o.mib << 20;
  CUdeviceptr memory = 0;
  check(cu.mem_alloc(&memory, bytes), "cuMemAlloc_v2");
  if (cu.memset_d8 != NULL) check(cu.memset_d8(memory, 0, bytes), "cuMemsetD8_v2");
  if (cu.ctx_synchronize != NULL) check(cu.ctx_synchronize(), "cuCtxSynchronize");
  fprintf(stderr, "gpukit-hold: %ld MiB on GPU %d (%s), pid %d, mode %s\n", o.mib, o.gpu, name,
          (int)getpid(), o.mode);

  if (strcmp(o.mode, "exit") == 0) {
    write_ready(&o, NULL, 0);
    _exit(0); /* no cuMemFree, no cuCtxDestroy: the driver's teardown at exit */
  }
  if (strcmp(o.mode, "fork") == 0) {
    pid_t workers[MAX_WORKERS];
    for (int i = 0; i < o.workers; ++i) {
      fflush(NULL);
      pid_t pid = fork();
      if (pid < 0) {
        fprintf(stderr, "gpukit-hold: fork failed: %s\n", strerror(errno));
        for (int j = 0; j < i; ++j) kill(workers[j], SIGKILL);
        return EXIT_CUDA;
      }
      if (pid == 0) {
        /* A worker: it holds the inherited device files and never calls CUDA (a forked child
         * cannot use its parent's context). */
        wait_for_stop(o.seconds);
        _exit(0);
      }
      workers[i] = pid;
    }
    write_ready(&o, workers, o.workers);
    _exit(0); /* the parent goes, the workers keep its context */
  }
  if (strcmp(o.mode, "stop") == 0) {
    write_ready(&o, NULL, 0);
    raise(SIGSTOP);
  } else {
    write_ready(&o, NULL, 0);
  }
  wait_for_stop(o.seconds);
  check(cu.mem_free(memory), "cuMemFree_v2");
  check(cu.ctx_destroy(ctx), "cuCtxDestroy_v2");
  fprintf(stderr, "gpukit-hold: freed %ld MiB and destroyed the context\n", o.mib);
  return 0;
}
