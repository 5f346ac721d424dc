/*
 * metrics.c - the Prometheus endpoint (see metrics.h).
 *
 * Names. Every counter `jnfs stat` prints becomes one sample, named by
 * these rules, applied in order:
 *   1. rpc.PROG.vVERS.PROC (a call count per procedure) is
 *        jnfs_rpc_procedure_calls_total{program="PROG",version="VERS",proc="PROC"}
 *      and its latency histogram (call arrival to reply)
 *        jnfs_rpc_procedure_duration_seconds_bucket{...,le="..."}, _sum, _count
 *      with the buckets' bounds at 2 us, 4 us, ... 2^25 us (33.5 s), +Inf.
 *   2. rpc.replies.STATUS is jnfs_rpc_replies_total{status="STATUS"}.
 *   3. Any other name: "jnfs_", the name with '.' (and anything outside
 *      [A-Za-z0-9_]) as '_', then for a count "_total" (a count of
 *      nanoseconds, "..._ns", becomes "..._seconds_total" in seconds); a
 *      gauge keeps its name (fs.inodes is jnfs_fs_inodes).
 * Plus jnfs_build_info{version,commit} 1. Each family is written once,
 * HELP and TYPE first, its samples together, in the order the counters
 * were first emitted; HELP names the `jnfs stat` counter it comes from.
 *
 * Scrapes never hold up the server (metrics.h): the collect callback
 * copies values into arrays sized before it runs (they grow only if a
 * server emits more than they hold), and everything else happens after it
 * returned, on the metrics thread.
 */
#include "daemon/metrics.h"

#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/msg.h"
#include "jnfs_version.h"

/* Histogram bounds written: buckets 0..METRICS_LAT_LAST (2 us .. 2^25 us). */
#define METRICS_LAT_LAST 24
#define METRICS_NAME_MAX 112

enum sample_kind { SAMPLE_COUNT, SAMPLE_GAUGE, SAMPLE_LAT };

struct sample {
	char name[METRICS_NAME_MAX];
	enum sample_kind kind;
	uint64_t value;
	unsigned lat; /* index in samples.lats for SAMPLE_LAT */
};

struct lat_copy {
	uint64_t b[STAT_LAT_BUCKETS];
	uint64_t sum_ns;
};

struct samples {
	struct sample *v;
	size_t n, cap;
	struct lat_copy *lats;
	size_t nlats, latcap;
};

struct metrics {
	struct MHD_Daemon *d;
	metrics_collect_fn collect;
	void *arg;
	uint16_t port;
};

/* ---- collecting: what runs while the server's locks may be held ---- */

static struct sample *sample_add(struct samples *s, const char *name, enum sample_kind kind)
{
	if (s->n == s->cap) {
		s->cap *= 2;
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	struct sample *e = &s->v[s->n++];
	size_t len = strlen(name);
	if (len >= sizeof(e->name))
		len = sizeof(e->name) - 1;
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	e->kind = kind;
	e->value = 0;
	return e;
}

static void collect_count(void *arg, const char *name, uint64_t value)
{
	sample_add(arg, name, SAMPLE_COUNT)->value = value;
}

static void collect_gauge(void *arg, const char *name, uint64_t value)
{
	sample_add(arg, name, SAMPLE_GAUGE)->value = value;
}

static void collect_lat(void *arg, const char *name, const struct stat_lat *l)
{
	struct samples *s = arg;
	if (s->nlats == s->latcap) {
		s->latcap *= 2;
		s->lats = xrealloc(s->lats, s->latcap * sizeof(*s->lats));
	}
	struct lat_copy *c = &s->lats[s->nlats];
	for (unsigned i = 0; i < STAT_LAT_BUCKETS; i++)
		c->b[i] = counter_get(&l->b[i]);
	c->sum_ns = counter_get(&l->sum_ns);
	sample_add(s, name, SAMPLE_LAT)->lat = (unsigned)s->nlats++;
}

/* ---- naming ---- */

struct family {
	char name[160];   /* without _bucket/_sum/_count */
	char labels[192]; /* "a=\"x\",b=\"y\"" or empty */
	const char *type; /* counter, gauge, histogram */
	char help[192];
	bool seconds;     /* a nanosecond count written in seconds */
};

/* Label values here are counter name parts: no quote, backslash or
 * newline can occur, but escape them as the format says all the same. */
static void put_label(char *out, size_t outlen, const char *key, const char *val)
{
	size_t n = strlen(out);
	if (n && n < outlen - 1)
		out[n++] = ',';
	n += (size_t)snprintf(out + n, n < outlen ? outlen - n : 0, "%s=\"", key);
	for (const char *p = val; *p && n + 3 < outlen; p++) {
		if (*p == '"' || *p == '\\' || *p == '\n') {
			out[n++] = '\\';
			out[n++] = *p == '\n' ? 'n' : *p;
		} else {
			out[n++] = *p;
		}
	}
	if (n + 1 < outlen)
		out[n++] = '"';
	out[n < outlen ? n : outlen - 1] = '\0';
}

static void sanitize(char *out, size_t outlen, const char *prefix, const char *name)
{
	size_t n = (size_t)snprintf(out, outlen, "%s", prefix);
	for (const char *p = name; *p && n + 1 < outlen; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '_';
		out[n++] = ok ? c : '_';
	}
	out[n] = '\0';
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* rpc.PROG.vVERS.PROC: the three parts, or false. */
static bool split_proc(const char *name, char *prog, char *vers, char *proc, size_t len)
{
	if (strncmp(name, "rpc.", 4))
		return false;
	const char *p = name + 4, *d1 = strchr(p, '.');
	if (!d1 || d1 == p || d1[1] != 'v')
		return false;
	const char *v = d1 + 2, *d2 = strchr(v, '.');
	if (!d2 || d2 == v || !d2[1] || strchr(d2 + 1, '.'))
		return false;
	for (const char *c = v; c < d2; c++)
		if (*c < '0' || *c > '9')
			return false;
	snprintf(prog, len, "%.*s", (int)(d1 - p), p);
	snprintf(vers, len, "%.*s", (int)(d2 - v), v);
	snprintf(proc, len, "%s", d2 + 1);
	return true;
}

static void family_of(const struct sample *s, struct family *f)
{
	char prog[40], vers[40], proc[40];
	memset(f, 0, sizeof(*f));
	f->type = s->kind == SAMPLE_LAT ? "histogram" : s->kind == SAMPLE_GAUGE ? "gauge" : "counter";
	if (s->kind != SAMPLE_GAUGE && split_proc(s->name, prog, vers, proc, sizeof(prog))) {
		put_label(f->labels, sizeof(f->labels), "program", prog);
		put_label(f->labels, sizeof(f->labels), "version", vers);
		put_label(f->labels, sizeof(f->labels), "proc", proc);
		if (s->kind == SAMPLE_LAT) {
			snprintf(f->name, sizeof(f->name), "jnfs_rpc_procedure_duration_seconds");
			snprintf(f->help, sizeof(f->help),
				 "RPC reply latency per procedure, call arrival to reply "
				 "(jnfs stat: rpc.PROG.vVERS.PROC.p50_us/.p99_us)");
		} else {
			snprintf(f->name, sizeof(f->name), "jnfs_rpc_procedure_calls_total");
			snprintf(f->help, sizeof(f->help),
				 "RPC calls per procedure (jnfs stat: rpc.PROG.vVERS.PROC)");
		}
		return;
	}
	if (s->kind == SAMPLE_COUNT && !strncmp(s->name, "rpc.replies.", 12) &&
	    !strchr(s->name + 12, '.')) {
		put_label(f->labels, sizeof(f->labels), "status", s->name + 12);
		snprintf(f->name, sizeof(f->name), "jnfs_rpc_replies_total");
		snprintf(f->help, sizeof(f->help), "RPC replies by status (jnfs stat: rpc.replies.STATUS)");
		return;
	}
	char base[METRICS_NAME_MAX + 8];
	sanitize(base, sizeof(base), "jnfs_", s->name);
	if (s->kind == SAMPLE_COUNT && ends_with(base, "_ns")) {
		base[strlen(base) - 3] = '\0';
		snprintf(f->name, sizeof(f->name), "%s_seconds_total", base);
		f->seconds = true;
		snprintf(f->help, sizeof(f->help), "jnfs stat: %s, in seconds", s->name);
	} else {
		snprintf(f->name, sizeof(f->name), "%s%s", base,
			 s->kind == SAMPLE_COUNT ? "_total" : "");
		snprintf(f->help, sizeof(f->help), "jnfs stat: %s", s->name);
	}
	if (s->kind == SAMPLE_LAT)
		snprintf(f->name, sizeof(f->name), "%s_duration_seconds", base);
}

/* ---- formatting: after collect returned, nothing held ---- */

static void write_labels(FILE *f, const char *labels, const char *extra)
{
	if (!*labels && !extra)
		return;
	fprintf(f, "{%s%s%s}", labels, *labels && extra ? "," : "", extra ? extra : "");
}

static void write_sample(FILE *f, const struct family *fam, const struct sample *s,
			 const struct samples *all)
{
	if (s->kind != SAMPLE_LAT) {
		fputs(fam->name, f);
		write_labels(f, fam->labels, NULL);
		if (fam->seconds)
			fprintf(f, " %.9f\n", (double)s->value / 1e9);
		else
			fprintf(f, " %llu\n", (unsigned long long)s->value);
		return;
	}
	/* one snapshot: the cumulative counts below and _count agree */
	const struct lat_copy *l = &all->lats[s->lat];
	uint64_t acc = 0, total = 0;
	for (unsigned i = 0; i < STAT_LAT_BUCKETS; i++)
		total += l->b[i];
	for (unsigned i = 0; i <= METRICS_LAT_LAST; i++) {
		char le[48];
		acc += l->b[i];
		snprintf(le, sizeof(le), "le=\"%.6f\"", (double)stat_lat_bound_us(i) / 1e6);
		fprintf(f, "%s_bucket", fam->name);
		write_labels(f, fam->labels, le);
		fprintf(f, " %llu\n", (unsigned long long)acc);
	}
	fprintf(f, "%s_bucket", fam->name);
	write_labels(f, fam->labels, "le=\"+Inf\"");
	fprintf(f, " %llu\n", (unsigned long long)total);
	fprintf(f, "%s_sum", fam->name);
	write_labels(f, fam->labels, NULL);
	fprintf(f, " %.9f\n", (double)l->sum_ns / 1e9);
	fprintf(f, "%s_count", fam->name);
	write_labels(f, fam->labels, NULL);
	fprintf(f, " %llu\n", (unsigned long long)total);
}

char *metrics_render(metrics_collect_fn collect, void *arg, size_t *len)
{
	struct samples s = {.cap = 512, .latcap = 128};
	s.v = xmalloc(s.cap * sizeof(*s.v));
	s.lats = xmalloc(s.latcap * sizeof(*s.lats));
	struct stat_sink sink = {
		.emit = collect_count, .gauge = collect_gauge, .lat = collect_lat, .arg = &s};
	collect(arg, &sink);

	struct family *fams = xmalloc((s.n ? s.n : 1) * sizeof(*fams));
	bool *done = xcalloc(s.n ? s.n : 1, sizeof(*done));
	for (size_t i = 0; i < s.n; i++)
		family_of(&s.v[i], &fams[i]);

	char *text = NULL;
	FILE *f = open_memstream(&text, len);
	if (!f)
		panic("open_memstream: out of memory");
	fprintf(f, "# HELP jnfs_build_info the jnfsd version and the commit it was built from\n"
		   "# TYPE jnfs_build_info gauge\n"
		   "jnfs_build_info{version=\"%s\",commit=\"%s\"} 1\n",
		JNFS_VERSION, JNFS_COMMIT);
	for (size_t i = 0; i < s.n; i++) {
		if (done[i] || !strcmp(s.v[i].name, "stats.end"))
			continue;
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fams[i].name, fams[i].help, fams[i].name,
			fams[i].type);
		for (size_t j = i; j < s.n; j++) {
			if (done[j] || strcmp(fams[j].name, fams[i].name))
				continue;
			/* a name emitted twice is written once */
			bool dup = false;
			for (size_t k = i; k < j && !dup; k++)
				dup = done[k] && !strcmp(fams[k].name, fams[j].name) &&
				      !strcmp(fams[k].labels, fams[j].labels);
			done[j] = true;
			if (!dup)
				write_sample(f, &fams[j], &s.v[j], &s);
		}
	}
	fclose(f);
	free(done);
	free(fams);
	free(s.lats);
	free(s.v);
	return text;
}

/* ---- HTTP ---- */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
			     char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct metrics *m = cls;
	static const char text[] = "text/plain; charset=utf-8";
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, text, "GET or HEAD only\n", 17,
			     MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics"))
		return reply(c, MHD_HTTP_NOT_FOUND, text, "not found: the metrics are at /metrics\n",
			     39, MHD_RESPMEM_PERSISTENT);
	size_t len;
	char *body = metrics_render(m->collect, m->arg, &len);
	return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len,
		     MHD_RESPMEM_MUST_FREE);
}

int metrics_start(const struct sockaddr_storage *addr, metrics_collect_fn collect, void *arg,
		  struct metrics **out, char *why, size_t whylen)
{
	struct metrics *m = xcalloc(1, sizeof(*m));
	m->collect = collect;
	m->arg = arg;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
	if (addr->ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* a few scrapers at once, none allowed to hang on: a connection that
	 * sends nothing for 10 s is closed */
	m->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, m, MHD_OPTION_SOCK_ADDR, addr,
				MHD_OPTION_CONNECTION_LIMIT, 16u, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
				MHD_OPTION_END);
	if (!m->d) {
		int err = errno ? errno : EADDRNOTAVAIL;
		snprintf(why, whylen, "cannot serve metrics: %s", strerror(err));
		free(m);
		return -err;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT);
	m->port = info ? info->port : 0;
	*out = m;
	return 0;
}

uint16_t metrics_port(const struct metrics *m)
{
	return m->port;
}

void metrics_stop(struct metrics *m)
{
	if (!m)
		return;
	MHD_stop_daemon(m->d);
	free(m);
}
