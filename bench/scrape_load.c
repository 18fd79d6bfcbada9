/*
 * scrape_load: many concurrent HTTP GETs against one URL path on 127.0.0.1, for gpureap's
 * daemon footprint benchmark. Lighter than a process per client (curl), so the figures
 * measure the server rather than the load generator.
 *
 *   scrape_load -p PORT -c CLIENTS -n REQUESTS [-u PATH]
 *
 * CLIENTS threads start together (a barrier) and each sends REQUESTS requests one after the
 * other, each on a new connection ("Connection: close", as gpureap answers), reading the
 * response to its end. Prints one line per request: "STATUS MILLISECONDS", the time from
 * connect() to the last byte. A failed request prints "0 MILLISECONDS".
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int port, requests;
static const char* path = "/metrics";
static pthread_barrier_t start;

struct result {
  int status;
  double ms;
};

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int get_once(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int status = 0;
  if (connect(fd, (struct sockaddr*)&a, sizeof a) == 0) {
    char req[256];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    if (write(fd, req, (size_t)n) == n) {
      /* The status line from the first bytes; the rest is read and dropped. */
      char buf[65536], head[32];
      size_t head_len = 0;
      ssize_t got;
      while ((got = read(fd, buf, sizeof buf)) > 0) {
        size_t take = sizeof head - 1 - head_len;
        if ((size_t)got < take) take = (size_t)got;
        memcpy(head + head_len, buf, take);
        head_len += take;
      }
      head[head_len] = '\0';
      if (sscanf(head, "HTTP/1.%*d %d", &status) != 1) status = 0;
    }
  }
  close(fd);
  return status;
}

static void* client(void* arg) {
  struct result* out = arg;
  pthread_barrier_wait(&start);
  for (int i = 0; i < requests; ++i) {
    double t0 = now_ms();
    out[i].status = get_once();
    out[i].ms = now_ms() - t0;
  }
  return NULL;
}

int main(int argc, char** argv) {
  int clients = 100;
  requests = 10;
  int opt;
  while ((opt = getopt(argc, argv, "p:c:n:u:")) != -1) {
    if (opt == 'p')
      port = atoi(optarg);
    else if (opt == 'c')
      clients = atoi(optarg);
    else if (opt == 'n')
      requests = atoi(optarg);
    else if (opt == 'u')
      path = optarg;
    else {
      fprintf(stderr, "usage: scrape_load -p PORT -c CLIENTS -n REQUESTS [-u PATH]\n");
      return 2;
    }
  }
  if (port <= 0 || clients <= 0 || requests <= 0) {
    fprintf(stderr, "scrape_load: -p PORT, -c CLIENTS and -n REQUESTS must be positive\n");
    return 2;
  }
  pthread_t* threads = calloc((size_t)clients, sizeof *threads);
  struct result* results = calloc((size_t)clients * (size_t)requests, sizeof *results);
  pthread_barrier_init(&start, NULL, (unsigned)clients);
  for (int c = 0; c < clients; ++c)
    if (pthread_create(&threads[c], NULL, client, results + (size_t)c * (size_t)requests) != 0) {
      fprintf(stderr, "scrape_load: cannot start %d threads\n", clients);
      return 1;
    }
  for (int c = 0; c < clients; ++c) pthread_join(threads[c], NULL);
  for (int i = 0; i < clients * requests; ++i)
    printf("%d %.3f\n", results[i].status, results[i].ms);
  return 0;
}
