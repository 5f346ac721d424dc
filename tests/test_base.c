/*
 * test_base.c - CRC32C vectors and chaining, the hash map against a
 * reference array, lists, the lock-order checker (a wrong order must
 * panic, checked in a child process), and the kinds of counter a stat sink
 * receives (counts, gauges, latency histograms), the size parser of
 * both programs' command lines (parse.h), and the tables' hash (hash.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/crc32c.h"
#include "base/hash.h"
#include "base/hashmap.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/parse.h"
#include "base/rand.h"
#include "base/stats.h"
#include "check.h"

static void test_crc32c(void)
{
	CHECK_EQ(crc32c(0, "123456789", 9), 0xe3069283u);
	CHECK_EQ(crc32c(0, "", 0), 0);
	/* 32 bytes of zeros: RFC 3720 B.4 */
	unsigned char z[32] = {0};
	CHECK_EQ(crc32c(0, z, 32), 0x8a9136aau);
	unsigned char ff[32];
	memset(ff, 0xff, sizeof(ff));
	CHECK_EQ(crc32c(0, ff, 32), 0x62a8ab43u);
	/* chaining over every split point and odd alignments */
	unsigned char buf[257];
	for (int i = 0; i < 257; i++)
		buf[i] = (unsigned char)(i * 7 + 3);
	uint32_t whole = crc32c(0, buf, sizeof(buf));
	for (size_t cut = 0; cut <= sizeof(buf); cut++)
		CHECK_EQ(crc32c(crc32c(0, buf, cut), buf + cut, sizeof(buf) - cut), whole);
	TEST_PASS("crc32c");
}

static void test_hashmap(void)
{
	enum { N = 5000 };
	static void *ref[N];
	struct hashmap h;
	hashmap_init(&h);
	struct rng r;
	rng_seed(&r, 1);
	for (int round = 0; round < 200000; round++) {
		uint64_t k = rng_below(&r, N);
		uint64_t op = rng_below(&r, 3);
		void *v = (void *)(uintptr_t)(rng_next(&r) | 1);
		if (op == 0) {
			CHECK(hashmap_put(&h, k, v) == ref[k]);
			ref[k] = v;
		} else if (op == 1) {
			CHECK(hashmap_remove(&h, k) == ref[k]);
			ref[k] = NULL;
		} else {
			CHECK(hashmap_get(&h, k) == ref[k]);
		}
	}
	size_t n = 0, it = 0;
	uint64_t k;
	void *v;
	while (hashmap_next(&h, &it, &k, &v)) {
		CHECK(ref[k] == v);
		n++;
	}
	size_t want = 0;
	for (int i = 0; i < N; i++)
		want += ref[i] != NULL;
	CHECK_EQ(n, want);
	CHECK_EQ(h.n, want);
	hashmap_destroy(&h);
	TEST_PASS("hashmap");
}

struct node {
	int v;
	struct list link;
};

static void test_list(void)
{
	struct list a = LIST_INIT(a), b = LIST_INIT(b);
	struct node n[5];
	for (int i = 0; i < 5; i++) {
		n[i].v = i;
		list_add_tail(&n[i].link, i < 3 ? &a : &b);
	}
	list_splice_tail(&b, &a);
	CHECK(list_empty(&b));
	int want = 0;
	struct node *p;
	list_for_each_entry (p, &a, link)
		CHECK_EQ(p->v, want++);
	CHECK_EQ(want, 5);
	struct node *t;
	list_for_each_entry_safe (p, t, &a, link)
		if (p->v % 2)
			list_del(&p->link);
	want = 0;
	list_for_each_entry (p, &a, link) {
		CHECK_EQ(p->v, want);
		want += 2;
	}
	TEST_PASS("list");
}

static struct lock_class low_class = LOCK_CLASS_INIT("test.low", 100);
static struct lock_class high_class = LOCK_CLASS_INIT("test.high", 200);

static void test_lockdep(void)
{
	struct mutex lo, hi;
	mutex_init(&lo, &low_class);
	mutex_init(&hi, &high_class);
	mutex_lock(&lo);
	mutex_lock(&hi);
	assert_locked(&lo);
	mutex_unlock(&lo); /* out of order release is fine */
	mutex_unlock(&hi);
#ifdef JNFS_LOCKDEP
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", 1);
		dup2(devnull, 2);
		mutex_lock(&hi);
		mutex_lock(&lo); /* wrong order: must panic */
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
#endif
	TEST_PASS("lockdep");
}

/* Latency histograms and gauges reach a text sink as before (p50/p99,
 * plain values) and a structured sink as what they are. */
struct kinds {
	int emits, gauges, lats;
	const struct stat_lat *lat;
};
static void k_emit(void *arg, const char *name, uint64_t v)
{
	((struct kinds *)arg)->emits++;
}
static void k_gauge(void *arg, const char *name, uint64_t v)
{
	((struct kinds *)arg)->gauges++;
}
static void k_lat(void *arg, const char *name, const struct stat_lat *l)
{
	((struct kinds *)arg)->lats++;
	((struct kinds *)arg)->lat = l;
}

static void test_stats(void)
{
	struct stat_lat l = {0};
	/* bucket i holds [2^i, 2^(i+1)) us; under 1 us goes to bucket 0 */
	stat_lat_record(&l, 500);         /* 0.5 us */
	stat_lat_record(&l, 1500);        /* 1.5 us: bucket 0 */
	stat_lat_record(&l, 2000);        /* 2 us: bucket 1 */
	stat_lat_record(&l, 1000000);     /* 1 ms = 1000 us: bucket 9 */
	stat_lat_record(&l, UINT64_MAX / 4); /* beyond the last bound: last bucket */
	CHECK(counter_get(&l.b[0]) == 2 && counter_get(&l.b[1]) == 1 && counter_get(&l.b[9]) == 1);
	CHECK(counter_get(&l.b[STAT_LAT_BUCKETS - 1]) == 1);
	CHECK(counter_get(&l.sum_ns) == 500 + 1500 + 2000 + 1000000 + UINT64_MAX / 4);
	CHECK(stat_lat_bound_us(0) == 2 && stat_lat_bound_us(9) == 1024);
	CHECK(stat_lat_quantile(&l, 0.4) == 2);   /* 2 of 5 in bucket 0 */
	CHECK(stat_lat_quantile(&l, 0.6) == 4);   /* the third in bucket 1 */
	CHECK(stat_lat_quantile(&l, 0.8) == 1024);

	struct stat_table t;
	struct stat_sink text = stat_sink_table(&t);
	struct stat_lat empty = {0};
	stat_emit_lat(&text, "x.lat", &empty); /* nothing while empty */
	CHECK(t.n == 0);
	stat_emit_lat(&text, "x.lat", &l);
	stat_gauge(&text, "x.level", 7);
	CHECK(t.n == 3);
	CHECK(stat_table_get(&t, "x.lat.p50_us") == 4 && stat_table_get(&t, "x.lat.p99_us") ==
							       stat_lat_bound_us(STAT_LAT_BUCKETS - 1));
	CHECK(stat_table_get(&t, "x.level") == 7);

	struct kinds k = {0};
	struct stat_sink typed = {.emit = k_emit, .gauge = k_gauge, .lat = k_lat, .arg = &k};
	stat_emit(&typed, "a", 1);
	stat_gauge(&typed, "b", 2);
	stat_gaugef(&typed, "c", "d", 3);
	stat_emit_lat(&typed, "e", &empty);
	CHECK(k.emits == 1 && k.gauges == 2 && k.lats == 1 && k.lat == &empty);
	TEST_PASS("stats");
}

/* An order among locks of one class: here, lower address first. */
static const char *by_address(const void *held, const void *want)
{
	return held < want ? NULL : "higher address first";
}

static struct lock_class ordered_class = LOCK_CLASS_INIT_ORDERED("test.ordered", 150, by_address);

static void test_lockdep_order(void)
{
	struct mutex m[2];
	mutex_init(&m[0], &ordered_class);
	mutex_init(&m[1], &ordered_class);
	mutex_lock(&m[0]);
	mutex_lock(&m[1]); /* the order the class allows */
	mutex_unlock(&m[0]);
	mutex_unlock(&m[1]);
#ifdef JNFS_LOCKDEP
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", 1);
		dup2(devnull, 2);
		mutex_lock(&m[1]);
		mutex_lock(&m[0]); /* refused by the class's order: must panic */
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
#endif
	TEST_PASS("lockdep order within a class");
}

/* parse.h: every unit in both cases, the optional "i"/"B", hex, and the
 * refusals: junk, signs, spaces, a value or a product past 2^64 - 1. */
static void test_parse_size(void)
{
	static const struct {
		const char *s;
		uint64_t v;
	} good[] = {
		{"0", 0},
		{"4096", 4096},
		{"0x1000", 4096},
		{"0X10k", 16ull << 10},
		{"1k", 1ull << 10},
		{"1K", 1ull << 10},
		{"3m", 3ull << 20},
		{"3M", 3ull << 20},
		{"8g", 8ull << 30},
		{"8G", 8ull << 30},
		{"2t", 2ull << 40},
		{"2T", 2ull << 40},
		{"8Gi", 8ull << 30},
		{"8GB", 8ull << 30},
		{"8GiB", 8ull << 30},
		{"18446744073709551615", UINT64_MAX},
		{"16777215t", 16777215ull << 40},
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uint64_t v = 12345;
		CHECK_OK(parse_size(good[i].s, &v));
		CHECK_EQ(v, good[i].v);
	}
	static const struct {
		const char *s;
		int err;
	} bad[] = {
		{"", -EINVAL},	  {"g", -EINVAL},    {"8x", -EINVAL},	{"8 g", -EINVAL},
		{" 8", -EINVAL},  {"8 ", -EINVAL},   {"-1", -EINVAL},	{"+1", -EINVAL},
		{"8gg", -EINVAL}, {"8gb", -EINVAL},  {"8Bi", -EINVAL},	{"8B", -EINVAL},
		{"8i", -EINVAL},  {"1.5g", -EINVAL}, {"0x", -EINVAL},	{"0xg", -EINVAL},
		{"8g8", -EINVAL}, {"k8", -EINVAL},
		{"18446744073709551616", -ERANGE},
		{"99999999999999999999999", -ERANGE},
		{"16777216t", -ERANGE},
		{"17179869184g", -ERANGE},
		{"0x10000000000000000", -ERANGE},
		{"0x40000000000000k", -ERANGE},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 12345;
		CHECK_EQ(parse_size(bad[i].s, &v), bad[i].err);
		CHECK_EQ(v, 12345);
	}
	TEST_PASS("parse_size");
}

/* The spread of n keys over nb buckets: every bucket within half and
 * twice the mean (deterministic keys, so this passes or fails always). */
static int spread_ok(const uint64_t *h, size_t n, unsigned nb)
{
	static unsigned count[1024];
	CHECK(nb <= 1024);
	memset(count, 0, sizeof(count));
	for (size_t i = 0; i < n; i++)
		count[h[i] % nb]++;
	size_t mean = n / nb;
	for (unsigned b = 0; b < nb; b++)
		if (count[b] < mean / 2 || count[b] > mean * 2)
			return 0;
	return 1;
}

static void test_hash(void)
{
	/* MurmurHash3's fmix64: its published value for 1, and 0 to 0 */
	CHECK_EQ(hash64(1), 0xb456bcfc34c2cb2cull);
	CHECK_EQ(hash64(0x123456789abcdef0ull), 0x18b8c062f6f42398ull);
	CHECK_EQ(hash64(0), 0);

	/* avalanche: one key bit flipped flips about half the output bits,
	 * for every bit position (a multiply alone leaves the low bits of a
	 * high-bit change untouched) */
	struct rng r;
	rng_seed(&r, 7);
	for (int bit = 0; bit < 64; bit++) {
		unsigned flipped = 0;
		for (int i = 0; i < 256; i++) {
			uint64_t k = rng_next(&r), k2 = k ^ (1ull << bit);
			flipped += (unsigned)__builtin_popcountll(hash64(k) ^ hash64(k2));
		}
		CHECK(flipped > 256 * 28 && flipped < 256 * 36);
	}

	/* the tables' own key shapes spread over their buckets */
	enum { N = 64 * 1024 };
	static uint64_t h[N];
	for (size_t i = 0; i < N; i++) /* clientids: epoch << 32 | counter (tally, 16 shards) */
		h[i] = hash64((uint64_t)0x5f3a << 32 | (i + 1));
	CHECK(spread_ok(h, N, 16));
	CHECK(spread_ok(h, N, 1024));
	for (size_t i = 0; i < N; i++) /* keys that differ only in high bits */
		h[i] = hash64((uint64_t)i << 40);
	CHECK(spread_ok(h, N, 1024));
	for (size_t i = 0; i < N; i++) /* block addresses: multiples of 4096 (hash map) */
		h[i] = hash64((uint64_t)i * 4096) & 1023;
	CHECK(spread_ok(h, N, 1024));
	for (size_t i = 0; i < N; i++) /* (clientid, inode) of layouts, 256 buckets */
		h[i] = hash64_pair((uint64_t)0x5f3a << 32 | (i % 64 + 1), 1000 + i / 64);
	CHECK(spread_ok(h, N, 256));
	for (size_t i = 0; i < N; i++) /* (owner, file) of opens and locks, one owner */
		h[i] = hash64_pair(0x8badf00d, 1000 + i);
	CHECK(spread_ok(h, N, 1024));
	/* the order of a pair counts */
	CHECK(hash64_pair(1, 2) != hash64_pair(2, 1));
	TEST_PASS("hash");
}

int main(void)
{
	test_crc32c();
	test_hash();
	test_hashmap();
	test_list();
	test_lockdep();
	test_lockdep_order();
	test_stats();
	test_parse_size();
	return 0;
}
