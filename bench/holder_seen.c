/*
 * holder_seen: how soon gpureap's daemon shows a new holder, for bench/holder_events.sh and
 * bench/holder_storm.sh. Lighter and finer than a curl per poll (a process start each, a few
 * milliseconds), so the figures measure the daemon rather than the poller.
 *
 *   holder_seen -p PORT -f FILE [-t TRIALS] [-i POLL_US] [-w WAIT_MS]
 *
 * Per trial: a child starts and waits (a long-running process); WAIT_MS later (default 300) it
 * takes the time and opens FILE. The parent polls /api/v1/snapshot on 127.0.0.1:PORT every
 * POLL_US microseconds (default 1000), a new connection per request, all along, as a live view
 * does (so the daemon renders each sample as it comes, not the ones of the wait after the open),
 * until the answer names the child's PID. Prints one line per trial: the milliseconds from just
 * before the open to the end of that answer, or "-" after 15 s. The child is then killed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int port;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The body of one GET of /api/v1/snapshot into *buf (grown as needed); its length, or -1. */
static long get_snapshot(char** buf, size_t* cap) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  long len = -1;
  static const char req[] =
      "GET /api/v1/snapshot HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (connect(fd, (struct sockaddr*)&a, sizeof a) == 0 &&
      write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1)) {
    size_t used = 0;
    ssize_t got;
    for (;;) {
      if (used + 65536 + 1 > *cap) {
        *cap = (used + 65536 + 1) * 2;
        *buf = realloc(*buf, *cap);
        if (!*buf) abort();
      }
      got = read(fd, *buf + used, 65536);
      if (got <= 0) break;
      used += (size_t)got;
    }
    (*buf)[used] = '\0';
    len = (long)used;
  }
  close(fd);
  return len;
}

/* The snapshot names `pid` as a process ("pid": N followed by , or } or a line end). */
static int names(const char* body, pid_t pid) {
  char key[32];
  for (int spaced = 0; spaced < 2; ++spaced) {
    int n = snprintf(key, sizeof key, spaced ? "\"pid\": %d" : "\"pid\":%d", (int)pid);
    for (const char* at = strstr(body, key); at; at = strstr(at + 1, key)) {
      char next = at[n];
      if (next == ',' || next == '}' || next == '\n' || next == '\r') return 1;
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  const char* file = NULL;
  int trials = 20, poll_us = 1000, wait_ms = 300, c;
  while ((c = getopt(argc, argv, "p:f:t:i:w:")) != -1) {
    switch (c) {
      case 'p':
        port = atoi(optarg);
        break;
      case 'f':
        file = optarg;
        break;
      case 't':
        trials = atoi(optarg);
        break;
      case 'i':
        poll_us = atoi(optarg);
        break;
      case 'w':
        wait_ms = atoi(optarg);
        break;
      default:
        return 2;
    }
  }
  if (port <= 0 || !file || trials < 1 || poll_us < 0 || wait_ms < 0) {
    fprintf(stderr, "usage: holder_seen -p PORT -f FILE [-t TRIALS] [-i POLL_US] [-w WAIT_MS]\n");
    return 2;
  }
  /* The child's time just before its open, shared with this process. */
  double* opened_at =
      mmap(NULL, sizeof *opened_at, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (opened_at == MAP_FAILED) return 1;
  char* buf = NULL;
  size_t cap = 0;
  for (int t = 0; t < trials; ++t) {
    int go[2];
    if (pipe(go) != 0) return 1;
    *opened_at = 0;
    pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
      char x;
      close(go[1]);
      if (read(go[0], &x, 1) != 1) _exit(1);
      *opened_at = now_ms();
      if (open(file, O_RDONLY) < 0) _exit(1);
      for (;;) pause();
    }
    close(go[0]);
    for (const double waiting = now_ms(); now_ms() - waiting < wait_ms;) {
      get_snapshot(&buf, &cap);
      if (poll_us > 0) usleep((useconds_t)poll_us);
    }
    if (write(go[1], "x", 1) != 1) return 1;
    close(go[1]);
    const double began = now_ms();
    double seen = -1;
    while (now_ms() - began < 15000) {
      if (get_snapshot(&buf, &cap) > 0 && names(buf, child)) {
        seen = now_ms();
        break;
      }
      if (poll_us > 0) usleep((useconds_t)poll_us);
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    if (seen < 0 || *opened_at == 0)
      printf("-\n");
    else
      printf("%.1f\n", seen - *opened_at);
    fflush(stdout);
  }
  free(buf);
  return 0;
}
