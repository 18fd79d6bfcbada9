/* A stand-in for `nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits`:
 * the NVML calls that answer that query, in C, against any libnvidia-ml.so.1 (the real one, or
 * the test double with per-call latency), so gpureap's `ps --json` can be compared with it call
 * for call. Prints "pid, MiB" per listed process, as nvidia-smi does.
 *
 *   smi-standin [--timing] [LIBRARY]     (LIBRARY default: libnvidia-ml.so.1)
 *
 * --timing prints each phase's wall time to stderr in gpureap's GPUREAP_TIMING form
 * ("smi-standin: timing: nvml init: 12.345 ms"), so the GPU kit can set the two side by side.
 *
 * The calls: nvmlInit_v2, nvmlDeviceGetCount_v2, per GPU nvmlDeviceGetHandleByIndex_v2 and
 * nvmlDeviceGetComputeRunningProcesses_v3 (a size query, then the read), nvmlShutdown: the
 * least the query needs. nvidia-smi may make more (no trace of it is kept here), so the
 * stand-in is, if anything, faster than the program it stands for. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef void* nvmlDevice_t;
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t; /* the _v3 record of drivers before R535 (24 bytes) */

enum { NVML_SUCCESS = 0, NVML_ERROR_INSUFFICIENT_SIZE = 7 };
static const unsigned long long kNotAvailable = ~0ULL;

static int timing;
static struct timespec started;

static void phase_start(void) {
  clock_gettime(CLOCK_MONOTONIC, &started);
}

static void phase_end(const char* name) {
  if (!timing) return;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  double ms = (now.tv_sec - started.tv_sec) * 1e3 + (now.tv_nsec - started.tv_nsec) / 1e6;
  fprintf(stderr, "smi-standin: timing: %s: %.3f ms\n", name, ms);
}

static void* need(void* lib, const char* name) {
  void* f = dlsym(lib, name);
  if (f == NULL) {
    fprintf(stderr, "smi-standin: %s is missing from the NVML library\n", name);
    exit(2);
  }
  return f;
}

int main(int argc, char** argv) {
  const char* path = "libnvidia-ml.so.1";
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--timing") == 0)
      timing = 1;
    else
      path = argv[i];
  }
  phase_start();
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "smi-standin: cannot load %s: %s\n", path, dlerror());
    return 2;
  }
  nvmlReturn_t (*init)(void) = (nvmlReturn_t(*)(void))need(lib, "nvmlInit_v2");
  nvmlReturn_t (*shutdown)(void) = (nvmlReturn_t(*)(void))need(lib, "nvmlShutdown");
  nvmlReturn_t (*count_of)(unsigned*) =
      (nvmlReturn_t(*)(unsigned*))need(lib, "nvmlDeviceGetCount_v2");
  nvmlReturn_t (*handle_of)(unsigned, nvmlDevice_t*) =
      (nvmlReturn_t(*)(unsigned, nvmlDevice_t*))need(lib, "nvmlDeviceGetHandleByIndex_v2");
  nvmlReturn_t (*compute)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*) =
      (nvmlReturn_t(*)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*))need(
          lib, "nvmlDeviceGetComputeRunningProcesses_v3");
  phase_end("nvml library load");

  phase_start();
  nvmlReturn_t rc = init();
  phase_end("nvml init");
  if (rc != NVML_SUCCESS) {
    fprintf(stderr, "smi-standin: nvmlInit_v2 returned %d\n", rc);
    return 2;
  }
  unsigned count = 0;
  if (count_of(&count) != NVML_SUCCESS) return 2;
  for (unsigned index = 0; index < count; ++index) {
    char name[64];
    phase_start();
    nvmlDevice_t device = NULL;
    if (handle_of(index, &device) != NVML_SUCCESS) continue;
    snprintf(name, sizeof name, "nvml gpu %u queries", index);
    phase_end(name);
    phase_start();
    unsigned needed = 0;
    rc = compute(device, &needed, NULL);
    nvmlProcessInfo_t* records = NULL;
    unsigned listed = 0;
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      listed = needed + 8;
      records = calloc(listed, sizeof *records);
      if (records == NULL || compute(device, &listed, records) != NVML_SUCCESS) listed = 0;
    }
    snprintf(name, sizeof name, "nvml gpu %u process lists", index);
    phase_end(name);
    for (unsigned i = 0; i < listed; ++i) {
      if (records[i].usedGpuMemory == kNotAvailable)
        printf("%u, [N/A]\n", records[i].pid);
      else
        printf("%u, %llu\n", records[i].pid, records[i].usedGpuMemory >> 20);
    }
    free(records);
  }
  phase_start();
  shutdown();
  phase_end("nvml shutdown");
  return 0;
}
