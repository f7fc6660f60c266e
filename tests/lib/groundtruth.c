// SPDX-License-Identifier: GPL-2.0
#include "tests/lib/groundtruth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gt_load(const char *path, struct gt_job **jobs)
{
	FILE *f = fopen(path, "r");
	struct gt_job *v = NULL, j;
	unsigned long long rel, comp, nom;
	int n = 0, cap = 0;

	if (!f)
		return -1;
	while (fscanf(f, "%ld %llu %llu %d %llu", &j.seq, &rel, &comp, &j.tid, &nom) == 5) {
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			v = realloc(v, (size_t)cap * sizeof(*v));
			if (!v) {
				fclose(f);
				return -1;
			}
		}
		j.release = rel;
		j.complete = comp;
		j.nominal = nom;
		v[n++] = j;
	}
	fclose(f);
	*jobs = v;
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void pct(double *v, int n, double *p10, double *p50, double *p99, double *max)
{
	if (n == 0) {
		*p10 = *p50 = *p99 = *max = 0;
		return;
	}
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	/* nearest rank */
	*p10 = v[(n * 10 + 99) / 100 - 1];
	*p50 = v[(n * 50 + 99) / 100 - 1];
	*p99 = v[(n * 99 + 99) / 100 - 1];
	*max = v[n - 1];
}

static double absdiff_us(uint64_t a, uint64_t b)
{
	return (a > b ? (double)(a - b) : (double)(b - a)) / 1000.0;
}

void gt_compare(const struct gt_job *jobs, int njobs, const struct gt_traced *traced,
		int ntraced, uint64_t limit_ns, struct gt_report *r)
{
	int n = njobs < ntraced ? njobs : ntraced, i, k = 0;
	double *ds = calloc((size_t)n + 1, sizeof(double));
	double *dc = calloc((size_t)n + 1, sizeof(double));
	double *dw = calloc((size_t)n + 1, sizeof(double));

	memset(r, 0, sizeof(*r));
	r->jobs = njobs;
	r->traced = ntraced;
	for (i = 0; i < n; i++) {
		const struct gt_job *g = &jobs[i];
		const struct gt_traced *t = &traced[i];

		if (t->seq != (uint64_t)i + 1)
			r->order_errors++;
		if (t->tid != g->tid)
			r->tid_errors++;
		if (t->start > g->release || t->complete < g->complete)
			r->sign_errors++;
		ds[i] = absdiff_us(t->start, g->release);
		dc[i] = absdiff_us(t->complete, g->complete);
		if (ds[i] * 1000 > (double)limit_ns || dc[i] * 1000 > (double)limit_ns)
			r->over_limit++;
		if (g->release >= t->release)
			dw[k++] = (double)(g->release - t->release) / 1000.0;
		else
			r->order_errors++; /* released after the program saw its release */
	}
	double wake_p10;

	pct(ds, n, &r->start_p10_us, &r->start_p50_us, &r->start_p99_us, &r->start_max_us);
	pct(dc, n, &r->complete_p10_us, &r->complete_p50_us, &r->complete_p99_us, &r->complete_max_us);
	pct(dw, k, &wake_p10, &r->wake_p50_us, &r->wake_p99_us, &r->wake_max_us);
	free(ds);
	free(dc);
	free(dw);
}

void gt_format(const struct gt_report *r, char *buf, unsigned long len)
{
	snprintf(buf, len,
		 "%d jobs, %d traced, %d order errors, %d sign errors, %d over limit; "
		 "|start-own release| p10 %.1f p50 %.1f p99 %.1f max %.1f us; "
		 "|completion-own| p10 %.1f p50 %.1f p99 %.1f max %.1f us; "
		 "wake-up latency p50 %.1f p99 %.1f max %.1f us",
		 r->jobs, r->traced, r->order_errors, r->sign_errors, r->over_limit, r->start_p10_us, r->start_p50_us,
		 r->start_p99_us, r->start_max_us, r->complete_p10_us, r->complete_p50_us, r->complete_p99_us,
		 r->complete_max_us, r->wake_p50_us, r->wake_p99_us, r->wake_max_us);
}

void gt_collect_release(struct gt_collector *c, uint64_t seq, uint64_t release,
			uint64_t start, int tid)
{
	struct gt_traced *t;

	c->releases++;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 1024;
		c->jobs = realloc(c->jobs, (size_t)c->cap * sizeof(*c->jobs));
		if (!c->jobs)
			abort();
	}
	if (c->n > 0 && c->jobs[c->n - 1].complete == 0 &&
	    c->jobs[c->n - 1].tid == tid)
		c->order_errors++; /* released again before completing */
	if (seq != (uint64_t)c->n + 1)
		c->order_errors++;
	t = &c->jobs[c->n++];
	memset(t, 0, sizeof(*t));
	t->seq = seq;
	t->release = release;
	t->start = start;
	t->tid = tid;
}

void gt_collect_complete(struct gt_collector *c, uint64_t seq, uint64_t complete,
			 uint64_t oncpu, uint32_t preemptions, int tid)
{
	int i;

	c->completes++;
	/* the job is among the last few released (several threads may interleave) */
	for (i = c->n - 1; i >= 0 && i >= c->n - 64; i--) {
		struct gt_traced *t = &c->jobs[i];

		if (t->seq != seq)
			continue;
		if (t->complete || t->tid != tid)
			break;
		t->complete = complete;
		t->oncpu = oncpu;
		t->preemptions = preemptions;
		return;
	}
	c->order_errors++;
}

void gt_collector_free(struct gt_collector *c)
{
	free(c->jobs);
	memset(c, 0, sizeof(*c));
}
