/*
 * rpc_null.c - NULL calls per second against an ONC RPC server over TCP.
 *
 *   rpc-null --conns C --seconds S [--addr A] [--port P] [--prog N]
 *            [--vers V] [--depth D] [--csv]
 *
 * C connections, each on its own thread, keep D calls in flight (D = 1:
 * call, wait, call) for S seconds after a short warm-up. Prints
 * "name value" lines (rpc_null.calls, rpc_null.calls_per_sec,
 * rpc_null.latency_us_avg, and the percentiles rpc_null.latency_us_p50,
 * _p90, _p99, _p999 from a histogram of 0.1 us buckets up to 10 ms, call
 * sent to reply read) and, with --csv, one CSV line
 * "conns,depth,seconds,calls,calls_per_sec". Every reply is checked
 * (xid, MSG_ACCEPTED, SUCCESS); a bad one is an error, not a number.
 * Defaults: 127.0.0.1:2049, NFS (100003) v3, 4 connections, 5 s, depth 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/time.h"
#include "rpc/clnt.h"
#include "rpc/rpc_msg.h"

static char addr[128] = "127.0.0.1:2049";
static uint32_t prog = 100003, vers = 3;
static unsigned depth = 1;
static _Atomic int phase; /* 0 warm-up, 1 measure, 2 stop */

/* Latency histogram: bucket i holds [i, i+1) * LAT_STEP_NS; the last one
 * everything from LAT_BUCKETS * LAT_STEP_NS (10 ms) on. */
#define LAT_STEP_NS 100
#define LAT_BUCKETS 100000

struct conn {
	pthread_t t;
	int fd;
	uint64_t calls;
	uint64_t lat_ns;
	uint32_t *lat; /* [LAT_BUCKETS] */
	unsigned id;
};

static void die(const char *what, int err)
{
	fprintf(stderr, "rpc-null: %s: %s\n", what, strerror(err));
	exit(1);
}

static void *run(void *arg)
{
	struct conn *c = arg;
	uint8_t call[44], buf[65536];
	size_t have = 0;
	uint32_t next_xid = c->id << 24, want_xid = next_xid;
	uint64_t sent_at[256];
	struct xdr_enc x;
	xdr_enc_init_buf(&x, call, sizeof(call), sizeof(call));
	if (xdr_enc_u32(&x, 0x80000000u | 40) ||
	    rpc_enc_call_hdr(&x, 0, prog, vers, 0, NULL) || x.len != sizeof(call))
		die("encode", EINVAL);
	unsigned inflight = 0;
	for (;;) {
		int ph = atomic_load(&phase);
		if (ph == 2 && inflight == 0)
			break;
		while (ph != 2 && inflight < depth) {
			uint32_t xid = htonl(next_xid);
			memcpy(call + 4, &xid, 4);
			sent_at[next_xid & 255] = now_ns();
			next_xid++;
			inflight++;
			if (send(c->fd, call, sizeof(call), MSG_NOSIGNAL) != sizeof(call))
				die("send", errno);
		}
		ssize_t n = read(c->fd, buf + have, sizeof(buf) - have);
		if (n <= 0)
			die("read", n ? errno : ECONNRESET);
		have += (size_t)n;
		size_t pos = 0;
		while (have - pos >= 4) {
			uint32_t h = ntohl(*(uint32_t *)(buf + pos)), len = h & 0x7fffffffu;
			if (!(h & 0x80000000u) || len > sizeof(buf) - 4)
				die("reply framing", EPROTO);
			if (have - pos < 4 + len)
				break;
			struct xdr_dec d;
			struct rpc_reply_hdr rh;
			xdr_dec_init(&d, buf + pos + 4, len);
			if (rpc_dec_reply_hdr(&d, &rh) || rh.xid != want_xid ||
			    rh.reply_stat != RPC_MSG_ACCEPTED || rh.stat != RPC_SUCCESS)
				die("reply", EPROTO);
			uint64_t dt = now_ns() - sent_at[want_xid & 255];
			want_xid++;
			inflight--;
			if (atomic_load(&phase) == 1) {
				c->calls++;
				c->lat_ns += dt;
				uint64_t b = dt / LAT_STEP_NS;
				c->lat[b < LAT_BUCKETS ? b : LAT_BUCKETS - 1]++;
			}
			pos += 4 + len;
		}
		memmove(buf, buf + pos, have - pos);
		have -= pos;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"conns", required_argument, NULL, 'c'}, {"seconds", required_argument, NULL, 's'},
		{"addr", required_argument, NULL, 'a'},  {"port", required_argument, NULL, 'p'},
		{"prog", required_argument, NULL, 'P'},  {"vers", required_argument, NULL, 'V'},
		{"depth", required_argument, NULL, 'd'}, {"csv", no_argument, NULL, 'C'},
		{NULL, 0, NULL, 0}};
	unsigned conns = 4, port = 2049;
	double seconds = 5;
	const char *host = "127.0.0.1";
	int opt, csv = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': conns = (unsigned)atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'a': host = optarg; break;
		case 'p': port = (unsigned)atoi(optarg); break;
		case 'P': prog = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'V': vers = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'd': depth = (unsigned)atoi(optarg); break;
		case 'C': csv = 1; break;
		default:
			fprintf(stderr, "usage: rpc-null --conns C --seconds S [--addr A] [--port P] "
					"[--prog N] [--vers V] [--depth D] [--csv]\n");
			return 2;
		}
	}
	if (!conns || conns > 1024 || seconds <= 0 || !depth || depth > 128) {
		fprintf(stderr, "rpc-null: bad --conns, --seconds or --depth\n");
		return 2;
	}
	snprintf(addr, sizeof(addr), strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
	struct conn *c = calloc(conns, sizeof(*c));
	uint64_t *lat_all = calloc(LAT_BUCKETS, sizeof(*lat_all));
	if (!c || !lat_all)
		die("calloc", ENOMEM);
	for (unsigned i = 0; i < conns; i++) {
		c[i].id = i;
		c[i].lat = calloc(LAT_BUCKETS, sizeof(*c[i].lat));
		if (!c[i].lat)
			die("calloc", ENOMEM);
		c[i].fd = rpc_clnt_connect(addr, 10000);
		if (c[i].fd < 0)
			die(addr, -c[i].fd);
	}
	for (unsigned i = 0; i < conns; i++)
		pthread_create(&c[i].t, NULL, run, &c[i]);
	sleep_ns(500 * NSEC_PER_MSEC); /* warm-up */
	uint64_t t0 = now_ns();
	atomic_store(&phase, 1);
	sleep_ns((uint64_t)(seconds * 1e9));
	atomic_store(&phase, 2);
	uint64_t elapsed = now_ns() - t0;
	uint64_t calls = 0, lat = 0;
	for (unsigned i = 0; i < conns; i++) {
		pthread_join(c[i].t, NULL);
		close(c[i].fd);
		calls += c[i].calls;
		lat += c[i].lat_ns;
		for (unsigned b = 0; b < LAT_BUCKETS; b++)
			lat_all[b] += c[i].lat[b];
		free(c[i].lat);
	}
	double rate = (double)calls * 1e9 / (double)elapsed;
	printf("rpc_null.conns %u\nrpc_null.depth %u\nrpc_null.calls %llu\n", conns, depth,
	       (unsigned long long)calls);
	printf("rpc_null.calls_per_sec %.0f\nrpc_null.latency_us_avg %.1f\n", rate,
	       calls ? (double)lat / (double)calls / 1000.0 : 0.0);
	static const struct {
		const char *name;
		double q;
	} pct[] = {{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p999", 0.999}};
	for (unsigned p = 0; p < sizeof(pct) / sizeof(pct[0]) && calls; p++) {
		/* the upper edge of the bucket holding the quantile */
		uint64_t acc = 0, want = (uint64_t)(pct[p].q * (double)calls + 0.5);
		unsigned b = 0;
		while (b < LAT_BUCKETS - 1 && (acc += lat_all[b]) < (want ? want : 1))
			b++;
		printf("rpc_null.latency_us_%s %.1f\n", pct[p].name,
		       (double)(b + 1) * LAT_STEP_NS / 1000.0);
	}
	if (csv)
		printf("conns,depth,seconds,calls,calls_per_sec\n%u,%u,%.3f,%llu,%.0f\n", conns,
		       depth, (double)elapsed / 1e9, (unsigned long long)calls, rate);
	free(lat_all);
	free(c);
	return 0;
}
