#pragma once
// Skips a test that runs gpureap (or its scan) out of file descriptors in a sanitizer build:
// the sanitizers' runtime needs descriptors of its own (its symbolizer; UBSan's checks of
// virtual calls), and under a tiny limit it reports errors of its own that are not gpureap's.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GPUREAP_TESTS_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define GPUREAP_TESTS_SANITIZED 1
#endif

#ifdef GPUREAP_TESTS_SANITIZED
#define SKIP_UNDER_SANITIZERS() \
  GTEST_SKIP() << "the sanitizers' runtime needs file descriptors this test takes away"
#else
#define SKIP_UNDER_SANITIZERS() (void)0
#endif
