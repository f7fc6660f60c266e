// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tracer.bpf.c — see every job of an unmodified protected task (PT).
 *
 * A PT is a set of threads (one process by pid, every process running one
 * executable, or every thread with one comm) whose periodic work Ripple
 * protects. A *job* is one iteration of that work; we see its release and its
 * completion without touching the task, in one of two modes per PT:
 *
 *  - period-wait: the thread sleeps in a "period wait" syscall between jobs
 *    (clock_nanosleep, nanosleep, and optionally epoll/poll/select/futex waits).
 *    Entering the wait completes the running job; returning from it releases
 *    the next one. The release timestamp is the thread's wake-up (sched_wakeup
 *    while it sleeps in the wait), not the syscall exit, so scheduling latency
 *    after the wake-up is part of the job's response time, as it is for the
 *    robot. A wait that returns without sleeping (an overrun) is released at
 *    the syscall exit and flagged RIPPLE_EVF_NO_WAKEUP. Exits with -ERESTART*
 *    are not releases (the kernel re-enters the wait), nor is a wait that
 *    ends because the thread is being killed (SIGKILL pending: exit_group or
 *    a fatal signal).
 *  - uprobe: release = entry of a function, completion = its return (nesting
 *    counted) or the entry of a second function. The loader attaches the
 *    programs per PT with the PT index as the BPF cookie.
 *
 * Which threads belong to which PT lives in the pinned hash "pt_threads"
 * (tid -> struct ripple_thread). The loader seeds it from /proc; from then on
 * the kernel keeps it current:
 *  - sched_process_fork: a new thread inherits its creator's PT; a new process
 *    does too, except for pid-matched PTs (a child is another process);
 *  - sched_process_exec: an exec of a matched executable (by inode, in
 *    "match_exe") or into a matched comm ("match_comm") attaches the thread;
 *    an exec into anything else detaches it (pid-matched PTs keep it);
 *  - task_rename: a thread renamed to a matched comm is attached, one renamed
 *    away from its PT's comm is detached;
 *  - exec and rename attach a thread only if it runs as the PT's user (euid,
 *    pt_config.uid) unless the PT accepts any user: anyone can name a thread
 *    or run a file, so name and file alone would let an unprivileged user's
 *    thread be accounted as the protected task (refusals: uid_refused);
 *  - sched_process_exit: the thread is removed; a job it left open is counted
 *    in pt_stats.aborted and reported as RIPPLE_EV_ABORT, so a consumer that
 *    holds the job (the agent's ledger) can let it go.
 * A thread attached mid-flight starts in RIPPLE_TS_UNKNOWN and yields its
 * first job at its first complete wait (or first call of the release function).
 *
 * sched_switch accumulates each job's on-CPU time and its involuntary
 * preemptions (the "preempt" argument): they separate CPU interference from
 * memory interference for the estimator.
 *
 * Events go to one ring buffer ("events"); a failed reserve bumps the per-CPU
 * "drops" counter and the PT's pt_stats.drops, so no loss is silent. Per-PT
 * configuration ("pt_config", the deadline may be changed live) and counters
 * ("pt_stats") are pinned under /sys/fs/bpf/ripple/ for bpftool.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ripple/bpf/tracer.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define SIGKILL 9
#define EEXIST 17
#define ERESTARTSYS 512
#define ERESTART_RESTARTBLOCK 516
#define FUTEX_WAIT 0
#define FUTEX_WAIT_BITSET 9
#define FUTEX_CMD_MASK 0x7f /* ~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME) */

/* The tracer's own process, never traced. */
const volatile __u32 cfg_self_tgid = 0;
/* 1: wake the consumer for each event. 0: never; the consumer polls. A
 * wake-up is an irq_work (a self-IPI) on the traced task's CPU, paid on its
 * way back to user space: ~20 us in a nested VM, ~1 us on bare metal. */
const volatile __u32 cfg_wakeup = 1;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024); /* the loader may resize */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} drops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RIPPLE_MAX_PTS);
	__type(key, __u32);
	__type(value, struct ripple_pt_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} pt_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RIPPLE_MAX_PTS);
	__type(key, __u32);
	__type(value, struct ripple_pt_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} pt_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct ripple_thread);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} pt_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RIPPLE_MAX_PTS);
	__type(key, struct ripple_exe_key);
	__type(value, __u32); /* pt */
} match_exe SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RIPPLE_MAX_PTS);
	__type(key, struct ripple_comm_key);
	__type(value, __u32); /* pt */
} match_comm SEC(".maps");

static __always_inline struct ripple_pt_config *config_of(__u32 pt)
{
	return bpf_map_lookup_elem(&pt_config, &pt);
}

static __always_inline struct ripple_pt_stats *stats_of(__u32 pt)
{
	return bpf_map_lookup_elem(&pt_stats, &pt);
}

static __always_inline void count_drop(struct ripple_pt_stats *st)
{
	__u32 zero = 0;
	__u64 *d = bpf_map_lookup_elem(&drops, &zero);

	if (d)
		(*d)++;
	if (st)
		__sync_fetch_and_add(&st->drops, 1);
}

static __always_inline void emit(struct ripple_thread *t, __u32 tid, __u16 kind,
				 __u64 ts, __u16 flags, struct ripple_pt_stats *st)
{
	struct ripple_job_event *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(st);
		return;
	}
	e->ts = ts;
	e->release_ts = t->release_ts;
	e->start_ts = t->start_ts;
	e->seq = t->seq;
	e->oncpu_ns = kind == RIPPLE_EV_COMPLETE ? t->oncpu_ns : 0;
	e->pt = t->pt;
	e->tid = tid;
	e->tgid = t->tgid;
	e->preemptions = kind == RIPPLE_EV_COMPLETE ? t->preemptions : 0;
	e->kind = kind;
	e->flags = flags;
	e->pad = 0;
	bpf_ringbuf_submit(e, cfg_wakeup ? 0 : BPF_RB_NO_WAKEUP);
}

static __always_inline void release_job(struct ripple_thread *t, __u32 tid,
					__u64 release_ts, __u64 now, __u16 flags)
{
	struct ripple_pt_stats *st = stats_of(t->pt);

	if (!st)
		return;
	t->seq = __sync_fetch_and_add(&st->next_seq, 1) + 1;
	t->release_ts = release_ts;
	t->start_ts = now;
	t->oncpu_ns = 0;
	t->preemptions = 0;
	t->run_start = now; /* the thread is on CPU: it is in a syscall or probe */
	t->state = RIPPLE_TS_IN_JOB;
	__sync_fetch_and_add(&st->releases, 1);
	st->last_release_ts = release_ts;
	emit(t, tid, RIPPLE_EV_RELEASE, release_ts, flags, st);
}

static __always_inline void complete_job(struct ripple_thread *t, __u32 tid,
					 __u64 now, __u32 next_state)
{
	struct ripple_pt_config *cfg = config_of(t->pt);
	struct ripple_pt_stats *st = stats_of(t->pt);
	__u64 response, old;
	__u16 flags = 0;
	int i;

	if (!cfg || !st)
		return;
	if (t->run_start) {
		t->oncpu_ns += now - t->run_start;
		t->run_start = now;
	}
	response = now - t->release_ts;
	if (cfg->deadline_ns && response > cfg->deadline_ns) {
		flags |= RIPPLE_EVF_MISS;
		__sync_fetch_and_add(&st->misses, 1);
	}
	__sync_fetch_and_add(&st->jobs, 1);
	st->last_response_ns = response;
	/* max across CPUs: a bounded compare-and-swap loop */
	for (i = 0; i < 4; i++) {
		old = st->max_response_ns;
		if (response <= old)
			break;
		if (__sync_val_compare_and_swap(&st->max_response_ns, old, response) == old)
			break;
	}
	t->state = next_state;
	emit(t, tid, RIPPLE_EV_COMPLETE, now, flags, st);
}

/* The open job of t will never complete (its thread exits, execs, is
 * detached, or releases again first): counted and reported, so that no
 * consumer waits for its completion. */
static __always_inline void abort_job(struct ripple_thread *t, __u32 tid, __u64 now)
{
	struct ripple_pt_stats *st = stats_of(t->pt);

	if (st)
		__sync_fetch_and_add(&st->aborted, 1);
	t->state = RIPPLE_TS_UNKNOWN;
	emit(t, tid, RIPPLE_EV_ABORT, now, 0, st);
}

/* --- period-wait mode --------------------------------------------------- */

static __always_inline bool dying(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return BPF_CORE_READ(task, pending.signal.sig[0]) & (1UL << (SIGKILL - 1));
}

static __always_inline int wait_enter(__u32 bit)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ripple_pt_config *cfg;
	struct ripple_thread *t;
	__u64 now;

	t = bpf_map_lookup_elem(&pt_threads, &tid);
	if (!t)
		return 0;
	cfg = config_of(t->pt);
	if (!cfg || cfg->mode != RIPPLE_MODE_PERIOD_WAIT || !(cfg->wait_mask & bit))
		return 0;
	now = bpf_ktime_get_ns();
	if (t->state == RIPPLE_TS_IN_JOB)
		complete_job(t, tid, now, RIPPLE_TS_WAITING);
	t->state = RIPPLE_TS_WAITING;
	t->wait_ts = now;
	t->wake_ts = 0;
	return 0;
}

static __always_inline int wait_exit(__u32 bit, long ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ripple_pt_config *cfg;
	struct ripple_thread *t;
	__u64 now;

	t = bpf_map_lookup_elem(&pt_threads, &tid);
	if (!t || t->state != RIPPLE_TS_WAITING)
		return 0;
	cfg = config_of(t->pt);
	if (!cfg || cfg->mode != RIPPLE_MODE_PERIOD_WAIT || !(cfg->wait_mask & bit))
		return 0;
	/* The kernel restarts the wait after a signal handler: still waiting. */
	if (ret <= -ERESTARTSYS && ret >= -ERESTART_RESTARTBLOCK)
		return 0;
	/* Woken only to die (exit_group, a fatal signal): not a release. */
	if (dying())
		return 0;
	now = bpf_ktime_get_ns();
	if (t->wake_ts && t->wake_ts >= t->wait_ts)
		release_job(t, tid, t->wake_ts, now, 0);
	else
		release_job(t, tid, now, now, RIPPLE_EVF_NO_WAKEUP);
	return 0;
}

/* futex(2) multiplexes: only FUTEX_WAIT and FUTEX_WAIT_BITSET are waits. */
static __always_inline bool futex_waits(struct syscall_trace_enter *ctx)
{
	unsigned long op = 0;

	bpf_probe_read_kernel(&op, sizeof(op), &ctx->args[1]);
	op &= FUTEX_CMD_MASK;
	return op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET;
}

/* A tracepoint pair per wait syscall of RIPPLE_WAIT_SYSCALLS (include/ripple/bpf/tracer.h);
 * the loader loads those of the waits some PT uses. */
#define WAIT_SYSCALL_IF(name, bit, cond)                                      \
	SEC("tracepoint/syscalls/sys_enter_" #name)                           \
	int enter_##name(struct syscall_trace_enter *ctx)                     \
	{                                                                     \
		return (cond) ? wait_enter(bit) : 0;                          \
	}                                                                     \
	SEC("tracepoint/syscalls/sys_exit_" #name)                            \
	int exit_##name(struct syscall_trace_exit *ctx)                       \
	{                                                                     \
		return wait_exit(bit, ctx->ret);                              \
	}
#define WAIT_SYSCALL(name, bit) WAIT_SYSCALL_IF(name, bit, true)
#define WAIT_SYSCALL_FUTEX(name, bit) WAIT_SYSCALL_IF(name, bit, futex_waits(ctx))

RIPPLE_WAIT_SYSCALLS(WAIT_SYSCALL, WAIT_SYSCALL_FUTEX)

SEC("tp_btf/sched_wakeup")
int BPF_PROG(handle_wakeup, struct task_struct *p)
{
	__u32 tid = BPF_CORE_READ(p, pid);
	struct ripple_thread *t;

	t = bpf_map_lookup_elem(&pt_threads, &tid);
	if (t && t->state == RIPPLE_TS_WAITING)
		t->wake_ts = bpf_ktime_get_ns();
	return 0;
}

/* --- on-CPU time and preemptions ---------------------------------------- */

/* Involuntary, as the kernel counts nivcsw: preempted, or switched out while
 * still runnable (user-mode preemption at return to user passes preempt=false). */
static __always_inline bool involuntary(bool preempt, struct task_struct *prev)
{
	if (preempt)
		return true;
	if (bpf_core_field_exists(prev->__state))
		return BPF_CORE_READ(prev, __state) == 0;
	return false;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(handle_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	__u32 prev_tid = BPF_CORE_READ(prev, pid);
	__u32 next_tid = BPF_CORE_READ(next, pid);
	struct ripple_thread *t;
	__u64 now = 0;

	t = bpf_map_lookup_elem(&pt_threads, &prev_tid);
	if (t) {
		now = bpf_ktime_get_ns();
		if (t->run_start && t->state == RIPPLE_TS_IN_JOB) {
			t->oncpu_ns += now - t->run_start;
			if (involuntary(preempt, prev))
				t->preemptions++;
		}
		t->run_start = 0;
	}
	t = bpf_map_lookup_elem(&pt_threads, &next_tid);
	if (t)
		t->run_start = now ? now : bpf_ktime_get_ns();
	return 0;
}

/* --- uprobe mode ---------------------------------------------------------- */

static __always_inline struct ripple_thread *uprobe_thread(void *ctx, __u32 *tid)
{
	struct ripple_thread *t;
	__u32 pt = (__u32)bpf_get_attach_cookie(ctx);

	*tid = (__u32)bpf_get_current_pid_tgid();
	t = bpf_map_lookup_elem(&pt_threads, tid);
	if (!t || t->pt != pt)
		return 0;
	return t;
}

SEC("uprobe")
int BPF_KPROBE(uprobe_release)
{
	struct ripple_thread *t;
	__u64 now;
	__u32 tid;

	t = uprobe_thread(ctx, &tid);
	if (!t)
		return 0;
	if (t->depth++ > 0)
		return 0; /* a nested call is part of the running job */
	now = bpf_ktime_get_ns();
	/* two-function mode: released again before the completion function
	 * ran; the open job never completed */
	if (t->state == RIPPLE_TS_IN_JOB)
		abort_job(t, tid, now);
	release_job(t, tid, now, now, 0);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(uretprobe_complete)
{
	struct ripple_thread *t;
	__u32 tid;

	t = uprobe_thread(ctx, &tid);
	if (!t || t->depth == 0)
		return 0;
	if (--t->depth > 0)
		return 0;
	if (t->state == RIPPLE_TS_IN_JOB)
		complete_job(t, tid, bpf_ktime_get_ns(), RIPPLE_TS_WAITING);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(uprobe_complete)
{
	struct ripple_thread *t;
	__u32 tid;

	t = uprobe_thread(ctx, &tid);
	if (!t)
		return 0;
	t->depth = 0;
	if (t->state == RIPPLE_TS_IN_JOB)
		complete_job(t, tid, bpf_ktime_get_ns(), RIPPLE_TS_WAITING);
	return 0;
}

/* --- following threads and processes ------------------------------------ */

static __always_inline void attach_thread(__u32 tid, __u32 tgid, __u32 pt)
{
	struct ripple_thread t = {};
	struct ripple_pt_stats *st;
	long err;

	t.pt = pt;
	t.tgid = tgid;
	t.state = RIPPLE_TS_UNKNOWN;
	err = bpf_map_update_elem(&pt_threads, &tid, &t, BPF_NOEXIST);
	if (err == -EEXIST)
		return;
	st = stats_of(pt);
	if (st)
		__sync_fetch_and_add(err ? &st->attach_failures : &st->threads, 1);
}

static __always_inline void detach_thread(__u32 tid)
{
	struct ripple_thread *t = bpf_map_lookup_elem(&pt_threads, &tid);

	if (!t)
		return;
	if (t->state == RIPPLE_TS_IN_JOB)
		abort_job(t, tid, bpf_ktime_get_ns());
	bpf_map_delete_elem(&pt_threads, &tid);
}

/* May thread p join PT pt by exe or comm? Only as the PT's user. */
static __always_inline bool user_ok(struct task_struct *p, __u32 pt)
{
	struct ripple_pt_config *cfg = config_of(pt);
	struct ripple_pt_stats *st;

	if (!cfg)
		return false;
	if (cfg->any_uid || BPF_CORE_READ(p, cred, euid.val) == cfg->uid)
		return true;
	st = stats_of(pt);
	if (st)
		__sync_fetch_and_add(&st->uid_refused, 1);
	return false;
}

static __always_inline int comm_pt(const char *src, __u32 *pt)
{
	struct ripple_comm_key key = {};
	__u32 *v;

	if (bpf_probe_read_kernel_str(key.comm, sizeof(key.comm), src) < 0)
		return -1;
	v = bpf_map_lookup_elem(&match_comm, &key);
	if (!v)
		return -1;
	*pt = *v;
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptid = BPF_CORE_READ(parent, pid);
	__u32 ctid = BPF_CORE_READ(child, pid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	struct ripple_pt_config *cfg;
	struct ripple_thread *t;

	t = bpf_map_lookup_elem(&pt_threads, &ptid);
	if (!t)
		return 0;
	cfg = config_of(t->pt);
	if (!cfg)
		return 0;
	if (cfg->match == RIPPLE_MATCH_PID && ctgid != t->tgid)
		return 0; /* a new process is not the matched pid */
	attach_thread(ctid, ctgid, t->pt);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	struct ripple_exe_key key = {};
	struct ripple_pt_config *cfg;
	struct ripple_thread *t;
	__u32 tid = BPF_CORE_READ(p, pid);
	__u32 tgid = BPF_CORE_READ(p, tgid);
	__u32 pt, *v;

	if (tgid == cfg_self_tgid)
		return 0;
	key.ino = BPF_CORE_READ(bprm, file, f_inode, i_ino);
	key.dev = BPF_CORE_READ(bprm, file, f_inode, i_sb, s_dev);
	v = bpf_map_lookup_elem(&match_exe, &key);
	if (v) {
		pt = *v;
	} else if (comm_pt(p->comm, &pt) < 0) {
		/* exec'd into something unmatched: keep pid-matched threads */
		t = bpf_map_lookup_elem(&pt_threads, &tid);
		if (t) {
			cfg = config_of(t->pt);
			if (!cfg || cfg->match != RIPPLE_MATCH_PID)
				detach_thread(tid);
		}
		return 0;
	}
	/* A new program image starts from a clean state: a job open at the
	 * exec never completes (counted as aborted). A non-leader thread that
	 * execs takes the leader's tid; its old tid goes away with no exit. */
	detach_thread(tid);
	if ((__u32)old_pid != tid)
		detach_thread((__u32)old_pid);
	if (user_ok(p, pt))
		attach_thread(tid, tgid, pt);
	return 0;
}

SEC("tp_btf/task_rename")
int BPF_PROG(handle_rename, struct task_struct *task, const char *comm)
{
	__u32 tid = BPF_CORE_READ(task, pid);
	__u32 tgid = BPF_CORE_READ(task, tgid);
	struct ripple_pt_config *cfg;
	struct ripple_thread *t;
	__u32 pt;

	if (tgid == cfg_self_tgid)
		return 0;
	t = bpf_map_lookup_elem(&pt_threads, &tid);
	if (comm_pt(comm, &pt) == 0) {
		if (t && t->pt != pt)
			detach_thread(tid);
		if (user_ok(task, pt))
			attach_thread(tid, tgid, pt);
		return 0;
	}
	if (t) {
		cfg = config_of(t->pt);
		if (cfg && cfg->match == RIPPLE_MATCH_COMM)
			detach_thread(tid);
	}
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_exit, struct task_struct *p)
{
	detach_thread(BPF_CORE_READ(p, pid));
	return 0;
}
