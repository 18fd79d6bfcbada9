/*
 * fleet: spawns a fleet of sleeping processes for gpureap's benchmarks.
 *
 *   fleet -n PROCS -k FDS -H HOLDERS -o PIDFILE [-d FILE]... [-t TMPDIR] [-T THREADS]
 *
 * The parent forks PROCS children. Every child ends up with exactly FDS open file descriptors
 * (0-2 on /dev/null, then a mix of /dev/null, pipe ends and a temporary file, each opened
 * separately), and the first HOLDERS children also open every -d FILE once (the stand-in
 * device files), on top of the FDS. With -T, every child runs THREADS threads in all (sharing
 * its fd table, as a training process's threads do). Children then sleep in pause() until
 * killed.
 *
 * Handshake: each child writes one byte on a pipe once its fd table is complete; when all
 * PROCS bytes have arrived, the parent writes PIDFILE (atomically, via rename) with one line
 * per child, "PID holder" or "PID sleeper", holders first. A caller waits for PIDFILE.
 * If any child fails to start, the parent kills the fleet, prints why and exits 1.
 *
 * Cleanup: the children die with the parent (PR_SET_PDEATHSIG = SIGKILL), whatever kills
 * it; on SIGTERM/SIGINT/SIGHUP the parent also kills and reaps every child before exiting.
 *
 * Names: children are called "fleet-holder" / "fleet-sleeper" (comm), the parent "fleet".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_DEVS 16

static pid_t* children;
static int nchildren;
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

static void kill_fleet(void) {
  for (int i = 0; i < nchildren; ++i)
    if (children[i] > 0) kill(children[i], SIGKILL);
  for (int i = 0; i < nchildren; ++i)
    if (children[i] > 0) waitpid(children[i], NULL, 0);
}

static void die(const char* what) {
  fprintf(stderr, "fleet: %s: %s\n", what, strerror(errno));
  kill_fleet();
  exit(1);
}

static void usage(void) {
  fprintf(stderr,
          "usage: fleet -n PROCS -k FDS -H HOLDERS -o PIDFILE [-d DEVFILE]... [-t TMPDIR] "
          "[-T THREADS]\n");
  exit(2);
}

static void* sleep_forever(void* arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

/* Child: build the fd table, start its threads, report, sleep. ready_fd has already been moved
 * to 3. */
static void child_main(int fds, int is_holder, char** devs, int ndevs, const char* tmpfile,
                       pid_t parent, int threads) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(0); /* parent died before the prctl */
  prctl(PR_SET_NAME, is_holder ? "fleet-holder" : "fleet-sleeper");
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  signal(SIGHUP, SIG_DFL);
  char fail = 'E';

  /* Close everything inherited except the ready pipe (fd 3); 0-2 on /dev/null. */
  if (syscall(SYS_close_range, 4u, ~0u, 0u) != 0) {
    struct rlimit rl;
    int maxfd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                    ? (int)rl.rlim_cur
                    : 65536;
    for (int fd = 4; fd < maxfd; ++fd) close(fd);
  }
  int null_fd = open("/dev/null", O_RDWR);
  if (null_fd < 0) goto failed;
  for (int fd = 0; fd < 3; ++fd)
    if (dup2(null_fd, fd) < 0) goto failed;
  if (null_fd > 3) close(null_fd);

  /* FDS descriptors in all, not counting the ready pipe, which is closed at the end. */
  int open_count = 3;
  int round = 0;
  while (open_count < fds) {
    int fd = -1;
    switch (round++ % 4) {
      case 0:
      case 1:
        if (open_count + 2 <= fds) {
          int p[2];
          if (pipe(p) != 0) goto failed;
          open_count += 2;
          continue;
        }
        fd = open("/dev/null", O_RDONLY);
        break;
      case 2:
        fd = open("/dev/null", O_RDONLY);
        break;
      case 3:
        fd = open(tmpfile, O_RDONLY);
        break;
    }
    if (fd < 0) goto failed;
    ++open_count;
  }
  if (is_holder)
    for (int i = 0; i < ndevs; ++i)
      if (open(devs[i], O_RDWR) < 0) goto failed;
  if (threads > 1) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024); /* they only sleep */
    for (int t = 1; t < threads; ++t) {
      pthread_t id;
      if (pthread_create(&id, &attr, sleep_forever, NULL) != 0) goto failed;
    }
  }

  char ok = 'R';
  if (write(3, &ok, 1) != 1) _exit(1);
  close(3);
  for (;;) pause();

failed:
  if (write(3, &fail, 1) != 1) { /* nothing more to say */
  }
  _exit(1);
}

int main(int argc, char** argv) {
  int procs = -1, fds = -1, holders = -1, ndevs = 0, threads = 1;
  const char *pidfile = NULL, *tmpdir = NULL;
  char* devs[MAX_DEVS];
  int opt;
  while ((opt = getopt(argc, argv, "n:k:H:o:d:t:T:")) != -1) {
    switch (opt) {
      case 'n':
        procs = atoi(optarg);
        break;
      case 'k':
        fds = atoi(optarg);
        break;
      case 'H':
        holders = atoi(optarg);
        break;
      case 'o':
        pidfile = optarg;
        break;
      case 'd':
        if (ndevs == MAX_DEVS) usage();
        devs[ndevs++] = optarg;
        break;
      case 't':
        tmpdir = optarg;
        break;
      case 'T':
        threads = atoi(optarg);
        break;
      default:
        usage();
    }
  }
  if (procs < 1 || fds < 3 || holders < 0 || holders > procs || threads < 1 || !pidfile) usage();
  if (!tmpdir) tmpdir = "/tmp";
  prctl(PR_SET_NAME, "fleet");

  /* Every child opens this file (read-only) for its regular-file fds. */
  char tmpfile[4096];
  snprintf(tmpfile, sizeof tmpfile, "%s/fleet-data.XXXXXX", tmpdir);
  int tfd = mkstemp(tmpfile);
  if (tfd < 0) die("mkstemp");
  close(tfd);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);

  int ready[2];
  if (pipe(ready) != 0) die("pipe");
  children = calloc((size_t)procs, sizeof *children);
  if (!children) die("calloc");
  pid_t self = getpid();
  for (int i = 0; i < procs && !stop_requested; ++i) {
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr,
              "fleet: fork of child %d of %d failed: %s (check ulimit -u, "
              "/proc/sys/kernel/pid_max, the cgroup's pids.max)\n",
              i + 1, procs, strerror(errno));
      kill_fleet();
      unlink(tmpfile);
      return 1;
    }
    if (pid == 0) {
      close(ready[0]);
      if (ready[1] != 3) {
        if (dup2(ready[1], 3) < 0) _exit(1);
        close(ready[1]);
      }
      child_main(fds, i < holders, devs, ndevs, tmpfile, self, threads);
    }
    children[nchildren++] = pid;
  }
  close(ready[1]);

  /* Handshake: one byte per child. */
  int got = 0, failed = 0;
  while (got < nchildren && !stop_requested) {
    char buf[512];
    ssize_t n = read(ready[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t j = 0; j < n; ++j) failed += buf[j] != 'R';
    got += (int)n;
  }
  close(ready[0]);
  if (stop_requested) {
    kill_fleet();
    unlink(tmpfile);
    return 1;
  }
  if (got < procs || failed) {
    fprintf(stderr, "fleet: %d of %d children failed to set up %d fds%s (check ulimit -n)\n",
            failed + (procs - got), procs, fds, ndevs ? " plus the device files" : "");
    kill_fleet();
    unlink(tmpfile);
    return 1;
  }

  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", pidfile);
  FILE* f = fopen(tmp, "w");
  if (!f) die(tmp);
  for (int i = 0; i < nchildren; ++i)
    fprintf(f, "%d %s\n", (int)children[i], i < holders ? "holder" : "sleeper");
  if (fclose(f) != 0) die(tmp);
  if (rename(tmp, pidfile) != 0) die("rename");

  /* Sleep until told to stop; reap any child that dies meanwhile (it should not). */
  while (!stop_requested) pause();
  kill_fleet();
  unlink(tmpfile);
  unlink(pidfile);
  return 0;
}
