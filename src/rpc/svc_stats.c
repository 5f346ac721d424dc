/*
 * svc_stats.c - the service's counters as "name value" lines:
 *   rpc.calls, rpc.replies.<status>, rpc.bytes_in, rpc.bytes_out,
 *   rpc.connections (open now), rpc.connections_accepted/_closed/_refused/
 *   _garbage/_too_big/_stalled/_idle/_evicted (closed to make room for a
 *   new one)/_send_timeout (replies not read)/_partial (closed because
 *   incomplete records of all connections passed partial_max),
 *   _pressure (replies not read while past max_buffered),
 *   rpc.partial_bytes (what incomplete records hold now), rpc.buffered
 *   (calls read and not answered plus reply space reserved, now),
 *   rpc.calls_held (calls that
 *   waited for reply space), rpc.limits.max_conns/.conn_max_buffered/
 *   .idle_timeout_ms/.send_timeout_ms/.stall_timeout_ms/.partial_max/
 *   .max_buffered (the configuration,
 *   0 = off), rpc.drc_hits, rpc.drc_in_progress_drops,
 *   rpc.drc_entries/_bytes/_evictions/_in_progress_entries, rpc.deferred,
 *   rpc.deferred_timeouts,
 *   rpc.deferred_wakes, rpc.cb.calls/replies/timeouts/cancelled/unmatched/
 *   errors, and rpc.<program>.v<version>.<procedure> per procedure with
 *   its reply latency histogram (call arrival to reply; as text .p50_us and
 *   .p99_us, the upper bound of the power-of-two bucket, once it has
 *   replies). rpc.connections, rpc.buffered, rpc.partial_bytes, the drc
 *   sizes and rpc.limits.* are gauges.
 */
#include <stdio.h>

#include "base/time.h"
#include "rpc/svc_internal.h"

void svc_stats(struct svc *s, const struct stat_sink *sink)
{
	static const char *const kinds[REPLY_NKINDS] = {
		"success",      "prog_unavail", "prog_mismatch", "proc_unavail", "garbage_args",
		"system_err",   "rpc_mismatch", "auth_error",    "dropped"};
	const struct svc_counters *st = &s->st;
	stat_emit(sink, "rpc.calls", counter_get(&st->calls));
	for (int i = 0; i < REPLY_NKINDS; i++)
		stat_emitf(sink, "rpc.replies", kinds[i], counter_get(&st->replies[i]));
	stat_emit(sink, "rpc.bytes_in", counter_get(&st->bytes_in));
	stat_emit(sink, "rpc.bytes_out", counter_get(&st->bytes_out));
	mutex_lock(&s->conns_lock);
	uint64_t nconns = s->nconns;
	mutex_unlock(&s->conns_lock);
	stat_gauge(sink, "rpc.connections", nconns);
	stat_emit(sink, "rpc.connections_accepted", counter_get(&st->conns_accepted));
	stat_emit(sink, "rpc.connections_closed", counter_get(&st->conns_closed));
	stat_emit(sink, "rpc.connections_refused", counter_get(&st->conns_refused));
	stat_emit(sink, "rpc.connections_garbage", counter_get(&st->conns_garbage));
	stat_emit(sink, "rpc.connections_too_big", counter_get(&st->conns_too_big));
	stat_emit(sink, "rpc.connections_stalled", counter_get(&st->conns_stalled));
	stat_emit(sink, "rpc.connections_idle", counter_get(&st->conns_idle));
	stat_emit(sink, "rpc.connections_evicted", counter_get(&st->conns_evicted));
	stat_emit(sink, "rpc.connections_send_timeout", counter_get(&st->conns_send_timeout));
	stat_emit(sink, "rpc.connections_partial", counter_get(&st->conns_partial));
	stat_emit(sink, "rpc.connections_pressure", counter_get(&st->conns_pressure));
	stat_gauge(sink, "rpc.buffered", atomic_load(&s->buffered));
	stat_gauge(sink, "rpc.partial_bytes",
		   atomic_load_explicit(&s->partial_bytes, memory_order_relaxed));
	stat_emit(sink, "rpc.calls_held", counter_get(&st->calls_held));
	stat_gauge(sink, "rpc.limits.max_conns", s->cfg.max_conns);
	stat_gauge(sink, "rpc.limits.conn_max_buffered", s->cfg.conn_max_buffered);
	stat_gauge(sink, "rpc.limits.idle_timeout_ms", s->cfg.idle_timeout_ns / NSEC_PER_MSEC);
	stat_gauge(sink, "rpc.limits.send_timeout_ms", s->cfg.send_timeout_ns / NSEC_PER_MSEC);
	stat_gauge(sink, "rpc.limits.stall_timeout_ms", s->cfg.stall_timeout_ns / NSEC_PER_MSEC);
	stat_gauge(sink, "rpc.limits.partial_max", s->cfg.partial_max);
	stat_gauge(sink, "rpc.limits.max_buffered", s->cfg.max_buffered);
	stat_emit(sink, "rpc.drc_hits", counter_get(&st->drc_hits));
	stat_emit(sink, "rpc.drc_in_progress_drops", counter_get(&st->drc_in_progress));
	drc_stats(s->drc, sink, "rpc");
	stat_emit(sink, "rpc.deferred", counter_get(&st->deferred));
	stat_emit(sink, "rpc.deferred_timeouts", counter_get(&st->deferred_timeouts));
	stat_emit(sink, "rpc.deferred_wakes", counter_get(&st->deferred_wakes));
	stat_emit(sink, "rpc.cb.calls", counter_get(&st->cb_calls));
	stat_emit(sink, "rpc.cb.replies", counter_get(&st->cb_replies));
	stat_emit(sink, "rpc.cb.timeouts", counter_get(&st->cb_timeouts));
	stat_emit(sink, "rpc.cb.cancelled", counter_get(&st->cb_cancelled));
	stat_emit(sink, "rpc.cb.unmatched", counter_get(&st->cb_unmatched));
	stat_emit(sink, "rpc.cb.errors", counter_get(&st->cb_errors));
	for (unsigned i = 0; i < s->nprogs; i++) {
		const struct svc_program *p = s->progs[i].p;
		for (uint32_t v = 0; v < p->nversions; v++) {
			const struct svc_version *ver = &p->versions[v];
			for (uint32_t k = 0; k < ver->nprocs; k++) {
				if (!ver->procs[k].handler)
					continue;
				char name[96];
				snprintf(name, sizeof(name), "rpc.%s.v%u.%s", p->name, ver->vers,
					 ver->procs[k].name);
				stat_emit(sink, name, counter_get(&s->progs[i].proc_calls[v][k]));
				stat_emit_lat(sink, name, &s->progs[i].proc_lat[v][k]);
			}
		}
	}
}
