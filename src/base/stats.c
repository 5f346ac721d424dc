#include "base/stats.h"

#include <stdio.h>
#include <string.h>

void stat_emitf(const struct stat_sink *s, const char *prefix, const char *name, uint64_t value)
{
	char full[128];
	snprintf(full, sizeof(full), "%s.%s", prefix, name);
	stat_emit(s, full, value);
}

void stat_gaugef(const struct stat_sink *s, const char *prefix, const char *name, uint64_t value)
{
	char full[128];
	snprintf(full, sizeof(full), "%s.%s", prefix, name);
	stat_gauge(s, full, value);
}

uint64_t stat_lat_quantile(const struct stat_lat *l, double q)
{
	uint64_t total = 0, acc = 0, b[STAT_LAT_BUCKETS];
	for (unsigned i = 0; i < STAT_LAT_BUCKETS; i++)
		total += b[i] = counter_get(&l->b[i]);
	if (!total)
		return 0;
	for (unsigned i = 0; i < STAT_LAT_BUCKETS; i++) {
		acc += b[i];
		if ((double)acc >= q * (double)total)
			return stat_lat_bound_us(i);
	}
	return stat_lat_bound_us(STAT_LAT_BUCKETS - 1);
}

void stat_emit_lat(const struct stat_sink *s, const char *name, const struct stat_lat *l)
{
	if (s->lat) {
		s->lat(s->arg, name, l);
		return;
	}
	uint64_t p50 = stat_lat_quantile(l, 0.5);
	if (!p50)
		return;
	char full[128];
	snprintf(full, sizeof(full), "%s.p50_us", name);
	stat_emit(s, full, p50);
	snprintf(full, sizeof(full), "%s.p99_us", name);
	stat_emit(s, full, stat_lat_quantile(l, 0.99));
}

static void emit_file(void *arg, const char *name, uint64_t value)
{
	fprintf((FILE *)arg, "%s %llu\n", name, (unsigned long long)value);
}

struct stat_sink stat_sink_file(FILE *f)
{
	return (struct stat_sink){.emit = emit_file, .arg = f};
}

static void emit_table(void *arg, const char *name, uint64_t value)
{
	struct stat_table *t = arg;
	for (int i = 0; i < t->n; i++) {
		if (strcmp(t->e[i].name, name) == 0) {
			t->e[i].value = value;
			return;
		}
	}
	if (t->n == (int)(sizeof(t->e) / sizeof(t->e[0])))
		return;
	snprintf(t->e[t->n].name, sizeof(t->e[t->n].name), "%s", name);
	t->e[t->n].value = value;
	t->n++;
}

struct stat_sink stat_sink_table(struct stat_table *t)
{
	t->n = 0;
	return (struct stat_sink){.emit = emit_table, .arg = t};
}

uint64_t stat_table_get(const struct stat_table *t, const char *name)
{
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->e[i].name, name) == 0)
			return t->e[i].value;
	return 0;
}
