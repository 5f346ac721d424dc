/*
 * test_log_kill.c - kill-and-verify: killing the process that holds a crash
 * device is a power failure.
 *
 * A child mounts the journal on a crash device over an image file and runs
 * threads that each commit a transaction rewriting their whole 4 KiB block
 * (a counter and a fill byte derived from it), force it, and report the
 * counter on a pipe. The parent kills the child with SIGKILL at a random
 * moment, recovers the image in-process and checks, for every thread, that
 * the block is whole (fill matches the counter: a transaction is atomic)
 * and holds at least the last reported counter (acknowledged means
 * durable). Then the next child continues from the recovered state.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/msg.h"
#include "base/rand.h"
#include "base/time.h"
#include "check.h"
#include "dev/crashdev.h"
#include "log/buf_item.h"
#include "log/log.h"

#define THREADS	 6
#define BLK	 4096u
#define LOG_SIZE (1u << 20)
#define CYCLES	 12

static const uint8_t uuid[16] = "kill-and-verify";

static struct log_params params(struct dev *d)
{
	struct log_params p = {.ldev = d,
			       .log_offset = THREADS * BLK,
			       .log_size = LOG_SIZE,
			       .buf_size = 8192,
			       .nbufs = 4,
			       .push_interval_ns = 50 * NSEC_PER_MSEC};
	memcpy(p.uuid, uuid, 16);
	return p;
}

struct child_thread {
	struct log *log;
	struct buf_item bi;
	uint8_t *data;
	int fd;
	unsigned t;
};

static void *child_fn(void *arg)
{
	struct child_thread *c = arg;
	for (;;) {
		struct trans *tp;
		if (trans_alloc(c->log, log_calc_res(c->log, 1, BLK), 0, &tp))
			_exit(3);
		buf_item_join(tp, &c->bi);
		uint64_t n;
		memcpy(&n, c->data, 8);
		n++;
		memcpy(c->data, &n, 8);
		memset(c->data + 8, (int)(n & 0xff), BLK - 8);
		buf_item_log(tp, &c->bi, 0, BLK);
		uint64_t csn;
		if (trans_commit(tp, &csn) || log_force_seq(c->log, csn, true, NULL))
			_exit(4);
		char line[64];
		int len = snprintf(line, sizeof(line), "%u %llu\n", c->t, (unsigned long long)n);
		if (write(c->fd, line, (size_t)len) != len)
			_exit(5);
	}
	return NULL;
}

static void child(const char *path, int fd)
{
	struct dev *file, *cd;
	if (dev_file_open(path, 0, 0, &file) || crashdev_create(file, 0, &cd))
		_exit(2);
	struct log_params p = params(cd);
	struct log *log;
	if (log_mount(&p, &log))
		_exit(2);
	static struct child_thread ct[THREADS];
	pthread_t th[THREADS];
	for (unsigned t = 0; t < THREADS; t++) {
		ct[t].log = log;
		ct[t].fd = fd;
		ct[t].t = t;
		ct[t].data = xmalloc_aligned(4096, BLK);
		if (dev_read(cd, ct[t].data, BLK, (uint64_t)t * BLK))
			_exit(2);
		buf_item_init(&ct[t].bi, log, (uint64_t)t * BLK, ct[t].data, NULL);
		pthread_create(&th[t], NULL, child_fn, &ct[t]);
	}
	for (unsigned t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	_exit(0);
}

int main(void)
{
	char path[] = "/tmp/jnfs-test-kill-XXXXXX";
	int tfd = mkstemp(path);
	CHECK(tfd >= 0);
	close(tfd);
	struct dev *d;
	CHECK_OK(dev_file_open(path, DEV_OPEN_CREATE, THREADS * BLK + LOG_SIZE, &d));
	struct log_params p = params(d);
	CHECK_OK(log_format(&p));
	dev_close(d);
	msg_set_level(MSG_WARN);

	struct rng r;
	rng_seed(&r, (uint64_t)getpid());
	uint64_t acked[THREADS] = {0}, total_acked = 0;
	for (int cycle = 0; cycle < CYCLES; cycle++) {
		int pfd[2];
		CHECK_OK(pipe(pfd));
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			close(pfd[0]);
			child(path, pfd[1]);
		}
		close(pfd[1]);
		usleep((useconds_t)(30000 + rng_below(&r, 150000)));
		CHECK_OK(kill(pid, SIGKILL));
		int st;
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		/* everything the child reported before it died */
		FILE *f = fdopen(pfd[0], "r");
		unsigned t;
		unsigned long long n;
		while (fscanf(f, "%u %llu", &t, &n) == 2) {
			CHECK(t < THREADS);
			if (n > acked[t])
				acked[t] = n;
			total_acked++;
		}
		fclose(f);

		/* reboot: recover and check */
		CHECK_OK(dev_file_open(path, 0, 0, &d));
		p = params(d);
		struct log *log;
		CHECK_OK(log_mount(&p, &log));
		uint8_t blk[BLK];
		for (t = 0; t < THREADS; t++) {
			CHECK_OK(dev_read(d, blk, BLK, (uint64_t)t * BLK));
			uint64_t have;
			memcpy(&have, blk, 8);
			for (unsigned i = 8; i < BLK; i++)
				CHECK_EQ(blk[i], (uint8_t)(have & 0xff));
			if (have < acked[t])
				fprintf(stderr, "thread %u: acknowledged %llu, recovered %llu\n", t,
					(unsigned long long)acked[t], (unsigned long long)have);
			CHECK(have >= acked[t]);
			acked[t] = have; /* the next child continues from here */
		}
		CHECK_OK(log_unmount(log));
		dev_close(d);
	}
	printf("kill cycles: %d, acknowledged transactions: %llu\n", CYCLES,
	       (unsigned long long)total_acked);
	CHECK(total_acked > 0);
	unlink(path);
	TEST_PASS("kill and verify");
	return 0;
}
