/*
 * untar_counters.c - server counters for nfs3-untar and nfs4-untar (see
 * untar_counters.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rpc/clnt.h"
#include "daemon/admin.h"
#include "untar_counters.h"

struct stats_text {
	char *text;
};

static int dec_stats(struct xdr_dec *x, void *res)
{
	struct stats_text *st = res;
	const void *p;
	uint32_t len;
	if (xdr_dec_opaque_ref(x, JNFS_ADMIN_MAX_STATS, &p, &len))
		return -1;
	st->text = malloc(len + 1);
	if (!st->text)
		return -1;
	memcpy(st->text, p, len);
	st->text[len] = '\0';
	return 0;
}

/* The value of counter name in "name value\n" lines; false if absent. */
static bool stat_value(const char *text, const char *name, uint64_t *v)
{
	size_t n = strlen(name);
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (!strncmp(l, name, n) && l[n] == ' ') {
			*v = strtoull(l + n + 1, NULL, 10);
			return true;
		}
	}
	return false;
}

int untar_counters_jnfsd(const char *addr, struct untar_counters *c)
{
	memset(c, 0, sizeof(*c));
	int fd = rpc_clnt_connect(addr, 10000);
	if (fd < 0)
		return fd;
	struct stats_text st = {NULL};
	struct rpc_reply_hdr rh;
	int err = rpc_clnt_call(fd, (uint32_t)getpid(), JNFS_ADMIN_PROG, JNFS_ADMIN_VERS,
				JNFS_ADMIN_PROC_STATS, NULL, NULL, NULL, dec_stats, &st, &rh);
	close(fd);
	if (err)
		return err;
	uint64_t flushes, fua;
	c->forces_name = "checkpoints";
	c->have_log = stat_value(st.text, "log.buffer_writes", &c->log_writes) &&
		      stat_value(st.text, "log.checkpoints", &c->log_forces);
	c->have_flush = stat_value(st.text, "dev.flushes", &flushes) &&
			stat_value(st.text, "dev.fua_writes", &fua);
	c->flushes = c->have_flush ? flushes + fua : 0;
	free(st.text);
	return c->have_log || c->have_flush ? 0 : -ENOENT;
}

int untar_counters_xfs(const char *dev, struct untar_counters *c)
{
	char path[256], line[512];
	memset(c, 0, sizeof(*c));
	c->forces_name = "xfs_log_forces";

	snprintf(path, sizeof(path), "/sys/fs/xfs/%s/stats/stats", dev);
	FILE *f = fopen(path, "r");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			/* log: writes, blocks, noiclogs, force, force_sleep */
			uint64_t w, b, noic, force;
			if (sscanf(line, "log %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, &w, &b,
				   &noic, &force) == 4) {
				c->log_writes = w;
				c->log_forces = force;
				c->have_log = true;
			}
		}
		fclose(f);
	}

	uint64_t ms;
	c->have_flush = !untar_disk_flushes(dev, &c->flushes, &ms);
	return c->have_log || c->have_flush ? 0 : -ENOENT;
}

int untar_disk_flushes(const char *dev, uint64_t *flushes, uint64_t *ms)
{
	char path[256];
	snprintf(path, sizeof(path), "/sys/block/%s/stat", dev);
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	uint64_t v[17];
	int n = 0;
	while (n < 17 && fscanf(f, "%" SCNu64, &v[n]) == 1)
		n++;
	fclose(f);
	if (n < 17) /* Documentation/block/stat.rst: 16 flush I/Os, 17 flush ticks */
		return -ENOENT;
	*flushes = v[15];
	*ms = v[16];
	return 0;
}
