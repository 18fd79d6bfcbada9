/*
 * A libcuda.so.1 test double for bench/gpu/hold.c: just enough of the CUDA driver API for the
 * program's control flow (init, device lookup, context, allocation, free, the error names) to
 * run where there is no GPU. It opens no device file and reaches no driver, so gpureap sees
 * nothing on any GPU: it is not a GPU, only the other side of hold's dlopen.
 *
 * Environment: FAKE_CUDA_DEVICES (default 1) GPUs; FAKE_CUDA_MIB (default 1024) MiB each;
 * FAKE_CUDA_TRACE=1 prints every call on stderr ("fake-cuda: cuMemFree_v2"), so a test can
 * tell a holder that frees from one that exits without freeing.
 */
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef unsigned long long CUdeviceptr;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
};

static int initialised;
static long allocated_mib;
static struct CUctx_st { int device; } context;

static long env_number(const char* name, long fallback) {
  const char* text = getenv(name);
  return text != NULL && *text != '\0' ? strtol(text, NULL, 10) : fallback;
}

static void trace(const char* call) {
  if (env_number("FAKE_CUDA_TRACE", 0) == 1) fprintf(stderr, "fake-cuda: %s\n", call);
}

CUresult cuInit(unsigned int flags) {
  trace("cuInit");
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  initialised = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  trace("cuDeviceGetCount");
  if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
  *count = (int)env_number("FAKE_CUDA_DEVICES", 1);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  trace("cuDeviceGet");
  if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= env_number("FAKE_CUDA_DEVICES", 1))
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice device) {
  trace("cuDeviceGetName");
  snprintf(name, (size_t)len, "fake CUDA device %d", device);
  return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned int flags, CUdevice device) {
  trace("cuCtxCreate_v2");
  (void)flags;
  if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
  context.device = device;
  *ctx = &context;
  return CUDA_SUCCESS;
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  trace("cuCtxDestroy_v2");
  return ctx == &context ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t bytes) {
  trace("cuMemAlloc_v2");
  long mib = (long)(bytes >> 20);
  if (allocated_mib + mib > env_number("FAKE_CUDA_MIB", 1024)) return CUDA_ERROR_OUT_OF_MEMORY;
  allocated_mib += mib;
  *ptr = 0x7f0000000000ULL; /* an address, never dereferenced on this side */
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr ptr) {
  trace("cuMemFree_v2");
  return ptr == 0x7f0000000000ULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemsetD8_v2(CUdeviceptr ptr, unsigned char value, size_t count) {
  trace("cuMemsetD8_v2");
  (void)value;
  (void)count;
  return ptr == 0x7f0000000000ULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuCtxSynchronize(void) {
  trace("cuCtxSynchronize");
  return CUDA_SUCCESS;
}

static const char* error_name(CUresult error) {
  switch (error) {
    case CUDA_SUCCESS:
      return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE:
      return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY:
      return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED:
      return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_INVALID_DEVICE:
      return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_CONTEXT:
      return "CUDA_ERROR_INVALID_CONTEXT";
    default:
      return NULL;
  }
}

CUresult cuGetErrorName(CUresult error, const char** name) {
  *name = error_name(error);
  return *name != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char** text) {
  switch (error) {
    case CUDA_ERROR_OUT_OF_MEMORY:
      *text = "out of memory";
      return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_DEVICE:
      *text = "invalid device ordinal";
      return CUDA_SUCCESS;
    default:
      *text = error_name(error);
      return *text != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  }
}
