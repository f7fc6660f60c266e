/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Types shared by bpf/tracer.bpf.c and its C/C++ users (agent/tracer, tests).
 *
 * The only header included from both BPF C and userspace. Fixed-width types,
 * explicit padding, no bool; agent/tracer/tracer.cc static_asserts the sizes.
 */
#ifndef RIPPLE_BPF_TRACER_H
#define RIPPLE_BPF_TRACER_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Upper bound on protected tasks (PTs) one tracer instance observes. */
#define RIPPLE_MAX_PTS 64
#define RIPPLE_COMM_LEN 16

/* Where the tracer pins the maps bpftool and ripplectl read. */
#define RIPPLE_PIN_DIR "/sys/fs/bpf/ripple"

/* How a job of a PT is observed (ripple_pt_config.mode). */
enum ripple_pt_mode {
	RIPPLE_MODE_PERIOD_WAIT = 1, /* release = return from the period wait */
	RIPPLE_MODE_UPROBE = 2,      /* release = entry of a function */
};

/* How the threads of a PT are matched (ripple_pt_config.match). */
enum ripple_match_kind {
	RIPPLE_MATCH_PID = 1,  /* every thread of one process */
	RIPPLE_MATCH_EXE = 2,  /* every thread of every process running a file */
	RIPPLE_MATCH_COMM = 3, /* every thread whose comm equals a name */
};

/*
 * The period waits, listed once for the BPF program (bpf/tracer.bpf.c: a tracepoint pair
 * per syscall), the loader (agent/tracer/tracer.cc: which programs to load, the syscall
 * numbers of threads found asleep, the names a wait list accepts) and the docs.
 *
 * RIPPLE_WAIT_KINDS(X): X(name, NAME, bit) for each kind a PT's wait list names (config
 * `wait`, ripplectl trace --wait); it makes the bits RIPPLE_WAIT_<NAME> of
 * ripple_pt_config.wait_mask.
 * RIPPLE_WAIT_SYSCALLS(X, XF): X(syscall, RIPPLE_WAIT_<NAME>) for each syscall whose entry
 * completes the running job and whose return releases the next; XF for futex(2), which
 * multiplexes and is a wait only for FUTEX_WAIT and FUTEX_WAIT_BITSET (the BPF program
 * filters the op; the loader treats it as any other).
 */
#define RIPPLE_WAIT_KINDS(X)                                                   \
	X(clock_nanosleep, CLOCK_NANOSLEEP, 0)                                 \
	X(nanosleep, NANOSLEEP, 1)                                             \
	X(epoll, EPOLL, 2)                                                     \
	X(poll, POLL, 3)                                                       \
	X(select, SELECT, 4)                                                   \
	X(futex, FUTEX, 5)

#define RIPPLE_WAIT_SYSCALLS(X, XF)                                            \
	X(clock_nanosleep, RIPPLE_WAIT_CLOCK_NANOSLEEP)                        \
	X(nanosleep, RIPPLE_WAIT_NANOSLEEP)                                    \
	X(epoll_wait, RIPPLE_WAIT_EPOLL)                                       \
	X(epoll_pwait, RIPPLE_WAIT_EPOLL)                                      \
	X(epoll_pwait2, RIPPLE_WAIT_EPOLL)                                     \
	X(poll, RIPPLE_WAIT_POLL)                                              \
	X(ppoll, RIPPLE_WAIT_POLL)                                             \
	X(select, RIPPLE_WAIT_SELECT)                                          \
	X(pselect6, RIPPLE_WAIT_SELECT)                                        \
	X(futex_wait, RIPPLE_WAIT_FUTEX)                                       \
	XF(futex, RIPPLE_WAIT_FUTEX)

/* Period-wait kinds (bits of ripple_pt_config.wait_mask): RIPPLE_WAIT_CLOCK_NANOSLEEP... */
enum ripple_wait_bit {
#define RIPPLE_WAIT_BIT_(name, NAME, bit) RIPPLE_WAIT_##NAME = 1u << bit,
	RIPPLE_WAIT_KINDS(RIPPLE_WAIT_BIT_)
#undef RIPPLE_WAIT_BIT_
};

/* Event kinds in the ring buffer. */
enum ripple_event_kind {
	RIPPLE_EV_RELEASE = 1,
	RIPPLE_EV_COMPLETE = 2,
	RIPPLE_EV_ABORT = 3, /* the job's thread exited, exec'd, was detached or
			      * re-released without completing: the job will
			      * never complete (counted in pt_stats.aborted) */
};

/* ripple_job_event.flags */
enum ripple_event_flags {
	RIPPLE_EVF_MISS = 1u << 0,      /* COMPLETE: response exceeded the deadline */
	RIPPLE_EVF_NO_WAKEUP = 1u << 1, /* RELEASE: the wait returned without sleeping */
};

/* One record in the "events" ring buffer: 64 bytes. */
struct ripple_job_event {
	__u64 ts;          /* CLOCK_MONOTONIC ns: release (wake-up) or completion */
	__u64 release_ts;  /* the job's release time (== ts for RELEASE) */
	__u64 start_ts;    /* when the job began to execute (wait exit / probe hit) */
	__u64 seq;         /* per-PT monotone job sequence number, from 1 */
	__u64 oncpu_ns;    /* COMPLETE: time on CPU during the job */
	__u32 pt;          /* PT index (0..RIPPLE_MAX_PTS-1) */
	__u32 tid;         /* thread that ran the job */
	__u32 tgid;        /* its process */
	__u32 preemptions; /* COMPLETE: involuntary context switches during the job */
	__u16 kind;        /* enum ripple_event_kind */
	__u16 flags;       /* enum ripple_event_flags */
	__u32 pad;
};

/* Per-PT configuration: pinned map "pt_config", written by the loader. */
struct ripple_pt_config {
	char name[RIPPLE_COMM_LEN]; /* label shown by bpftool */
	__u64 deadline_ns;          /* relative deadline; 0 = none */
	__u32 active;               /* 1 if this slot holds a PT */
	__u32 mode;                 /* enum ripple_pt_mode */
	__u32 match;                /* enum ripple_match_kind */
	__u32 wait_mask;            /* enum ripple_wait_bit, period-wait mode */
	__u32 uid;                  /* exe/comm matches: only threads running as this
				     * euid join (an unprivileged user cannot pose as
				     * the task by its name or by running its file) */
	__u32 any_uid;              /* 1: any euid joins (the configuration said so) */
};

/* Per-PT live counters: pinned map "pt_stats", updated by BPF only. */
struct ripple_pt_stats {
	__u64 releases;        /* jobs released */
	__u64 jobs;            /* jobs completed */
	__u64 misses;          /* completed after release + deadline */
	__u64 last_response_ns;
	__u64 max_response_ns;
	__u64 drops;           /* events of this PT lost to a full ring buffer */
	__u64 aborted;         /* jobs whose thread exited before completing */
	__u64 next_seq;        /* last sequence number handed out */
	__u64 threads;         /* threads ever attached to this PT */
	__u64 last_release_ts;
	__u64 attach_failures; /* threads not followed: pt_threads was full */
	__u64 uid_refused;     /* threads that matched by exe/comm but ran as
				* another user: not attached */
};

/* Per-thread state: pinned map "pt_threads", key = tid. */
struct ripple_thread {
	__u32 pt;
	__u32 state;       /* enum ripple_thread_state */
	__u64 seq;         /* current job */
	__u64 release_ts;  /* current job's release */
	__u64 start_ts;    /* when it began to execute */
	__u64 wait_ts;     /* when it entered the period wait */
	__u64 wake_ts;     /* last wake-up seen while in the wait */
	__u64 oncpu_ns;    /* accumulated on-CPU time of the current job */
	__u64 run_start;   /* when it last went on CPU, 0 if off CPU */
	__u32 preemptions;
	__u32 depth;       /* uprobe mode: nesting of the release function */
	__u32 tgid;
	__u32 pad;
};

enum ripple_thread_state {
	RIPPLE_TS_UNKNOWN = 0, /* attached mid-flight: first release not seen */
	RIPPLE_TS_WAITING = 1, /* in the period wait, no job active */
	RIPPLE_TS_IN_JOB = 2,  /* a job is active */
};

/* Key of the "match_exe" map: the executable's inode. */
struct ripple_exe_key {
	__u64 ino;
	__u32 dev; /* kernel-internal dev_t: (major << 20) | minor */
	__u32 pad;
};

/* Key of the "match_comm" map. */
struct ripple_comm_key {
	char comm[RIPPLE_COMM_LEN];
};

#endif /* RIPPLE_BPF_TRACER_H */
