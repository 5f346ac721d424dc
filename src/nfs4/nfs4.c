/*
 * nfs4.c - the NFSv4 server's life: set-up (the boot counter, the client
 * records of the previous instance and grace, the tables), the lease
 * reaper, connections, the state core's callbacks, and counters.
 *
 * Client records (client.h invariant 5) live in the engine's durable
 * record store (docs/engine-records.md) under keys "nfs4c" + clientid; the
 * boot counter under "nfs4.boot". The boot counter is the state core's
 * boot epoch: it grows at every start, and is durable before the server
 * serves, so no clientid, sessionid or stateid of an earlier instance is
 * ever mistaken for one of this instance.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/mem.h"
#include "base/msg.h"
#include "base/time.h"
#include "nfs4/nfs4_priv.h"
#include "nfs4/state/grace.h"

#define REC_CLIENT "nfs4c"
#define REC_BOOT   "nfs4.boot"

void nfs4_server_config_default(struct nfs4_server_config *c)
{
	memset(c, 0, sizeof(*c));
	c->lease_seconds = 90;
	c->grace_seconds = 90;
}

/* ---- durable client records ---- */

/*
 * The value of a client record. A client owner may be 1024 bytes
 * (NFS4_OPAQUE_LIMIT), a record value at most FS_REC_VALUE_MAX with the
 * verifier and length beside it: a longer owner (no client we know sends
 * more than a hostname's worth) is recorded as unmatchable, so that client
 * cannot reclaim after a restart and is told NO_GRACE.
 */
#define REC_OWNER_MAX (FS_REC_VALUE_MAX - NFS4_VERIFIER_SIZE - 4)
struct rec_value {
	uint8_t verifier[NFS4_VERIFIER_SIZE];
	uint32_t owner_len; /* REC_OWNER_LONG: too long to keep */
	uint8_t owner[REC_OWNER_MAX];
};
#define REC_OWNER_LONG UINT32_MAX
_Static_assert(sizeof(struct rec_value) <= FS_REC_VALUE_MAX, "a client record fits the store");

static size_t rec_key(uint64_t clientid, uint8_t key[16])
{
	memcpy(key, REC_CLIENT, 5);
	memcpy(key + 5, &clientid, 8);
	return 13;
}

static int rec_save(void *arg, const struct nfs4_client_record *rec, uint64_t *seq)
{
	struct nfs4_server *s = arg;
	uint8_t key[16];
	struct rec_value v;
	memcpy(v.verifier, rec->verifier, sizeof(v.verifier));
	uint32_t len = rec->owner_len <= REC_OWNER_MAX ? rec->owner_len : 0;
	v.owner_len = rec->owner_len <= REC_OWNER_MAX ? rec->owner_len : REC_OWNER_LONG;
	memcpy(v.owner, rec->owner, len);
	struct fs_result res = {0};
	int err = fs_rec_put(s->srv->fs, key, rec_key(rec->clientid, key), &v,
			     offsetof(struct rec_value, owner) + len, &res);
	*seq = res.csn;
	return err;
}

static int rec_forget(void *arg, const struct nfs4_client_record *rec, uint64_t *seq)
{
	struct nfs4_server *s = arg;
	uint8_t key[16];
	struct fs_result res = {0};
	int err = fs_rec_delete(s->srv->fs, key, rec_key(rec->clientid, key), &res);
	*seq = res.csn;
	return err == -ENOENT ? 0 : err;
}

static const struct nfs4_record_ops record_ops = {.save = rec_save, .forget = rec_forget};

/* Every client record of the previous instance, into grace. */
static int rec_load(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct nfs4_server *s = arg;
	if (klen != 13 || memcmp(key, REC_CLIENT, 5))
		return 0;
	const struct rec_value *v = val;
	struct nfs4_client_record rec = {0};
	memcpy(&rec.clientid, (const uint8_t *)key + 5, 8);
	if (vlen >= offsetof(struct rec_value, owner) && v->owner_len == REC_OWNER_LONG)
		return 0; /* recorded as unmatchable (see above) */
	if (vlen < offsetof(struct rec_value, owner) ||
	    v->owner_len > vlen - offsetof(struct rec_value, owner)) {
		msg_warn("nfs4: a damaged client record (%zu bytes) is ignored", vlen);
		return 0;
	}
	memcpy(rec.verifier, v->verifier, sizeof(rec.verifier));
	rec.owner_len = v->owner_len;
	memcpy(rec.owner, v->owner, v->owner_len);
	if (nfs4_grace_load(s->state, &rec))
		msg_warn("nfs4: more client records than clients allowed: one is ignored");
	return 0;
}

/* The durable boot counter, one more than last time. */
static int next_boot(struct fs *fs, uint32_t *epoch)
{
	uint32_t v = 0;
	size_t len = 0;
	uint8_t buf[FS_REC_VALUE_MAX];
	int err = fs_rec_get(fs, REC_BOOT, strlen(REC_BOOT), buf, &len);
	if (!err && len == sizeof(v))
		memcpy(&v, buf, sizeof(v));
	else if (err && err != -ENOENT)
		return err;
	if (++v == 0)
		v = 1;
	struct fs_result res = {0};
	if ((err = fs_rec_put(fs, REC_BOOT, strlen(REC_BOOT), &v, sizeof(v), &res)) ||
	    (err = fs_force(fs, res.csn, NULL)))
		return err;
	*epoch = v;
	return 0;
}

/* ---- the state core's callbacks ---- */

static bool stid_has_locks(void *arg, unsigned type, void *payload)
{
	return type == NFS4_STID_LOCK && nfs4_lockst_has_locks(arg, payload);
}

static void stid_release(void *arg, unsigned type, void *payload)
{
	if (type == NFS4_STID_OPEN)
		nfs4_open_release(arg, payload);
	else if (type == NFS4_STID_LOCK)
		nfs4_lockst_release(arg, payload);
	else if (type == NFS4_STID_LAYOUT)
		nfs4_layout_release(arg, payload);
}

static const struct nfs4_stid_ops stid_ops = {.has_locks = stid_has_locks, .release = stid_release};

/* ---- connections ---- */

struct conn_data {
	struct nfs4_server *s;
	uint64_t id;
};

static void conn_closed(struct svc_conn *conn, void *data)
{
	struct conn_data *cd = data;
	nfs4_conn_closed(cd->s->state, cd->id);
	nfs4_conns_remove(cd->s, cd->id);
}

static void conn_free(void *data)
{
	free(data);
}

static const struct svc_conn_ops conn_ops = {.closed = conn_closed, .free = conn_free};

void nfs4_conn_watch(struct nfs4_server *s, struct svc_conn *conn)
{
	if (svc_conn_data(conn, &conn_ops))
		return;
	struct conn_data *cd = xmalloc(sizeof(*cd));
	cd->s = s;
	cd->id = svc_conn_id(conn);
	/* in the registry first: once the data is set, closed() may run */
	nfs4_conns_add(s, conn);
	if (svc_conn_set_data(conn, &conn_ops, cd)) {
		/* another request got there first (it added it too), or it closed */
		nfs4_conns_remove(s, cd->id);
		free(cd);
	}
}

/* ---- the reaper ---- */

/*
 * Give memory back once much state has gone. Expired clients free their
 * opens, locks and stateids by the ten thousand, from many worker threads:
 * the allocator keeps those pages for reuse, scattered through the
 * threads' arenas, and the server's memory would stay at its high-water
 * mark long after the clients left. When the state held (stateids and
 * clients) has fallen by TRIM_STEP since its peak, malloc_trim() returns
 * the free pages of every arena to the system. It runs on the reaper,
 * every few seconds at most, holding no lock of ours.
 */
#define TRIM_STEP 4096

static void trim_after_shrink(struct nfs4_server *s)
{
	struct nfs4_state_counts sc;
	nfs4_state_counts(s->state, &sc);
	uint64_t held = (uint64_t)sc.stateids + sc.clients;
	if (held > s->trim_peak) {
		s->trim_peak = held;
	} else if (s->trim_peak - held >= TRIM_STEP) {
		malloc_trim(0);
		s->trim_peak = held;
	}
}

/* The reaper's round: client leases and memory, every REAP_PERIOD_NS.
 * Layouts (fences, and recalls to send again) are looked at on every
 * pass, and a recall due sooner than the next round wakes it
 * (nfs4_reaper_kick). */
#define REAP_PERIOD_NS (2 * NSEC_PER_SEC)

void nfs4_reaper_kick(struct nfs4_server *s, uint64_t due_ns)
{
	pthread_mutex_lock(&s->reap_mu);
	if (due_ns < s->reap_due_ns) {
		s->reap_due_ns = due_ns;
		pthread_cond_signal(&s->reap_cv);
	}
	pthread_mutex_unlock(&s->reap_mu);
}

static void *reaper_main(void *arg)
{
	struct nfs4_server *s = arg;
	pthread_setname_np(pthread_self(), "nfs4-reaper");
	uint64_t round_ns = 0; /* the next round is due then */
	pthread_mutex_lock(&s->reap_mu);
	while (!s->reap_stop) {
		/* a kick from now on is seen before the wait below */
		s->reap_due_ns = UINT64_MAX;
		pthread_mutex_unlock(&s->reap_mu);
		uint64_t now = now_ns(), seq = 0;
		bool round = now >= round_ns;
		if (round) {
			nfs4_state_reap(s->state, &seq);
			round_ns = now + REAP_PERIOD_NS;
		}
		uint64_t resend_ns = nfs4_layouts_reap(s);
		if (seq)
			/* forgotten records: no hurry, but durable */
			fs_force(s->srv->fs, seq, NULL);
		if (round)
			trim_after_shrink(s);
		pthread_mutex_lock(&s->reap_mu);
		uint64_t until = round_ns;
		if (resend_ns < until)
			until = resend_ns;
		if (s->reap_due_ns < until)
			until = s->reap_due_ns;
		if (!s->reap_stop && until > now_ns()) {
			struct timespec ts = {.tv_sec = (time_t)(until / NSEC_PER_SEC),
					      .tv_nsec = (long)(until % NSEC_PER_SEC)};
			pthread_cond_timedwait(&s->reap_cv, &s->reap_mu, &ts);
		}
	}
	pthread_mutex_unlock(&s->reap_mu);
	return NULL;
}

/* ---- set-up ---- */

static bool any_pnfs(const struct exports *exports)
{
	for (unsigned i = 0; i < exports->n; i++)
		for (unsigned k = 0; k < exports->v[i].nclients; k++)
			if (exports->v[i].clients[k].opts.pnfs)
				return true;
	return false;
}

struct nfs4_server *nfs4_server_create(struct srv *srv, const struct nfs4_server_config *cfg)
{
	struct nfs4_server *s = xcalloc(1, sizeof(*s));
	s->srv = srv;
	s->lease_s = cfg->lease_seconds;
	s->start_sec = (uint64_t)(wall_ns() / NSEC_PER_SEC);
	const struct exports *exports = srv_exports(srv);
	atomic_init(&s->pnfs, any_pnfs(exports));
	for (unsigned i = 0; i < exports->n; i++) {
		const struct export *ex = &exports->v[i];
		if (ex->fsid == NFS4_PSEUDO_FSID) {
			msg_err("nfs4: export %s has fsid %u, which the pseudo filesystem uses",
				ex->path, NFS4_PSEUDO_FSID);
			free(s);
			return NULL;
		}
	}

	struct nfs4_state_config sc;
	nfs4_state_config_default(&sc);
	int err = next_boot(srv->fs, &sc.boot_epoch);
	if (err) {
		msg_err("nfs4: cannot keep the boot counter: %s", strerror(-err));
		free(s);
		return NULL;
	}
	memcpy(sc.server_uuid, fs_uuid(srv->fs), sizeof(sc.server_uuid));
	sc.lease_ns = (uint64_t)cfg->lease_seconds * NSEC_PER_SEC;
	sc.grace_ns = (uint64_t)cfg->grace_seconds * NSEC_PER_SEC;
	sc.fore_max.maxrequestsize = NFS4_MAX_REQUEST;
	sc.fore_max.maxresponsesize = NFS4_MAX_REPLY;
	sc.fore_max.maxoperations = NFS4_MAX_OPS;
	sc.records = &record_ops;
	sc.records_arg = s;
	sc.stid_ops = &stid_ops;
	sc.stid_arg = s;
	s->state = nfs4_state_create(&sc);
	if (!s->state) {
		msg_err("nfs4: bad state configuration");
		free(s);
		return NULL;
	}
	struct share_config shc;
	share_config_default(&shc);
	s->shares = share_create(&shc);
	struct brl_config bc;
	brl_config_default(&bc);
	s->brl = brl_create(&bc);
	nfs4_opens_init(s);
	nfs4_locks_init(s);
	nfs4_conns_init(s);
	nfs4_layouts_init(s);
	atomic_init(&s->pseudo, nfs4_pseudo_build(srv_exports(srv)));

	if ((err = fs_rec_iterate(srv->fs, rec_load, s)))
		msg_warn("nfs4: client records could not all be read: %s", strerror(-err));
	uint64_t seq = 0;
	nfs4_grace_start(s->state, &seq);
	if (seq)
		fs_force(srv->fs, seq, NULL);
	struct nfs4_grace_info gi;
	nfs4_grace_info(s->state, &gi);
	msg_info("nfs4: boot %u, %u known client%s, grace %s", sc.boot_epoch, gi.known,
		 gi.known == 1 ? "" : "s", gi.active ? "started" : "not needed");

	pthread_mutex_init(&s->reap_mu, NULL);
	s->reap_due_ns = UINT64_MAX;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->reap_cv, &ca);
	pthread_condattr_destroy(&ca);
	/* always: an export reloaded with pnfs hands out layouts that must be
	 * recalled like any other */
	nfs4_layouts_start(s);
	if (cfg->fence_cmd)
		s->fence_cmd = xstrdup(cfg->fence_cmd);
	pthread_create(&s->reaper, NULL, reaper_main, s);
	return s;
}

void nfs4_server_destroy(struct nfs4_server *s)
{
	pthread_mutex_lock(&s->reap_mu);
	s->reap_stop = true;
	pthread_cond_signal(&s->reap_cv);
	pthread_mutex_unlock(&s->reap_mu);
	pthread_join(s->reaper, NULL);
	pthread_cond_destroy(&s->reap_cv);
	pthread_mutex_destroy(&s->reap_mu);
	nfs4_state_destroy(s->state); /* releases every open and lock */
	nfs4_layouts_destroy(s);
	nfs4_conns_destroy(s);
	nfs4_locks_destroy(s);
	nfs4_opens_destroy(s);
	brl_destroy(s->brl);
	share_destroy(s->shares);
	nfs4_pseudo_free(atomic_load(&s->pseudo));
	free(s->fence_cmd);
	free(s);
}

struct nfs4_pseudo *nfs4_exports_changed(struct nfs4_server *s)
{
	/* the first pnfs export may come with a reload; one that goes leaves
	 * pNFS on, since its clients may still hold layouts */
	if (any_pnfs(srv_exports(s->srv)))
		atomic_store(&s->pnfs, true);
	struct nfs4_pseudo *p = nfs4_pseudo_build(srv_exports(s->srv));
	return atomic_exchange(&s->pseudo, p);
}

void nfs4_pseudo_put(struct nfs4_pseudo *p)
{
	nfs4_pseudo_free(p);
}

void nfs4_test_hold_ends(struct nfs4_server *s, bool on)
{
	nfs4_stid_hold_ends(s->state, on);
}

void nfs4_stats(struct nfs4_server *s, const struct stat_sink *sink)
{
	stat_emit(sink, "nfs4.compounds", counter_get(&s->st.compounds));
	stat_emit(sink, "nfs4.compound_replays", counter_get(&s->st.replays));
	stat_emit(sink, "nfs4.too_many_ops", counter_get(&s->st.too_many_ops));
	stat_emit(sink, "nfs4.minor_vers_mismatch", counter_get(&s->st.minor_mismatch));
	stat_emit(sink, "nfs4.cb.calls", counter_get(&s->st.cb_calls));
	stat_emit(sink, "nfs4.cb.replies", counter_get(&s->st.cb_replies));
	stat_emit(sink, "nfs4.cb.delays", counter_get(&s->st.cb_delays));
	stat_emit(sink, "nfs4.cb.resyncs", counter_get(&s->st.cb_resyncs));
	stat_emit(sink, "nfs4.cb.failures", counter_get(&s->st.cb_failures));
	stat_emit(sink, "nfs4.layout.gets", counter_get(&s->st.layoutgets));
	stat_emit(sink, "nfs4.layout.commits", counter_get(&s->st.layoutcommits));
	stat_emit(sink, "nfs4.layout.returns", counter_get(&s->st.layoutreturns));
	stat_emit(sink, "nfs4.layout.recalls_sent", counter_get(&s->st.recalls_sent));
	stat_emit(sink, "nfs4.layout.recalls_resent", counter_get(&s->st.recalls_resent));
	stat_emit(sink, "nfs4.layout.recalls_answered", counter_get(&s->st.recalls_answered));
	stat_emit(sink, "nfs4.layout.recalls_failed", counter_get(&s->st.recalls_failed));
	stat_emit(sink, "nfs4.layout.fenced", counter_get(&s->st.fenced));
	stat_emit(sink, "nfs4.layout.fence_failed", counter_get(&s->st.fence_failed));
	stat_emit(sink, "nfs4.layout.recall_waits", counter_get(&s->st.recall_waits));
	stat_emit(sink, "nfs4.layout.recall_waits_own", counter_get(&s->st.recall_waits_own));
	stat_emit(sink, "nfs4.delays", counter_get(&s->st.delays));
	stat_emit(sink, "nfs4.delays_after_wait", counter_get(&s->st.delays_after_wait));
	for (unsigned op = 0; op < nfs4_nops; op++) {
		const struct nfs4_op_stats *os = &s->ops[op];
		uint64_t calls = counter_get(&os->calls);
		if (!nfs4_ops[op].name || !calls)
			continue;
		char name[64];
		snprintf(name, sizeof(name), "nfs4.op.%s", nfs4_ops[op].name);
		stat_emit(sink, name, calls);
		snprintf(name, sizeof(name), "nfs4.op.%s.errors", nfs4_ops[op].name);
		stat_emit(sink, name, counter_get(&os->errors));
		snprintf(name, sizeof(name), "nfs4.op.%s", nfs4_ops[op].name);
		stat_emit_lat(sink, name, &os->lat);
	}
	nfs4_state_stats(s->state, sink);
	brl_stats(s->brl, sink);
	share_stats(s->shares, sink);
}
