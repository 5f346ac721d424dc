/*
 * test_nfs4_brlock.c - the NFSv4 byte-range lock table (src/nfs4/state/brlock.h).
 *
 * Fixed cases first: arguments (zero length, offset + length past 2^64 - 1,
 * to-EOF ranges), every POSIX case of merge, split, upgrade, downgrade and
 * unlock in the middle, conflicts across owners and clients with the exact
 * conflicting range, LOCKT, release by file owner, owner, client (lease
 * expiry), and the bounds with nothing changed by a refused request
 * (brlock.h invariant 4). Then a model test: random operations by six owners
 * of three clients on three files, each checked after it ran against a
 * reference kept here as a per-cell map of owners (cells are bytes 0..N-1
 * and the tail [N, 2^64 - 1]): results, the exact conflicting lock, the
 * canonical lock list of every file (invariant 2), counts, and brl_check().
 * Then threads (also under TSan): mutual exclusion of WRITE locks checked
 * with an atomic, while a reaper releases clients under the workers' feet.
 * Last, 10,000 locks of 100 clients released client by client: every
 * counter back to zero, the heap back where it was (and ASan's leak check).
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>

#include "base/rand.h"
#include "check.h"
#include "nfs4/state/brlock.h"

#define MAXU UINT64_MAX

static const struct brl_owner A = {.client = 1, .owner = 1};
static const struct brl_owner B = {.client = 1, .owner = 2};
static const struct brl_owner C = {.client = 2, .owner = 1}; /* same key as A, other client */
static const struct brl_owner D = {.client = 3, .owner = 9};

static struct brl_table *table(size_t max_locks, size_t per_client, unsigned buckets)
{
	struct brl_config cfg;
	brl_config_default(&cfg);
	if (max_locks)
		cfg.max_locks = max_locks;
	if (per_client)
		cfg.max_locks_per_client = per_client;
	if (buckets)
		cfg.buckets = buckets;
	return brl_create(&cfg);
}

static char owner_name(const struct brl_owner *o)
{
	const struct brl_owner *all[] = {&A, &B, &C, &D};
	for (int i = 0; i < 4; i++)
		if (all[i]->client == o->client && all[i]->owner == o->owner)
			return (char)('A' + i);
	return '?';
}

/* Offset order; locks of one start (of different owners) by owner. */
static int info_cmp(const void *a, const void *b)
{
	const struct brl_info *x = a, *y = b;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return owner_name(&x->owner) - owner_name(&y->owner);
}

/* The file's locks as "A:W0-39 B:R40-E" (E: to the end of file). */
static void dump(struct brl_table *t, uint64_t file, char *buf, size_t len)
{
	struct brl_info l[64];
	size_t n = brl_list(t, file, l, 64);
	CHECK(n <= 64);
	for (size_t i = 1; i < n; i++)
		CHECK(l[i - 1].offset <= l[i].offset); /* invariant 1 */
	qsort(l, n, sizeof(l[0]), info_cmp);
	size_t off = 0;
	buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		char last[32];
		if (l[i].length == BRL_EOF)
			snprintf(last, sizeof(last), "E");
		else
			snprintf(last, sizeof(last), "%llu",
				 (unsigned long long)(l[i].offset + l[i].length - 1));
		off += (size_t)snprintf(buf + off, len - off, "%s%c:%c%llu-%s", i ? " " : "",
					owner_name(&l[i].owner), l[i].type == BRL_WRITE ? 'W' : 'R',
					(unsigned long long)l[i].offset, last);
		CHECK(off < len);
	}
}

#define EXPECT_LOCKS(t, file, want)                                                                \
	do {                                                                                       \
		char _got[2048];                                                                   \
		dump(t, file, _got, sizeof(_got));                                                 \
		if (strcmp(_got, want) != 0) {                                                     \
			fprintf(stderr, "%s:%d: locks \"%s\", want \"%s\"\n", __FILE__, __LINE__,  \
				_got, want);                                                       \
			exit(1);                                                                   \
		}                                                                                  \
		CHECK_OK(brl_check(t));                                                            \
	} while (0)

/* lock / unlock with an inclusive last byte (MAXU: to the end of file) */
static int lk(struct brl_table *t, uint64_t f, const struct brl_owner *o, enum brl_type type,
	      uint64_t s, uint64_t e, struct brl_info *denied)
{
	struct brl_info dummy;
	return brl_lock(t, f, o, type, s, e == MAXU ? BRL_EOF : e - s + 1,
			denied ? denied : &dummy);
}

static int un(struct brl_table *t, uint64_t f, const struct brl_owner *o, uint64_t s, uint64_t e)
{
	return brl_unlock(t, f, o, s, e == MAXU ? BRL_EOF : e - s + 1);
}

static void test_args(void)
{
	struct brl_table *t = table(0, 0, 0);
	struct brl_info d;
	CHECK_EQ(brl_lock(t, 1, &A, BRL_WRITE, 0, 0, &d), -EINVAL);
	CHECK_EQ(brl_lock(t, 1, &A, BRL_WRITE, 10, MAXU - 9, &d), -EINVAL); /* ends at 2^64 */
	CHECK_EQ(brl_lock(t, 1, &A, BRL_WRITE, MAXU, 1, &d), -EINVAL);
	CHECK_EQ(brl_lock(t, 1, &A, 0, 0, 1, &d), -EINVAL);
	CHECK_EQ(brl_lock(t, 1, &A, 3, 0, 1, &d), -EINVAL);
	CHECK_EQ(brl_test(t, 1, &A, BRL_READ, 0, 0, &d), -EINVAL);
	CHECK_EQ(brl_test(t, 1, &A, BRL_READ, 5, MAXU - 4, &d), -EINVAL);
	CHECK_EQ(brl_unlock(t, 1, &A, 0, 0), -EINVAL);
	CHECK_EQ(brl_unlock(t, 1, &A, 2, MAXU - 1), -EINVAL);
	EXPECT_LOCKS(t, 1, "");
	/* the largest finite range ends at byte 2^64 - 2 */
	CHECK_OK(brl_lock(t, 1, &A, BRL_WRITE, 10, MAXU - 10, &d));
	EXPECT_LOCKS(t, 1, "A:W10-18446744073709551614");
	/* the last byte can only be reached by a to-EOF range, which touches it */
	CHECK_OK(brl_lock(t, 1, &A, BRL_WRITE, MAXU, BRL_EOF, &d));
	EXPECT_LOCKS(t, 1, "A:W10-E");
	CHECK_OK(brl_unlock(t, 1, &A, MAXU, BRL_EOF));
	EXPECT_LOCKS(t, 1, "A:W10-18446744073709551614");
	CHECK_OK(brl_unlock(t, 1, &A, 0, BRL_EOF));
	EXPECT_LOCKS(t, 1, "");
	/* offset + length == 2^64 - 1 exactly, from 0: a length of all ones
	 * is EOF, so 0..2^64-2 is only reachable by unlocking the last byte */
	CHECK_OK(brl_lock(t, 1, &A, BRL_READ, 0, BRL_EOF, &d));
	CHECK_OK(brl_unlock(t, 1, &A, MAXU, BRL_EOF));
	struct brl_info l[2];
	CHECK_EQ(brl_list(t, 1, l, 2), 1);
	CHECK_EQ(l[0].offset, 0);
	CHECK(l[0].length == BRL_EOF); /* reads as to-EOF (brlock.h) */
	CHECK_EQ(brl_test(t, 1, &B, BRL_WRITE, MAXU, BRL_EOF, &d), 0);
	CHECK_EQ(brl_test(t, 1, &B, BRL_WRITE, MAXU - 1, 1, &d), -EAGAIN);
	CHECK_EQ(brl_release_client(t, 1), 1);
	brl_destroy(t);
	TEST_PASS("brlock arguments and to-EOF ranges");
}

static void test_posix(void)
{
	struct brl_table *t = table(0, 0, 0);
	uint64_t f = 7;

	/* adjacent and overlapping locks of one type merge */
	CHECK_OK(lk(t, f, &A, BRL_WRITE, 0, 99, NULL));
	CHECK_OK(lk(t, f, &A, BRL_WRITE, 100, 199, NULL));
	EXPECT_LOCKS(t, f, "A:W0-199");
	CHECK_OK(lk(t, f, &A, BRL_WRITE, 150, 249, NULL));
	EXPECT_LOCKS(t, f, "A:W0-249");
	CHECK_OK(lk(t, f, &A, BRL_WRITE, 10, 20, NULL)); /* inside: nothing new */
	EXPECT_LOCKS(t, f, "A:W0-249");
	CHECK_OK(un(t, f, &A, 0, MAXU));
	EXPECT_LOCKS(t, f, "");

	/* a lock filling the gap merges three into one */
	CHECK_OK(lk(t, f, &A, BRL_READ, 0, 9, NULL));
	CHECK_OK(lk(t, f, &A, BRL_READ, 20, 29, NULL));
	EXPECT_LOCKS(t, f, "A:R0-9 A:R20-29");
	CHECK_OK(lk(t, f, &A, BRL_READ, 10, 19, NULL));
	EXPECT_LOCKS(t, f, "A:R0-29");
	/* a gap of one byte is not adjacent */
	CHECK_OK(lk(t, f, &A, BRL_READ, 31, 40, NULL));
	EXPECT_LOCKS(t, f, "A:R0-29 A:R31-40");
	CHECK_OK(un(t, f, &A, 0, MAXU));

	/* downgrade in the middle splits in three; upgrade back merges */
	CHECK_OK(lk(t, f, &A, BRL_WRITE, 0, 99, NULL));
	CHECK_OK(lk(t, f, &A, BRL_READ, 40, 59, NULL));
	EXPECT_LOCKS(t, f, "A:W0-39 A:R40-59 A:W60-99");
	CHECK_OK(lk(t, f, &A, BRL_WRITE, 40, 59, NULL));
	EXPECT_LOCKS(t, f, "A:W0-99");
	/* downgrade at either end: trimmed, not split */
	CHECK_OK(lk(t, f, &A, BRL_READ, 0, 9, NULL));
	CHECK_OK(lk(t, f, &A, BRL_READ, 90, 120, NULL));
	EXPECT_LOCKS(t, f, "A:R0-9 A:W10-89 A:R90-120");
	/* locks of different types that touch stay apart */
	CHECK_OK(lk(t, f, &A, BRL_WRITE, 121, 130, NULL));
	EXPECT_LOCKS(t, f, "A:R0-9 A:W10-89 A:R90-120 A:W121-130");
	/* one lock over several of both types: one record */
	CHECK_OK(lk(t, f, &A, BRL_READ, 5, 125, NULL));
	EXPECT_LOCKS(t, f, "A:R0-125 A:W126-130");
	CHECK_OK(lk(t, f, &A, BRL_WRITE, 0, 200, NULL));
	EXPECT_LOCKS(t, f, "A:W0-200");

	/* unlock in the middle splits; at the ends it trims; unlocking nothing is fine */
	CHECK_OK(un(t, f, &A, 40, 59));
	EXPECT_LOCKS(t, f, "A:W0-39 A:W60-200");
	CHECK_OK(un(t, f, &A, 40, 59));
	CHECK_OK(un(t, f, &A, 1000, 2000));
	CHECK_OK(un(t, f, &B, 0, MAXU)); /* B has nothing here */
	EXPECT_LOCKS(t, f, "A:W0-39 A:W60-200");
	CHECK_OK(un(t, f, &A, 0, 4));
	CHECK_OK(un(t, f, &A, 190, 300));
	EXPECT_LOCKS(t, f, "A:W5-39 A:W60-189");
	/* one unlock over several locks of both types */
	CHECK_OK(lk(t, f, &A, BRL_READ, 100, 120, NULL));
	EXPECT_LOCKS(t, f, "A:W5-39 A:W60-99 A:R100-120 A:W121-189");
	CHECK_OK(un(t, f, &A, 30, 150));
	EXPECT_LOCKS(t, f, "A:W5-29 A:W151-189");
	CHECK_OK(un(t, f, &A, 0, MAXU));
	EXPECT_LOCKS(t, f, "");

	/* to the end of file */
	CHECK_OK(lk(t, f, &A, BRL_READ, 50, MAXU, NULL));
	CHECK_OK(lk(t, f, &A, BRL_WRITE, 0, 60, NULL));
	EXPECT_LOCKS(t, f, "A:W0-60 A:R61-E");
	CHECK_OK(un(t, f, &A, 1000, MAXU));
	EXPECT_LOCKS(t, f, "A:W0-60 A:R61-999");
	CHECK_OK(lk(t, f, &A, BRL_READ, 1000, MAXU, NULL));
	EXPECT_LOCKS(t, f, "A:W0-60 A:R61-E");
	CHECK_OK(lk(t, f, &A, BRL_WRITE, 500, 600, NULL)); /* split of a to-EOF lock */
	EXPECT_LOCKS(t, f, "A:W0-60 A:R61-499 A:W500-600 A:R601-E");
	CHECK_OK(lk(t, f, &A, BRL_WRITE, 0, MAXU, NULL));
	EXPECT_LOCKS(t, f, "A:W0-E");
	CHECK_OK(un(t, f, &A, 10, 19));
	EXPECT_LOCKS(t, f, "A:W0-9 A:W20-E");

	/* owners are separate even inside one client, and the same owner key
	 * in another client is another owner */
	CHECK_OK(un(t, f, &A, 0, MAXU));
	CHECK_OK(lk(t, f, &A, BRL_READ, 0, 9, NULL));
	CHECK_OK(lk(t, f, &B, BRL_READ, 10, 19, NULL));
	CHECK_OK(lk(t, f, &C, BRL_READ, 20, 29, NULL));
	EXPECT_LOCKS(t, f, "A:R0-9 B:R10-19 C:R20-29");
	CHECK_OK(lk(t, f, &A, BRL_READ, 5, 25, NULL)); /* shared: A spans the others */
	EXPECT_LOCKS(t, f, "A:R0-25 B:R10-19 C:R20-29");
	CHECK_OK(un(t, f, &A, 0, MAXU));
	EXPECT_LOCKS(t, f, "B:R10-19 C:R20-29");
	CHECK_EQ(brl_release_client(t, 1) + brl_release_client(t, 2), 2);
	EXPECT_LOCKS(t, f, "");
	struct brl_counts c;
	brl_counts(t, &c);
	CHECK_EQ(c.locks + c.files + c.holders + c.clients, 0);
	brl_destroy(t);
	TEST_PASS("brlock POSIX split, merge, upgrade, downgrade, unlock");
}

static void check_denied(const struct brl_info *d, const struct brl_owner *o, enum brl_type type,
			 uint64_t offset, uint64_t length)
{
	CHECK(d->owner.client == o->client && d->owner.owner == o->owner);
	CHECK_EQ(d->type, type);
	CHECK(d->offset == offset);
	CHECK(d->length == length);
}

static void test_conflicts(void)
{
	struct brl_table *t = table(0, 0, 0);
	uint64_t f = 3;
	struct brl_info d;
	struct brl_counts c0, c1;

	CHECK_OK(lk(t, f, &A, BRL_READ, 0, 99, NULL));
	CHECK_OK(lk(t, f, &B, BRL_READ, 50, 149, NULL)); /* read locks share */
	/* same client, other owner: a conflict like any other */
	CHECK_EQ(lk(t, f, &B, BRL_WRITE, 90, 95, &d), -EAGAIN);
	check_denied(&d, &A, BRL_READ, 0, 100);
	/* other client: the first conflicting lock in offset order */
	CHECK_EQ(lk(t, f, &C, BRL_WRITE, 90, 95, &d), -EAGAIN);
	check_denied(&d, &A, BRL_READ, 0, 100);
	CHECK_EQ(lk(t, f, &C, BRL_WRITE, 100, 120, &d), -EAGAIN);
	check_denied(&d, &B, BRL_READ, 50, 100);
	CHECK_OK(lk(t, f, &C, BRL_WRITE, 150, 160, &d));	 /* just past B */
	CHECK_EQ(lk(t, f, &A, BRL_READ, 160, 170, &d), -EAGAIN); /* read vs write */
	check_denied(&d, &C, BRL_WRITE, 150, 11);
	CHECK_OK(lk(t, f, &C, BRL_READ, 150, 160, &d)); /* C downgrades */
	CHECK_OK(lk(t, f, &A, BRL_READ, 160, 170, &d));
	EXPECT_LOCKS(t, f, "A:R0-99 B:R50-149 C:R150-160 A:R160-170");

	/* a conflicting upgrade changes nothing */
	brl_counts(t, &c0);
	CHECK_EQ(lk(t, f, &A, BRL_WRITE, 0, 200, &d), -EAGAIN);
	check_denied(&d, &B, BRL_READ, 50, 100);
	CHECK_EQ(lk(t, f, &A, BRL_WRITE, 40, 60, &d), -EAGAIN);
	check_denied(&d, &B, BRL_READ, 50, 100);
	EXPECT_LOCKS(t, f, "A:R0-99 B:R50-149 C:R150-160 A:R160-170");
	brl_counts(t, &c1);
	CHECK_EQ(c1.locks, c0.locks);
	CHECK_EQ(c1.denied, c0.denied + 2);
	CHECK_EQ(c1.granted, c0.granted);
	/* an upgrade where nobody else holds: granted, and merged */
	CHECK_OK(lk(t, f, &A, BRL_WRITE, 0, 49, &d));
	EXPECT_LOCKS(t, f, "A:W0-49 A:R50-99 B:R50-149 C:R150-160 A:R160-170");

	/* LOCKT changes nothing; an owner never conflicts with itself */
	CHECK_EQ(brl_test(t, f, &D, BRL_READ, 10, 10, &d), -EAGAIN);
	check_denied(&d, &A, BRL_WRITE, 0, 50);
	CHECK_OK(brl_test(t, f, &D, BRL_READ, 50, 1000, &d));
	CHECK_EQ(brl_test(t, f, &D, BRL_WRITE, 155, BRL_EOF, &d), -EAGAIN);
	check_denied(&d, &C, BRL_READ, 150, 11);
	CHECK_OK(brl_test(t, f, &A, BRL_WRITE, 0, 49, &d));
	CHECK_OK(brl_test(t, f, &D, BRL_WRITE, 171, BRL_EOF, &d));
	CHECK_OK(brl_test(t, 99, &D, BRL_WRITE, 0, BRL_EOF, &d)); /* no such file */
	brl_counts(t, &c0);
	CHECK_EQ(c0.locks, c1.locks + 1);
	EXPECT_LOCKS(t, f, "A:W0-49 A:R50-99 B:R50-149 C:R150-160 A:R160-170");

	/* a to-EOF lock is reported with a length of all ones */
	CHECK_OK(lk(t, 4, &D, BRL_WRITE, 1000, MAXU, NULL));
	CHECK_EQ(lk(t, 4, &A, BRL_READ, 5000, 5000, &d), -EAGAIN);
	check_denied(&d, &D, BRL_WRITE, 1000, BRL_EOF);
	CHECK_EQ(lk(t, 4, &A, BRL_READ, MAXU, MAXU, &d), -EAGAIN);
	CHECK_OK(lk(t, 4, &A, BRL_READ, 0, 999, &d));

	/* holds */
	CHECK(brl_holds_file(t, f, &A) && brl_holds_file(t, 4, &A));
	CHECK(!brl_holds_file(t, 4, &B) && !brl_holds_file(t, 5, &A));
	CHECK(brl_holds_any(t, &B) && brl_holds_any(t, &D));
	struct brl_owner e = {.client = 1, .owner = 3};
	CHECK(!brl_holds_any(t, &e));
	CHECK_OK(un(t, f, &B, 0, MAXU));
	CHECK(!brl_holds_any(t, &B) && brl_holds_any(t, &A));
	brl_destroy(t); /* with locks still held: ASan checks nothing leaks */
	TEST_PASS("brlock conflicts across owners and clients, LOCKT");
}

static void test_release(void)
{
	struct brl_table *t = table(0, 0, 0);
	struct brl_info d;
	for (uint64_t f = 1; f <= 3; f++) {
		CHECK_OK(lk(t, f, &A, BRL_WRITE, 0, 9, NULL));
		CHECK_OK(lk(t, f, &A, BRL_READ, 20, 29, NULL));
		CHECK_OK(lk(t, f, &B, BRL_READ, 20, 39, NULL));
		CHECK_OK(lk(t, f, &C, BRL_WRITE, 100, MAXU, NULL));
	}
	CHECK_EQ(brl_client_locks(t, 1), 9);
	CHECK_EQ(brl_client_locks(t, 2), 3);
	/* D is stopped by C until C's lease runs out */
	CHECK_EQ(lk(t, 2, &D, BRL_WRITE, 200, 300, &d), -EAGAIN);
	check_denied(&d, &C, BRL_WRITE, 100, BRL_EOF);
	CHECK(d.owner.client == 2); /* the caller asks whether client 2 is expired */
	CHECK_EQ(brl_release_client(t, 2), 3);
	CHECK_EQ(brl_client_locks(t, 2), 0);
	CHECK_OK(lk(t, 2, &D, BRL_WRITE, 200, 300, &d));
	EXPECT_LOCKS(t, 2, "A:W0-9 A:R20-29 B:R20-39 D:W200-300");

	/* one owner on one file (FREE_STATEID of a lock stateid) */
	CHECK_EQ(brl_release_file_owner(t, 1, &A), 2);
	CHECK_EQ(brl_release_file_owner(t, 1, &A), 0);
	EXPECT_LOCKS(t, 1, "B:R20-39");
	/* one owner everywhere */
	CHECK_EQ(brl_release_owner(t, &B), 3);
	EXPECT_LOCKS(t, 1, "");
	EXPECT_LOCKS(t, 3, "A:W0-9 A:R20-29");
	CHECK(brl_holds_any(t, &A));
	CHECK_EQ(brl_client_locks(t, 1), 4);
	/* DESTROY_CLIENTID / expiry of client 1; client 3 untouched */
	CHECK_EQ(brl_release_client(t, 1), 4);
	CHECK_EQ(brl_release_client(t, 1), 0);
	EXPECT_LOCKS(t, 2, "D:W200-300");
	struct brl_counts c;
	brl_counts(t, &c);
	CHECK_EQ(c.locks, 1);
	CHECK_EQ(c.files, 1);
	CHECK_EQ(c.holders, 1);
	CHECK_EQ(c.clients, 1);
	CHECK_EQ(brl_release_client(t, 3), 1);
	brl_counts(t, &c);
	CHECK_EQ(c.locks + c.files + c.holders + c.clients, 0);
	CHECK_OK(brl_check(t));
	brl_destroy(t);
	TEST_PASS("brlock release by file owner, owner, client");
}

static void test_bounds(void)
{
	/* 4 records per client, 6 in all */
	struct brl_table *t = table(6, 4, 4);
	struct brl_info d;
	struct brl_counts c0, c1;
	for (uint64_t i = 0; i < 4; i++)
		CHECK_OK(lk(t, 1, &A, BRL_WRITE, i * 10, i * 10 + 5, NULL));
	EXPECT_LOCKS(t, 1, "A:W0-5 A:W10-15 A:W20-25 A:W30-35");
	brl_counts(t, &c0);
	CHECK_EQ(lk(t, 1, &A, BRL_WRITE, 50, 55, NULL), -ENOLCK);
	CHECK_EQ(lk(t, 2, &B, BRL_WRITE, 50, 55, NULL), -ENOLCK); /* same client, other file */
	/* an unlock or a downgrade in the middle needs records: refused, unchanged */
	CHECK_EQ(un(t, 1, &A, 12, 13), -ENOLCK);
	CHECK_EQ(lk(t, 1, &A, BRL_READ, 12, 13, NULL), -ENOLCK);
	CHECK_EQ(lk(t, 1, &A, BRL_READ, 35, 40, NULL), -ENOLCK); /* a new record past a trim */
	EXPECT_LOCKS(t, 1, "A:W0-5 A:W10-15 A:W20-25 A:W30-35");
	brl_counts(t, &c1);
	CHECK_EQ(c1.refused, c0.refused + 5);
	CHECK_EQ(c1.locks, 4);
	CHECK_EQ(c1.holders, 1);
	CHECK_EQ(c1.files, 1);
	CHECK(!brl_holds_file(t, 2, &B));
	/* a conflict is reported before the bound */
	CHECK_EQ(lk(t, 1, &C, BRL_WRITE, 0, 100, &d), -EAGAIN);
	/* what needs no new record is granted at the bound */
	CHECK_OK(lk(t, 1, &A, BRL_READ, 10, 15, NULL)); /* downgrade of a whole lock */
	CHECK_OK(lk(t, 1, &A, BRL_READ, 12, 18, NULL)); /* grows by merging */
	CHECK_OK(un(t, 1, &A, 17, 18));			/* trim */
	CHECK_OK(lk(t, 1, &A, BRL_WRITE, 6, 9, NULL));	/* merges with W0-5 */
	EXPECT_LOCKS(t, 1, "A:W0-9 A:R10-16 A:W20-25 A:W30-35");
	CHECK_OK(un(t, 1, &A, 20, 35)); /* removes two */
	CHECK_EQ(brl_client_locks(t, 1), 2);
	CHECK_OK(lk(t, 1, &A, BRL_READ, 3, 4, NULL)); /* splits: +2 -> 4 */
	EXPECT_LOCKS(t, 1, "A:W0-2 A:R3-4 A:W5-9 A:R10-16");
	CHECK_EQ(un(t, 1, &A, 12, 12), -ENOLCK);
	/* the total bound: client 2 may have 4, but only 2 are left in all */
	CHECK_OK(lk(t, 1, &C, BRL_READ, 100, 100, NULL));
	CHECK_OK(lk(t, 2, &C, BRL_READ, 100, 100, NULL));
	CHECK_EQ(lk(t, 3, &C, BRL_READ, 100, 100, NULL), -ENOLCK);
	CHECK_EQ(lk(t, 3, &D, BRL_READ, 100, 100, NULL), -ENOLCK);
	CHECK_EQ(un(t, 1, &C, 100, 100), 0);
	CHECK_OK(lk(t, 3, &D, BRL_READ, 100, 100, NULL));
	brl_counts(t, &c1);
	CHECK_EQ(c1.locks, 6);
	CHECK_EQ(c1.clients, 3);
	/* other clients' room is not client 1's: its split needs its own */
	CHECK_EQ(brl_release_client(t, 2), 1);
	CHECK_EQ(un(t, 1, &A, 12, 12), -ENOLCK);
	CHECK_OK(un(t, 1, &A, 0, 4));
	CHECK_OK(un(t, 1, &A, 12, 12));
	EXPECT_LOCKS(t, 1, "A:W5-9 A:R10-11 A:R13-16");
	CHECK_EQ(brl_client_locks(t, 1), 3);
	brl_destroy(t);
	TEST_PASS("brlock bounds: refused with nothing changed");
}

/* ---- the model test --------------------------------------------------- */

#define M_CELLS	 17 /* bytes 0..15 and the tail [16, 2^64 - 1] */
#define M_TAIL	 (M_CELLS - 1)
#define M_FILES	 3
#define M_OWNERS 6

static const struct brl_owner m_owner[M_OWNERS] = {
	{10, 1}, {10, 2}, {20, 1}, {20, 2}, {30, 1}, {30, 7},
};

struct model {
	uint8_t cell[M_FILES][M_CELLS][M_OWNERS]; /* 0, BRL_READ, BRL_WRITE */
	size_t max_total, max_per_client;
};

static uint64_t cell_start(int c)
{
	return (uint64_t)c;
}

static uint64_t cell_last(int c)
{
	return c == M_TAIL ? MAXU : (uint64_t)c;
}

/* The canonical locks of owner o on file f in model m: maximal runs. */
static size_t m_runs(const struct model *m, int f, int o, uint64_t *s, uint64_t *e, uint8_t *ty)
{
	size_t n = 0;
	for (int c = 0; c < M_CELLS;) {
		uint8_t t = m->cell[f][c][o];
		if (!t) {
			c++;
			continue;
		}
		int end = c;
		while (end + 1 < M_CELLS && m->cell[f][end + 1][o] == t)
			end++;
		if (s) {
			s[n] = cell_start(c);
			e[n] = cell_last(end);
			ty[n] = t;
		}
		n++;
		c = end + 1;
	}
	return n;
}

static size_t m_client_count(const struct model *m, uint64_t client)
{
	size_t n = 0;
	for (int f = 0; f < M_FILES; f++)
		for (int o = 0; o < M_OWNERS; o++)
			if (m_owner[o].client == client)
				n += m_runs(m, f, o, NULL, NULL, NULL);
	return n;
}

static size_t m_total(const struct model *m)
{
	size_t n = 0;
	for (int f = 0; f < M_FILES; f++)
		for (int o = 0; o < M_OWNERS; o++)
			n += m_runs(m, f, o, NULL, NULL, NULL);
	return n;
}

static int owner_index(const struct brl_owner *o)
{
	for (int i = 0; i < M_OWNERS; i++)
		if (m_owner[i].client == o->client && m_owner[i].owner == o->owner)
			return i;
	return -1;
}

/* Does a lock by o of type over cells [a, b] conflict in m? The lowest
 * start among the conflicting canonical locks in *first. */
static bool m_conflict(const struct model *m, int f, int o, int type, int a, int b, uint64_t *first)
{
	bool any = false;
	for (int p = 0; p < M_OWNERS; p++) {
		if (p == o)
			continue;
		uint64_t s[M_CELLS], e[M_CELLS];
		uint8_t ty[M_CELLS];
		size_t n = m_runs(m, f, p, s, e, ty);
		for (size_t i = 0; i < n; i++) {
			if (s[i] > cell_last(b) || e[i] < cell_start(a))
				continue;
			if (type != BRL_WRITE && ty[i] != BRL_WRITE)
				continue;
			if (!any || s[i] < *first)
				*first = s[i];
			any = true;
		}
	}
	return any;
}

/* The table's locks must be the model's canonical runs, exactly. */
static void m_compare(struct brl_table *t, const struct model *m, uint64_t op)
{
	for (int f = 0; f < M_FILES; f++) {
		struct brl_info l[M_OWNERS * M_CELLS];
		size_t n = brl_list(t, (uint64_t)f, l, M_OWNERS * M_CELLS);
		size_t want = 0;
		for (int o = 0; o < M_OWNERS; o++) {
			uint64_t s[M_CELLS], e[M_CELLS];
			uint8_t ty[M_CELLS];
			size_t k = m_runs(m, f, o, s, e, ty);
			want += k;
			for (size_t i = 0; i < k; i++) {
				uint64_t len = e[i] == MAXU ? BRL_EOF : e[i] - s[i] + 1;
				bool found = false;
				for (size_t j = 0; j < n && !found; j++)
					found = l[j].offset == s[i] && l[j].length == len &&
						l[j].type == ty[i] && owner_index(&l[j].owner) == o;
				if (!found) {
					fprintf(stderr,
						"op %llu: file %d owner %d lock %llu+%llu "
						"missing\n",
						(unsigned long long)op, f, o,
						(unsigned long long)s[i], (unsigned long long)len);
					exit(1);
				}
			}
			CHECK_EQ(brl_holds_file(t, (uint64_t)f, &m_owner[o]), k > 0);
		}
		if (n != want) {
			fprintf(stderr, "op %llu: file %d has %zu locks, model %zu\n",
				(unsigned long long)op, f, n, want);
			exit(1);
		}
	}
	struct brl_counts c;
	brl_counts(t, &c);
	CHECK_EQ(c.locks, m_total(m));
	for (int o = 0; o < M_OWNERS; o++) {
		CHECK_EQ(brl_client_locks(t, m_owner[o].client),
			 m_client_count(m, m_owner[o].client));
		bool any = false;
		for (int f = 0; f < M_FILES; f++)
			any |= m_runs(m, f, o, NULL, NULL, NULL) > 0;
		CHECK_EQ(brl_holds_any(t, &m_owner[o]), any);
	}
	CHECK_OK(brl_check(t));
}

/* A random range: cells [*a, *b] and its protocol offset/length. */
static void m_range(struct rng *r, int *a, int *b, uint64_t *off, uint64_t *len)
{
	*a = (int)rng_below(r, M_CELLS);
	if (*a == M_TAIL || rng_chance(r, 20)) {
		*b = M_TAIL;
		*len = BRL_EOF;
	} else {
		*b = *a + (int)rng_below(r, (uint64_t)(M_TAIL - *a));
		*len = (uint64_t)(*b - *a + 1);
	}
	*off = (uint64_t)*a;
}

static void model_run(uint64_t seed, size_t max_total, size_t per_client, int ops)
{
	struct brl_table *t = table(max_total, per_client, 2);
	static struct model m, next;
	memset(&m, 0, sizeof(m));
	struct rng r;
	rng_seed(&r, seed);
	unsigned long long n_granted = 0, n_denied = 0, n_refused = 0, n_unlocks = 0;
	for (int op = 0; op < ops; op++) {
		int f = (int)rng_below(&r, M_FILES);
		int o = (int)rng_below(&r, M_OWNERS);
		const struct brl_owner *ow = &m_owner[o];
		int a, b;
		uint64_t off, len, first = 0;
		struct brl_info d;
		uint64_t kind = rng_below(&r, 100);
		next = m;
		if (kind < 55) { /* LOCK */
			int type = rng_chance(&r, 50) ? BRL_READ : BRL_WRITE;
			m_range(&r, &a, &b, &off, &len);
			int err = brl_lock(t, (uint64_t)f, ow, (enum brl_type)type, off, len, &d);
			if (m_conflict(&m, f, o, type, a, b, &first)) {
				CHECK_EQ(err, -EAGAIN);
				/* the first conflicting lock, exactly one of the model's */
				CHECK(d.offset == first);
				int p = owner_index(&d.owner);
				CHECK(p >= 0 && p != o);
				CHECK(type == BRL_WRITE || d.type == BRL_WRITE);
				uint64_t s[M_CELLS], e[M_CELLS];
				uint8_t ty[M_CELLS];
				size_t k = m_runs(&m, f, p, s, e, ty);
				bool found = false;
				for (size_t i = 0; i < k; i++)
					found |= s[i] == d.offset && ty[i] == d.type &&
						 (e[i] == MAXU ? BRL_EOF : e[i] - s[i] + 1) ==
							 d.length;
				CHECK(found);
				n_denied++;
			} else {
				for (int c = a; c <= b; c++)
					next.cell[f][c][o] = (uint8_t)type;
				size_t before = m_runs(&m, f, o, NULL, NULL, NULL);
				size_t after = m_runs(&next, f, o, NULL, NULL, NULL);
				bool over = after > before &&
					    (m_client_count(&m, ow->client) + after - before >
						     per_client ||
					     m_total(&m) + after - before > max_total);
				if (over) {
					CHECK_EQ(err, -ENOLCK);
					n_refused++;
				} else {
					CHECK_EQ(err, 0);
					m = next;
					n_granted++;
				}
			}
		} else if (kind < 80) { /* LOCKU */
			m_range(&r, &a, &b, &off, &len);
			int err = brl_unlock(t, (uint64_t)f, ow, off, len);
			for (int c = a; c <= b; c++)
				next.cell[f][c][o] = 0;
			size_t before = m_runs(&m, f, o, NULL, NULL, NULL);
			size_t after = m_runs(&next, f, o, NULL, NULL, NULL);
			if (after > before && (m_client_count(&m, ow->client) + 1 > per_client ||
					       m_total(&m) + 1 > max_total)) {
				CHECK_EQ(err, -ENOLCK);
				n_refused++;
			} else {
				CHECK_EQ(err, 0);
				m = next;
				n_unlocks++;
			}
		} else if (kind < 92) { /* LOCKT */
			int type = rng_chance(&r, 50) ? BRL_READ : BRL_WRITE;
			m_range(&r, &a, &b, &off, &len);
			int err = brl_test(t, (uint64_t)f, ow, (enum brl_type)type, off, len, &d);
			if (m_conflict(&m, f, o, type, a, b, &first)) {
				CHECK_EQ(err, -EAGAIN);
				CHECK(d.offset == first);
			} else {
				CHECK_EQ(err, 0);
			}
		} else if (kind < 96) { /* one owner on one file */
			size_t want = m_runs(&m, f, o, NULL, NULL, NULL);
			CHECK_EQ(brl_release_file_owner(t, (uint64_t)f, ow), want);
			for (int c = 0; c < M_CELLS; c++)
				m.cell[f][c][o] = 0;
		} else if (kind < 98) { /* one owner everywhere */
			size_t want = 0;
			for (int g = 0; g < M_FILES; g++) {
				want += m_runs(&m, g, o, NULL, NULL, NULL);
				for (int c = 0; c < M_CELLS; c++)
					m.cell[g][c][o] = 0;
			}
			CHECK_EQ(brl_release_owner(t, ow), want);
		} else { /* a client's lease runs out */
			size_t want = m_client_count(&m, ow->client);
			for (int g = 0; g < M_FILES; g++)
				for (int p = 0; p < M_OWNERS; p++)
					if (m_owner[p].client == ow->client)
						for (int c = 0; c < M_CELLS; c++)
							m.cell[g][c][p] = 0;
			CHECK_EQ(brl_release_client(t, ow->client), want);
		}
		m_compare(t, &m, (uint64_t)op);
	}
	printf("model seed %llu bounds %zu/%zu: %d ops, %llu granted, %llu denied, %llu "
	       "refused, %llu unlocks\n",
	       (unsigned long long)seed, max_total, per_client, ops, n_granted, n_denied, n_refused,
	       n_unlocks);
	/* every outcome must have been seen, or the run proved little */
	CHECK(n_granted > 100 && n_denied > 100 && n_unlocks > 100);
	if (per_client < 100)
		CHECK(n_refused > 20);
	brl_destroy(t);
}

static void test_model(void)
{
	model_run(1, 1000, 1000, 20000); /* no bound in reach */
	model_run(2, 14, 6, 20000);	 /* tight bounds */
	model_run(3, 9, 5, 20000);
	TEST_PASS("brlock against the reference model");
}

/* ---- threads ------------------------------------------------------------ */

#define T_WORKERS 4
#define T_FILES	  4

struct t_shared {
	struct brl_table *t;
	_Atomic int inside[T_FILES]; /* holders of the token lock of each file */
	_Atomic int stop;
	_Atomic unsigned long long grants, violations;
};

struct t_worker {
	struct t_shared *sh;
	int id;
	int iters;
};

static void *worker(void *arg)
{
	struct t_worker *w = arg;
	struct t_shared *sh = w->sh;
	struct rng r;
	rng_seed(&r, 100 + (uint64_t)w->id);
	/* the token owner's client is never released by the reaper */
	struct brl_owner token = {.client = 1000 + (uint64_t)w->id, .owner = 1};
	struct brl_owner own[2] = {{.client = 1 + (uint64_t)w->id, .owner = 1},
				   {.client = 1 + (uint64_t)w->id, .owner = 2}};
	struct brl_info d;
	for (int i = 0; i < w->iters; i++) {
		uint64_t f = rng_below(&r, T_FILES);
		/* mutual exclusion: a WRITE lock of byte 0 is held by one owner */
		if (brl_lock(sh->t, f, &token, BRL_WRITE, 0, 1, &d) == 0) {
			if (atomic_fetch_add(&sh->inside[f], 1) != 0)
				atomic_fetch_add(&sh->violations, 1);
			atomic_fetch_add(&sh->grants, 1);
			atomic_fetch_sub(&sh->inside[f], 1);
			CHECK_OK(brl_unlock(sh->t, f, &token, 0, 1));
		} else {
			CHECK(d.offset == 0 && d.owner.client >= 1000);
		}
		/* churn on the rest of the file */
		const struct brl_owner *o = &own[rng_below(&r, 2)];
		uint64_t off = 1 + rng_below(&r, 64), len = 1 + rng_below(&r, 16);
		int err;
		switch (rng_below(&r, 4)) {
		case 0:
		case 1:
			err = brl_lock(sh->t, f, o, rng_chance(&r, 50) ? BRL_READ : BRL_WRITE, off,
				       len, &d);
			CHECK(err == 0 || err == -EAGAIN);
			break;
		case 2:
			CHECK_OK(brl_unlock(sh->t, f, o, off, len));
			break;
		default:
			err = brl_test(sh->t, f, o, BRL_WRITE, off, len, &d);
			CHECK(err == 0 || err == -EAGAIN);
			brl_holds_any(sh->t, o);
			brl_holds_file(sh->t, f, o);
			break;
		}
	}
	return NULL;
}

static void *reaper(void *arg)
{
	struct t_shared *sh = arg;
	struct rng r;
	rng_seed(&r, 99);
	struct brl_counts c;
	struct stat_table st;
	while (!atomic_load(&sh->stop)) {
		brl_release_client(sh->t, 1 + rng_below(&r, T_WORKERS));
		brl_counts(sh->t, &c);
		st.n = 0;
		struct stat_sink sink = stat_sink_table(&st);
		brl_stats(sh->t, &sink);
		sched_yield();
	}
	return NULL;
}

static void test_threads(void)
{
	struct t_shared sh = {.t = table(0, 0, 2)};
	struct t_worker w[T_WORKERS];
	pthread_t th[T_WORKERS], rp;
	for (int i = 0; i < T_WORKERS; i++) {
		w[i] = (struct t_worker){.sh = &sh, .id = i, .iters = 20000};
		CHECK_OK(pthread_create(&th[i], NULL, worker, &w[i]));
	}
	CHECK_OK(pthread_create(&rp, NULL, reaper, &sh));
	for (int i = 0; i < T_WORKERS; i++)
		CHECK_OK(pthread_join(th[i], NULL));
	atomic_store(&sh.stop, 1);
	CHECK_OK(pthread_join(rp, NULL));
	CHECK_EQ(atomic_load(&sh.violations), 0);
	CHECK(atomic_load(&sh.grants) > 1000);
	CHECK_OK(brl_check(sh.t));
	for (int i = 0; i < T_WORKERS; i++) {
		brl_release_client(sh.t, 1 + (uint64_t)i);
		CHECK_EQ(brl_client_locks(sh.t, 1000 + (uint64_t)i), 0); /* token released */
	}
	struct brl_counts c;
	brl_counts(sh.t, &c);
	CHECK_EQ(c.locks + c.files + c.holders + c.clients, 0);
	printf("threads: %llu token grants, %llu granted, %llu denied\n",
	       (unsigned long long)atomic_load(&sh.grants), (unsigned long long)c.granted,
	       (unsigned long long)c.denied);
	brl_destroy(sh.t);
	TEST_PASS("brlock threads: exclusion, release racing locks");
}

/* ---- scale ---------------------------------------------------------------- */

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

static void test_scale(void)
{
	enum { CLIENTS = 100, PER = 100, FILES = 1000 };
	struct brl_table *t = table(0, 0, 0);
	/* twice: the second round must come back to where it started as the
	 * first did (what the C library keeps for itself stays) */
	for (int round = 0; round < 2; round++) {
		size_t heap0 = heap_in_use();
		for (uint64_t c = 1; c <= CLIENTS; c++) {
			for (uint64_t k = 0; k < PER; k++) {
				struct brl_owner o = {.client = c, .owner = k % 2};
				/* every file, 10 clients each */
				uint64_t f = (c * PER + k) % FILES;
				/* disjoint across clients, never adjacent within one */
				uint64_t off = c * 100000 + k * 10;
				CHECK_OK(brl_lock(t, f, &o, k % 3 ? BRL_READ : BRL_WRITE, off, 5,
						  NULL));
			}
		}
		struct brl_counts c;
		brl_counts(t, &c);
		CHECK_EQ(c.locks, CLIENTS * PER);
		CHECK_EQ(c.clients, CLIENTS);
		CHECK_EQ(c.files, FILES);
		CHECK_OK(brl_check(t));
		size_t heap1 = heap_in_use();
		size_t freed = 0;
		for (uint64_t cl = 1; cl <= CLIENTS; cl++)
			freed += brl_release_client(t, cl);
		CHECK_EQ(freed, CLIENTS * PER);
		brl_counts(t, &c);
		CHECK_EQ(c.locks + c.files + c.holders + c.clients, 0);
		CHECK_OK(brl_check(t));
		size_t heap2 = heap_in_use();
		printf("scale round %d: %d locks of %d clients on %d files: heap +%zu bytes "
		       "(%zu per lock), after release %+lld bytes\n",
		       round, CLIENTS * PER, CLIENTS, FILES, heap1 - heap0,
		       (heap1 - heap0) / (CLIENTS * PER), (long long)heap2 - (long long)heap0);
#ifndef JNFS_SANITIZE
		/* Sanitizers replace malloc and its statistics. The slack is
		 * glibc's per-thread cache of freed chunks, which mallinfo2()
		 * counts as in use (at most 7 chunks of each small size): 1% of
		 * what the locks took. */
		CHECK(heap2 <= heap0 + 16384);
#endif
	}
	brl_destroy(t);
	TEST_PASS("brlock 10,000 locks of 100 clients, released");
}

int main(void)
{
	test_args();
	test_posix();
	test_conflicts();
	test_release();
	test_bounds();
	test_model();
	test_threads();
	test_scale();
	return 0;
}
