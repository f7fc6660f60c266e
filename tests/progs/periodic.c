// SPDX-License-Identifier: GPL-2.0
/*
 * periodic — an ordinary periodic program for the tracer tests. It knows
 * nothing of Ripple; it only logs its own ground truth.
 *
 * Every job: wait for the next period with the chosen syscall, note
 * CLOCK_MONOTONIC right after the wait returns (release), spin for --work-us,
 * note the time right before the next wait (completion). With --func the work
 * runs inside ripple_test_job(), and the ground truth is taken at that
 * function's entry and return (the uprobe mode's view).
 *
 *   periodic [--period-us N] [--jobs N] [--work-us N] [--wait KIND]
 *            [--log FILE] [--comm NAME] [--thread] [--noise]
 *            [--func] [--fifo] [--start-delay-ms N] [--wait-start]
 *
 * KIND: clock_nanosleep (absolute), nanosleep, epoll, poll, ppoll, select,
 *       pselect, futex. Fd-based waits sleep on a timerfd.
 * --thread  run the jobs in a second thread (the main thread only joins it)
 * --noise   also run a thread named "noise" that sleeps with the same syscall
 *           at 3x the period (it must not be mistaken for the PT)
 * --comm    name the job thread
 * --wait-start  print "ready" and wait for SIGUSR1 before the first job
 * --func    run each job in ripple_test_job(), then call ripple_test_job_done()
 * Log lines: "seq release_ns complete_ns tid nominal_ns", where release_ns is
 * read right after the wait returns (or at ripple_test_job's entry) and
 * nominal_ns is the period boundary the wait was asked to sleep until.
 * Exit status 0 on success.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static long period_us = 10000, jobs = 100, work_us = 200, start_delay_ms;
static const char *wait_kind = "clock_nanosleep", *log_path, *comm;
static int use_thread, use_noise, use_func, use_fifo, wait_start;
static volatile int noise_stop, jobs_done;

struct record {
	uint64_t release, complete, nominal;
};
static struct record *recs;
static pid_t job_tid;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct timespec to_ts(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };
	return ts;
}

static void spin_until(uint64_t t)
{
	while (now_ns() < t)
		;
}

/* The job body the uprobe mode probes; noinline and used so it keeps its symbol. */
__attribute__((noinline, used)) void ripple_test_job(long seq)
{
	recs[seq].release = now_ns();
	spin_until(recs[seq].release + (uint64_t)work_us * 1000);
	recs[seq].complete = now_ns();
	__asm__ volatile("" ::: "memory");
}

/* Called right after each job with --func: the two-function uprobe mode's
 * completion point. */
__attribute__((noinline, used)) void ripple_test_job_done(long seq)
{
	__asm__ volatile("" ::: "memory");
	(void)seq;
}

struct waiter {
	const char *kind;
	int tfd, epfd;
	int futex_word;
};

static void waiter_init(struct waiter *w, const char *kind)
{
	w->kind = kind;
	w->tfd = w->epfd = -1;
	w->futex_word = 0;
	/* poll and select are x86 legacy: aarch64 has only ppoll and pselect6. */
#ifndef SYS_poll
	if (!strcmp(kind, "poll")) {
		fprintf(stderr, "periodic: no poll syscall on this architecture\n");
		exit(2);
	}
#endif
#ifndef SYS_select
	if (!strcmp(kind, "select")) {
		fprintf(stderr, "periodic: no select syscall on this architecture\n");
		exit(2);
	}
#endif
	if (!strcmp(kind, "epoll") || !strcmp(kind, "poll") || !strcmp(kind, "ppoll") ||
	    !strcmp(kind, "select") || !strcmp(kind, "pselect")) {
		w->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		if (w->tfd < 0) {
			perror("timerfd_create");
			exit(2);
		}
	}
	if (!strcmp(kind, "epoll")) {
		struct epoll_event ev = { .events = EPOLLIN };

		w->epfd = epoll_create1(EPOLL_CLOEXEC);
		epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->tfd, &ev);
	}
}

/* Prepares a wait until absolute CLOCK_MONOTONIC time t: fd-based waits arm
 * their timerfd here, so that the job's completion can be timed after this
 * syscall and right before the wait itself. */
static void wait_arm(struct waiter *w, uint64_t t)
{
	struct itimerspec its = { .it_value = to_ts(t) };

	if (w->tfd >= 0)
		timerfd_settime(w->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Sleeps until t with the chosen syscall (after wait_arm). */
static void wait_block(struct waiter *w, uint64_t t)
{
	struct timespec ts = to_ts(t);
	uint64_t now, exp;

	if (!strcmp(w->kind, "clock_nanosleep")) {
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		return;
	}
	if (!strcmp(w->kind, "nanosleep")) {
		now = now_ns();
		ts = to_ts(now >= t ? 0 : t - now);
		syscall(SYS_nanosleep, &ts, NULL); /* glibc's nanosleep() is clock_nanosleep */
		return;
	}
	if (!strcmp(w->kind, "futex")) {
		syscall(SYS_futex, &w->futex_word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0, &ts,
			NULL, FUTEX_BITSET_MATCH_ANY);
		return;
	}
	if (!strcmp(w->kind, "epoll")) {
		struct epoll_event ev;
		epoll_wait(w->epfd, &ev, 1, -1);
	} else if (!strcmp(w->kind, "poll")) {
#ifdef SYS_poll
		struct pollfd p = { .fd = w->tfd, .events = POLLIN };
		syscall(SYS_poll, &p, 1, -1);
#endif
	} else if (!strcmp(w->kind, "ppoll")) {
		struct pollfd p = { .fd = w->tfd, .events = POLLIN };
		ppoll(&p, 1, NULL, NULL);
	} else {
		fd_set set;
		FD_ZERO(&set);
		FD_SET(w->tfd, &set);
#ifdef SYS_select
		if (!strcmp(w->kind, "select"))
			syscall(SYS_select, w->tfd + 1, &set, NULL, NULL, NULL);
		else
#endif
			pselect(w->tfd + 1, &set, NULL, NULL, NULL, NULL);
	}
	if (read(w->tfd, &exp, sizeof(exp)) < 0)
		perror("read timerfd");
}

static void wait_until(struct waiter *w, uint64_t t)
{
	wait_arm(w, t);
	wait_block(w, t);
}

static void write_log(void)
{
	FILE *f;
	long i;

	if (!log_path)
		return;
	f = fopen(log_path, "w");
	if (!f) {
		perror(log_path);
		_exit(2);
	}
	for (i = 0; i < jobs; i++)
		fprintf(f, "%ld %llu %llu %d %llu\n", i, (unsigned long long)recs[i].release,
			(unsigned long long)recs[i].complete, job_tid,
			(unsigned long long)recs[i].nominal);
	fclose(f);
}

/* Ends the process once the last job is done, while the job thread sleeps
 * in its final wait: entering that wait completes the last job, and the wait
 * never returns, so no job is released after the last one. It naps in
 * rt_sigtimedwait, which is never a period wait, and is started before the
 * first job so that nothing runs between the last completion and the wait. */
static void *terminator(void *arg)
{
	struct timespec ts = { 0, 1000000 };
	sigset_t none;

	(void)arg;
	sigemptyset(&none);
	while (!jobs_done)
		sigtimedwait(&none, NULL, &ts);
	ts.tv_nsec = 3000000; /* let the job thread reach its final wait */
	sigtimedwait(&none, NULL, &ts);
	write_log();
	_exit(0);
	return NULL;
}

static void *job_loop(void *arg)
{
	struct waiter w;
	uint64_t next;
	long i;

	(void)arg;
	pthread_t term;

	job_tid = (pid_t)syscall(SYS_gettid);
	pthread_create(&term, NULL, terminator, NULL);
	if (comm)
		prctl(PR_SET_NAME, comm);
	prctl(PR_SET_TIMERSLACK, 1UL);
	waiter_init(&w, wait_kind);
	next = now_ns() + (uint64_t)period_us * 1000;
	wait_until(&w, next);
	for (i = 0; i < jobs; i++) {
		recs[i].nominal = next;
		if (use_func) {
			ripple_test_job(i);
			ripple_test_job_done(i);
		} else {
			recs[i].release = now_ns();
			spin_until(recs[i].release + (uint64_t)work_us * 1000);
		}
		/* after the last job the wait never returns: the terminator ends
		 * the process while it sleeps, so no job follows the last one */
		next = i + 1 < jobs ? next + (uint64_t)period_us * 1000
				    : now_ns() + 10ull * 1000000000ull;
		wait_arm(&w, next);
		/* the completion is the entry into the wait, right after this */
		if (!use_func)
			recs[i].complete = now_ns();
		if (i + 1 == jobs)
			jobs_done = 1;
		wait_block(&w, next);
	}
	fprintf(stderr, "periodic: the terminator did not end the process\n");
	_exit(3);
	return NULL;
}

static void *noise_loop(void *arg)
{
	struct waiter w;
	uint64_t next;

	(void)arg;
	prctl(PR_SET_NAME, "noise");
	waiter_init(&w, wait_kind);
	next = now_ns();
	while (!noise_stop) {
		next += (uint64_t)period_us * 3000;
		wait_until(&w, next);
		spin_until(now_ns() + 50000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th, noise;
	long i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--period-us") && v) period_us = atol(argv[++i]);
		else if (!strcmp(a, "--jobs") && v) jobs = atol(argv[++i]);
		else if (!strcmp(a, "--work-us") && v) work_us = atol(argv[++i]);
		else if (!strcmp(a, "--wait") && v) wait_kind = argv[++i];
		else if (!strcmp(a, "--log") && v) log_path = argv[++i];
		else if (!strcmp(a, "--comm") && v) comm = argv[++i];
		else if (!strcmp(a, "--start-delay-ms") && v) start_delay_ms = atol(argv[++i]);
		else if (!strcmp(a, "--thread")) use_thread = 1;
		else if (!strcmp(a, "--noise")) use_noise = 1;
		else if (!strcmp(a, "--func")) use_func = 1;
		else if (!strcmp(a, "--fifo")) use_fifo = 1;
		else if (!strcmp(a, "--wait-start")) wait_start = 1;
		else {
			fprintf(stderr, "periodic: unknown or incomplete option '%s'\n", a);
			return 2;
		}
	}
	if (period_us <= 0 || jobs <= 0 || work_us < 0) {
		fprintf(stderr, "periodic: --period-us and --jobs must be > 0\n");
		return 2;
	}
	recs = calloc((size_t)jobs, sizeof(*recs));
	if (!recs)
		return 2;
	if (use_fifo) {
		struct sched_param sp = { .sched_priority = 10 };
		if (sched_setscheduler(0, SCHED_FIFO, &sp))
			perror("sched_setscheduler");
	}
	if (wait_start) {
		/* block until SIGUSR1 in rt_sigtimedwait, which is never a period
		 * wait, so a tracer attached meanwhile sees no job yet */
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("ready\n");
		fflush(stdout);
		sigwait(&set, &sig);
	}
	if (start_delay_ms)
		usleep((useconds_t)start_delay_ms * 1000);
	if (use_noise)
		pthread_create(&noise, NULL, noise_loop, NULL);
	if (use_thread) {
		pthread_create(&th, NULL, job_loop, NULL);
		pthread_join(th, NULL);
	} else {
		job_loop(NULL);
	}
	if (use_noise) {
		noise_stop = 1;
		pthread_join(noise, NULL);
	}
	return 0;
}
