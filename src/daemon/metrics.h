/*
 * metrics.h - jnfsd's counters over HTTP in the Prometheus text exposition
 * format (version 0.0.4), for `jnfsd --metrics ADDR:PORT`.
 *
 * The HTTP side is GNU libmicrohttpd: one thread of its own that polls
 * every scrape connection, so that a slow or stuck scraper holds nothing
 * the server's threads wait on. A scrape first copies every counter out
 * (the collect callback, into memory, as fast as `jnfs stat` does), then
 * formats and sends it with no lock held. metrics.c says how the dotted
 * counter names become metric names.
 */
#ifndef JNFS_DAEMON_METRICS_H
#define JNFS_DAEMON_METRICS_H

#include <stdint.h>
#include <sys/socket.h>

#include "base/stats.h"

struct metrics;

/* Emits every counter to sink; called on the metrics thread, once per
 * scrape, while other threads serve. */
typedef void (*metrics_collect_fn)(void *arg, const struct stat_sink *sink);

/* Listen on addr (port 0: a free one) and answer GET /metrics. Returns 0,
 * or -errno with a message in why. */
int metrics_start(const struct sockaddr_storage *addr, metrics_collect_fn collect, void *arg,
		  struct metrics **out, char *why, size_t whylen);
/* The port it listens on. */
uint16_t metrics_port(const struct metrics *m);
/* Finish the scrape in progress, close every connection, free. */
void metrics_stop(struct metrics *m);

/* The exposition text of what collect emits (the body of GET /metrics),
 * in a malloc'd string of *len bytes. Exposed for tests. */
char *metrics_render(metrics_collect_fn collect, void *arg, size_t *len);

#endif
