/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Ground truth for the tracer tests: the log a test program writes about its
 * own jobs (tests/progs/periodic.c), the job events the tracer delivered, and
 * their comparison. Plain C so the kselftest runner and the GoogleTest
 * integration tests share it.
 */
#ifndef RIPPLE_TESTS_GROUNDTRUTH_H
#define RIPPLE_TESTS_GROUNDTRUTH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One job as the program saw it. */
struct gt_job {
	long seq;          /* from 0 */
	uint64_t release;  /* CLOCK_MONOTONIC after the wait returned / at function entry */
	uint64_t complete; /* before the next wait / at function return */
	uint64_t nominal;  /* the period boundary it slept until */
	int tid;
};

/* One job as the tracer saw it (a RELEASE and its COMPLETE). */
struct gt_traced {
	uint64_t seq;
	uint64_t release;  /* wake-up (period-wait) or probe hit */
	uint64_t start;    /* wait exit or probe hit */
	uint64_t complete;
	uint64_t oncpu;
	uint32_t preemptions;
	int tid;
};

struct gt_report {
	int jobs;          /* jobs in the program's log */
	int traced;        /* jobs the tracer delivered */
	int order_errors;  /* seq not 1,2,3..., or a COMPLETE without its RELEASE */
	int tid_errors;    /* traced on another thread than the program's */
	int over_limit;    /* start or completion more than limit_ns off */
	/* the tracer's start after the program's own release reading, or its completion
	 * before the program's own completion reading: causality says never */
	int sign_errors;
	/* |tracer - program| in microseconds */
	double start_p10_us, start_p50_us, start_p99_us, start_max_us;
	double complete_p10_us, complete_p50_us, complete_p99_us, complete_max_us;
	/* wake-up latency: program release - tracer release (period-wait) */
	double wake_p50_us, wake_p99_us, wake_max_us;
};

/* Reads "seq release complete tid nominal" lines; returns the count or -1. */
int gt_load(const char *path, struct gt_job **jobs);

/* Pairs job i of the program with traced job i and fills the report. */
void gt_compare(const struct gt_job *jobs, int njobs, const struct gt_traced *traced,
		int ntraced, uint64_t limit_ns, struct gt_report *r);

/* One line: "N jobs, N traced, start |d| p50/p99/max ..., wake-up latency ..." */
void gt_format(const struct gt_report *r, char *buf, unsigned long len);

/* Accumulates tracer events into traced jobs, checking order as it goes. */
struct gt_collector {
	struct gt_traced *jobs;
	int n, cap;
	int order_errors;
	uint64_t releases, completes;
};
void gt_collect_release(struct gt_collector *c, uint64_t seq, uint64_t release,
			uint64_t start, int tid);
void gt_collect_complete(struct gt_collector *c, uint64_t seq, uint64_t complete,
			 uint64_t oncpu, uint32_t preemptions, int tid);
void gt_collector_free(struct gt_collector *c);

#ifdef __cplusplus
}
#endif
#endif
