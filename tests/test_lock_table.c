/*
 * test_lock_table.c - the one list of lock classes (src/base/lock_classes.h)
 * and what is written about it agree.
 *
 *   test-lock-table SRCDIR     check (exit 1 naming every disagreement)
 *   test-lock-table --print    the table docs/locking.md holds, as text
 *
 * Checks:
 *   1. docs/locking.md holds, between its lock-table markers, exactly the
 *      text --print writes (the bands and every class);
 *   2. every rank lies in a band, and names are unique;
 *   3. the file a class names as its documentation mentions it, and lists
 *      the classes it documents in rank order (by first mention);
 *   4. wherever a class name is written in src/ or docs/ with a rank next
 *      to it ("410 svc.conns", "svc.timers (rank 460)", "(fs.eofblocks,
 *      105)"), that rank is the table's;
 *   5. src/ defines classes only from the table: no LOCK_CLASS_INIT outside
 *      base/lock.h, every row used by LOCK_CLASS(ID), or by
 *      LOCK_CLASS_ORDERED(ID, ...) when its kind is ORDERED.
 */
#include <ctype.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lock_classes.h"

#define BEGIN_MARK "<!-- lock-table begin"
#define END_MARK   "<!-- lock-table end -->"

static const char *const type_names[] = {"mutex", "rwlock"};
static const char *const kind_names[] = {"one", "multi", "ordered", "unordered"};
static const char *const id_names[LOCK_CLASS_COUNT] = {
#define LOCK_X_IDNAME(id, name, rank, type, kind, file, what) [LOCK_##id] = #id,
	LOCK_CLASSES(LOCK_X_IDNAME)
#undef LOCK_X_IDNAME
};

static int problems;

static void problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void problem(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("test-lock-table: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	problems++;
}

/* ---- the text ---- */

static int by_rank(const void *a, const void *b)
{
	const struct lock_class_row *x = *(const struct lock_class_row *const *)a;
	const struct lock_class_row *y = *(const struct lock_class_row *const *)b;
	unsigned rx = x->kind == LOCK_KIND_UNORDERED ? ~0u : x->rank;
	unsigned ry = y->kind == LOCK_KIND_UNORDERED ? ~0u : y->rank;
	if (rx != ry)
		return rx < ry ? -1 : 1;
	return x < y ? -1 : x > y;
}

static char *table_text(void)
{
	char *buf;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	fprintf(f, "%s: written by `build/tests/test-lock-table --print` from "
		   "src/base/lock_classes.h -->\n",
		BEGIN_MARK);
	fprintf(f, "| ranks | band |\n|---|---|\n");
	for (unsigned i = 0; i < lock_band_count; i++)
		fprintf(f, "| %u-%u | %s |\n", lock_bands[i].lo, lock_bands[i].hi, lock_bands[i].what);
	const struct lock_class_row *rows[LOCK_CLASS_COUNT];
	for (unsigned i = 0; i < LOCK_CLASS_COUNT; i++)
		rows[i] = &lock_class_rows[i];
	qsort(rows, LOCK_CLASS_COUNT, sizeof(rows[0]), by_rank);
	fprintf(f, "\n| rank | class | type | kind | guards | documented in |\n"
		   "|---:|---|---|---|---|---|\n");
	for (unsigned i = 0; i < LOCK_CLASS_COUNT; i++) {
		const struct lock_class_row *r = rows[i];
		if (r->kind == LOCK_KIND_UNORDERED)
			fprintf(f, "| - ");
		else
			fprintf(f, "| %u ", r->rank);
		fprintf(f, "| `%s` | %s | %s | %s | `%s` |\n", r->name, type_names[r->type],
			kind_names[r->kind], r->what, r->file);
	}
	fprintf(f, "%s\n", END_MARK);
	fclose(f);
	return buf;
}

/* ---- files ---- */

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t cap = 0, len = 0;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
		}
		size_t n = fread(buf + len, 1, cap - len - 1, f);
		if (!n)
			break;
		len += n;
	}
	fclose(f);
	buf[len] = 0;
	return buf;
}

static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.';
}

/* The next whole-token occurrence of name in s at or after from. */
static const char *find_token(const char *s, const char *from, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = strstr(from, name); p; p = strstr(p + 1, name)) {
		if (p > s && name_char(p[-1]))
			continue;
		char c = p[n];
		if (isalnum((unsigned char)c) || c == '_')
			continue;
		if (c == '.' && (isalnum((unsigned char)p[n + 1]) || p[n + 1] == '_'))
			continue;
		return p;
	}
	return NULL;
}

/* A rank written next to the name at p (before: "410 svc.conns"; after:
 * "svc.timers (rank 460)", "\"nfs4.tally\" (580)", "(fs.eofblocks, 105)"),
 * or -1. */
static long rank_near(const char *s, const char *p, size_t n)
{
	const char *q = p;
	while (q > s && (q[-1] == '"' || q[-1] == '`' || q[-1] == '\''))
		q--;
	const char *e = q;
	while (q > s && q[-1] == ' ')
		q--;
	if (q < e && q > s && isdigit((unsigned char)q[-1])) {
		const char *d = q;
		while (d > s && isdigit((unsigned char)d[-1]))
			d--;
		if (d == s || !(isalnum((unsigned char)d[-1]) || d[-1] == '_' || d[-1] == '-'))
			return strtol(d, NULL, 10);
	}
	q = p + n;
	while (*q == '"' || *q == '`' || *q == '\'')
		q++;
	if (*q == ',')
		q++;
	while (*q == ' ')
		q++;
	if (*q == '(')
		q++;
	if (!strncmp(q, "rank ", 5))
		q += 5;
	if (isdigit((unsigned char)*q) && q > p + n)
		return strtol(q, NULL, 10);
	return -1;
}

static const char *srcdir;

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type != FTW_F)
		return 0;
	size_t l = strlen(path);
	bool code = l > 2 && (!strcmp(path + l - 2, ".c") || !strcmp(path + l - 2, ".h"));
	bool doc = l > 3 && !strcmp(path + l - 3, ".md");
	if (!code && !doc)
		return 0;
	const char *rel = path + strlen(srcdir) + 1;
	char *s = read_file(path);
	if (!s)
		return 0;
	/* 4: ranks written next to names */
	for (unsigned i = 0; i < LOCK_CLASS_COUNT; i++) {
		const struct lock_class_row *r = &lock_class_rows[i];
		for (const char *p = find_token(s, s, r->name); p; p = find_token(s, p + 1, r->name)) {
			long rank = rank_near(s, p, strlen(r->name));
			if (rank >= 0 && (unsigned long)rank != r->rank) {
				int line = 1;
				for (const char *c = s; c < p; c++)
					line += *c == '\n';
				problem("%s:%d: %s is written with rank %ld; its rank is %u", rel, line,
					r->name, rank, r->rank);
			}
		}
	}
	/* 5: classes from the table only */
	if (code && !strncmp(rel, "src/", 4)) {
		if (strcmp(rel, "src/base/lock.h") && strstr(s, "LOCK_CLASS_INIT"))
			problem("%s: defines a lock class outside src/base/lock_classes.h "
				"(LOCK_CLASS_INIT)",
				rel);
		for (unsigned i = 0; i < LOCK_CLASS_COUNT; i++) {
			char one[64], ordered[64];
			snprintf(one, sizeof(one), "LOCK_CLASS(%s)", id_names[i]);
			snprintf(ordered, sizeof(ordered), "LOCK_CLASS_ORDERED(%s,", id_names[i]);
			bool is_ordered = lock_class_rows[i].kind == LOCK_KIND_ORDERED;
			if (strstr(s, is_ordered ? one : ordered))
				problem("%s: %s is of kind %s: use %s", rel, id_names[i],
					kind_names[lock_class_rows[i].kind],
					is_ordered ? "LOCK_CLASS_ORDERED(ID, fn)" : "LOCK_CLASS(ID)");
		}
	}
	free(s);
	return 0;
}

/* 5: every row used somewhere in src/ (counted by a second walk) */
static unsigned rows_used[LOCK_CLASS_COUNT];

static int visit_uses(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	size_t l = strlen(path);
	if (type != FTW_F || l < 2 || path[l - 2] != '.' || path[l - 1] != 'c')
		return 0;
	char *s = read_file(path);
	if (!s)
		return 0;
	for (unsigned i = 0; i < LOCK_CLASS_COUNT; i++) {
		char one[64], ordered[64];
		snprintf(one, sizeof(one), "LOCK_CLASS(%s)", id_names[i]);
		snprintf(ordered, sizeof(ordered), "LOCK_CLASS_ORDERED(%s,", id_names[i]);
		if (strstr(s, one) || strstr(s, ordered))
			rows_used[i]++;
	}
	free(s);
	return 0;
}

int main(int argc, char **argv)
{
	char *text = table_text();
	if (argc == 2 && !strcmp(argv[1], "--print")) {
		fputs(text, stdout);
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: test-lock-table SRCDIR | --print\n");
		return 2;
	}
	srcdir = argv[1];
	char path[4096];

	/* 1 */
	snprintf(path, sizeof(path), "%s/docs/locking.md", srcdir);
	char *doc = read_file(path);
	if (!doc) {
		problem("cannot read %s", path);
	} else {
		char *b = strstr(doc, BEGIN_MARK), *e = b ? strstr(b, END_MARK) : NULL;
		if (!b || !e) {
			problem("docs/locking.md: no lock-table markers");
		} else {
			e += strlen(END_MARK) + 1;
			size_t n = (size_t)(e - b);
			if (n != strlen(text) || memcmp(b, text, n))
				problem("docs/locking.md: the lock table differs from "
					"src/base/lock_classes.h; replace it with the output of "
					"`build/tests/test-lock-table --print`");
		}
		free(doc);
	}

	/* 2 */
	for (unsigned i = 0; i < LOCK_CLASS_COUNT; i++) {
		const struct lock_class_row *r = &lock_class_rows[i];
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(lock_class_rows[j].name, r->name))
				problem("%s: two rows of that name", r->name);
		if (r->kind == LOCK_KIND_UNORDERED)
			continue;
		bool in = false;
		for (unsigned b = 0; b < lock_band_count; b++)
			in |= r->rank >= lock_bands[b].lo && r->rank <= lock_bands[b].hi;
		if (!in)
			problem("%s: rank %u is in no band", r->name, r->rank);
	}

	/* 3 */
	for (unsigned i = 0; i < LOCK_CLASS_COUNT; i++) {
		const struct lock_class_row *r = &lock_class_rows[i];
		snprintf(path, sizeof(path), "%s/%s", srcdir, r->file);
		char *s = read_file(path);
		if (!s) {
			problem("%s: documented in %s, which cannot be read", r->name, r->file);
			continue;
		}
		const char *p = find_token(s, s, r->name);
		if (!p)
			problem("%s: documented in %s, which does not mention it", r->name, r->file);
		for (unsigned j = 0; p && j < LOCK_CLASS_COUNT; j++) {
			const struct lock_class_row *o = &lock_class_rows[j];
			if (o == r || strcmp(o->file, r->file) || o->kind == LOCK_KIND_UNORDERED ||
			    r->kind == LOCK_KIND_UNORDERED || o->rank >= r->rank)
				continue;
			const char *q = find_token(s, s, o->name);
			if (q && q > p)
				problem("%s: lists %s (rank %u) before %s (rank %u)", r->file, r->name,
					r->rank, o->name, o->rank);
		}
		free(s);
	}

	/* 4, 5 */
	snprintf(path, sizeof(path), "%s/src", srcdir);
	nftw(path, visit, 16, FTW_PHYS);
	snprintf(path, sizeof(path), "%s/docs", srcdir);
	nftw(path, visit, 16, FTW_PHYS);
	snprintf(path, sizeof(path), "%s/src", srcdir);
	nftw(path, visit_uses, 16, FTW_PHYS);
	for (unsigned i = 0; i < LOCK_CLASS_COUNT; i++)
		if (!rows_used[i])
			problem("%s: no source file defines it (LOCK_CLASS(%s))",
				lock_class_rows[i].name, id_names[i]);

	free(text);
	if (problems) {
		fprintf(stderr, "test-lock-table: %d problems\n", problems);
		return 1;
	}
	printf("ok lock table: %u classes in %u bands; docs/locking.md, the documenting files "
	       "and src/ agree with it\n",
	       (unsigned)LOCK_CLASS_COUNT, lock_band_count);
	return 0;
}
