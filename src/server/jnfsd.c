/*
 * jnfsd - the jnfs NFS server.
 *
 * For now it serves the NULL procedure of NFS (100003, v3 and v4) and of
 * MOUNT (100005, v3) on every --listen address, registers them with
 * rpcbind when one runs, and stops cleanly on SIGTERM or SIGINT. SIGUSR1
 * prints the RPC counters on stdout.
 *
 * Signals: they are blocked in every thread (the mask is set before any
 * thread starts) and taken synchronously by the main thread with
 * sigwait(), so no handler runs in the middle of RPC code.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/msg.h"
#include "rpc/rpcb.h"
#include "rpc/svc.h"

#define NFS_PROGRAM   100003
#define MOUNT_PROGRAM 100005
#define MAX_LISTEN    16

static enum svc_stat proc_null(struct svc_req *rq, const struct rpc_cred *cred, void *args,
			       void *res)
{
	return SVC_OK;
}

static const struct svc_proc nfs3_procs[] = {
	[0] = {.name = "null", .decode = svc_dec_void, .handler = proc_null, .encode = svc_enc_void},
};
static const struct svc_proc nfs4_procs[] = {
	[0] = {.name = "null", .decode = svc_dec_void, .handler = proc_null, .encode = svc_enc_void},
};
static const struct svc_proc mount3_procs[] = {
	[0] = {.name = "null", .decode = svc_dec_void, .handler = proc_null, .encode = svc_enc_void},
};

static const struct svc_version nfs_versions[] = {
	{.vers = 3, .nprocs = 1, .procs = nfs3_procs},
	{.vers = 4, .nprocs = 1, .procs = nfs4_procs},
};
static const struct svc_version mount_versions[] = {
	{.vers = 3, .nprocs = 1, .procs = mount3_procs},
};

static const struct svc_program nfs_program = {
	.prog = NFS_PROGRAM, .name = "nfs", .nversions = 2, .versions = nfs_versions};
static const struct svc_program mount_program = {
	.prog = MOUNT_PROGRAM, .name = "mount", .nversions = 1, .versions = mount_versions};

static const struct svc_program *const programs[] = {&nfs_program, &mount_program};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: jnfsd [options]\n"
		"  --listen ADDR:PORT     listen here (repeatable; [::1]:2049 for IPv6);\n"
		"                         default 127.0.0.1:2049, port 0 picks a free port\n"
		"  --threads N            worker threads (default 8)\n"
		"  --rpcbind ADDR:PORT    rpcbind to register with (default 127.0.0.1:111),\n"
		"                         or 'off'\n"
		"  --max-conns N          connections (default 1024)\n"
		"  --max-record BYTES     largest call record (default 1 MiB + 64 KiB)\n"
		"  --stall-timeout MS     close a connection stuck mid-record (default 30000)\n"
		"  --idle-timeout MS      close an idle connection (default 0: never)\n"
		"  --port-file FILE       write the bound ports there, one per line\n"
		"Prints 'listening on ADDR:PORT' for each listener once serving.\n");
}

static bool parse_num(const char *s, unsigned long long max, unsigned long long *v)
{
	char *end;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return *s && !*end && !errno && *v <= max;
}

static void print_stat(void *arg, const char *name, uint64_t value)
{
	fprintf(arg, "%s %llu\n", name, (unsigned long long)value);
}

/* Register (set) or unregister every program version on every listener.
 * When rpcbind cannot be reached this logs once and gives up: the server
 * serves anyway, clients that know the port still reach it. */
static void rpcbind_register(const char *rpcbind, struct sockaddr_storage *addrs, int naddrs,
			     bool set)
{
	for (size_t p = 0; p < sizeof(programs) / sizeof(programs[0]); p++) {
		for (uint32_t v = 0; v < programs[p]->nversions; v++) {
			uint32_t prog = programs[p]->prog, vers = programs[p]->versions[v].vers;
			int err = rpcb_unset(rpcbind, prog, vers);
			for (int i = 0; set && !err && i < naddrs; i++)
				err = rpcb_set(rpcbind, prog, vers, &addrs[i]);
			if (err == -EACCES) {
				msg_warn("rpcbind at %s refused to register %u v%u", rpcbind, prog,
					 vers);
			} else if (err) {
				if (set)
					msg_info("rpcbind not reachable at %s (%s); serving without "
						 "registration",
						 rpcbind, strerror(-err));
				return;
			}
		}
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"threads", required_argument, NULL, 't'},
		{"rpcbind", required_argument, NULL, 'r'},
		{"max-conns", required_argument, NULL, 'c'},
		{"max-record", required_argument, NULL, 'm'},
		{"stall-timeout", required_argument, NULL, 's'},
		{"idle-timeout", required_argument, NULL, 'i'},
		{"port-file", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *listen[MAX_LISTEN];
	int nlisten = 0;
	const char *rpcbind = "127.0.0.1:111", *port_file = NULL;
	struct svc_config cfg;
	unsigned long long v;
	int opt;

	msg_set_prog("jnfsd");
	svc_config_default(&cfg);
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'l':
			if (nlisten == MAX_LISTEN) {
				msg_err("at most %d --listen addresses", MAX_LISTEN);
				return 2;
			}
			listen[nlisten++] = optarg;
			break;
		case 't':
			if (!parse_num(optarg, 1024, &v) || v == 0)
				goto bad_value;
			cfg.threads = (unsigned)v;
			break;
		case 'r':
			rpcbind = strcmp(optarg, "off") == 0 ? NULL : optarg;
			break;
		case 'c':
			if (!parse_num(optarg, 1u << 20, &v) || v == 0)
				goto bad_value;
			cfg.max_conns = (unsigned)v;
			break;
		case 'm':
			if (!parse_num(optarg, 0x7fffffffull, &v) || v < 1024)
				goto bad_value;
			cfg.max_record = (size_t)v;
			break;
		case 's':
			if (!parse_num(optarg, 1ull << 40, &v))
				goto bad_value;
			cfg.stall_timeout_ns = v * 1000000ull;
			break;
		case 'i':
			if (!parse_num(optarg, 1ull << 40, &v))
				goto bad_value;
			cfg.idle_timeout_ns = v * 1000000ull;
			break;
		case 'p':
			port_file = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		continue;
	bad_value:
		for (const struct option *o = opts; o->name; o++)
			if (o->val == opt)
				msg_err("bad value '%s' for --%s", optarg, o->name);
		return 2;
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (!nlisten)
		listen[nlisten++] = "127.0.0.1:2049";

	/* block before any thread exists, so every thread inherits the mask */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	struct svc *s = svc_create(&cfg);
	for (size_t p = 0; p < sizeof(programs) / sizeof(programs[0]); p++)
		if (svc_add_program(s, programs[p], NULL))
			panic("cannot register program %u", programs[p]->prog);

	struct sockaddr_storage bound[MAX_LISTEN];
	uint16_t ports[MAX_LISTEN];
	for (int i = 0; i < nlisten; i++) {
		socklen_t len;
		int err = svc_listen(s, listen[i], &ports[i]);
		if (err) {
			msg_err("cannot listen on %s: %s", listen[i],
				err == -EINVAL ? "not ADDR:PORT or [ADDR6]:PORT" : strerror(-err));
			svc_destroy(s);
			return 1;
		}
		svc_parse_addr(listen[i], &bound[i], &len);
		if (bound[i].ss_family == AF_INET)
			((struct sockaddr_in *)&bound[i])->sin_port = htons(ports[i]);
		else
			((struct sockaddr_in6 *)&bound[i])->sin6_port = htons(ports[i]);
	}
	int err = svc_start(s);
	if (err) {
		msg_err("cannot start the RPC service: %s", strerror(-err));
		svc_destroy(s);
		return 1;
	}
	if (rpcbind)
		rpcbind_register(rpcbind, bound, nlisten, true);

	if (port_file) {
		FILE *f = fopen(port_file, "w");
		if (!f) {
			msg_err("cannot write %s: %s", port_file, strerror(errno));
		} else {
			for (int i = 0; i < nlisten; i++)
				fprintf(f, "%u\n", ports[i]);
			fclose(f);
		}
	}
	for (int i = 0; i < nlisten; i++) {
		const char *a = listen[i];
		char host[80];
		if (a[0] == '[') {
			snprintf(host, sizeof(host), "%.*s", (int)(strchr(a, ']') - a + 1), a);
		} else {
			snprintf(host, sizeof(host), "%.*s", (int)(strrchr(a, ':') - a), a);
		}
		printf("listening on %s:%u\n", host, ports[i]);
	}
	fflush(stdout);

	for (;;) {
		int sig;
		if (sigwait(&sigs, &sig))
			continue;
		if (sig == SIGUSR1) {
			struct stat_sink sink = {.emit = print_stat, .arg = stdout};
			svc_stats(s, &sink);
			fflush(stdout);
			continue;
		}
		if (sig == SIGTERM || sig == SIGINT)
			break;
	}
	msg_info("stopping");
	if (rpcbind)
		rpcbind_register(rpcbind, bound, nlisten, false);
	svc_stop(s);
	svc_destroy(s);
	return 0;
}
