/*
 * jnfs - the administration tool.
 *
 *   jnfs mkfs IMAGE [--size SIZE] [--log-size SIZE] [--log-device PATH] [--label L]
 *   jnfs check IMAGE [--log-device PATH]
 *   jnfs stat IMAGE [--log-device PATH]
 *   jnfs stat --server ADDR:PORT   (a running jnfsd's counters)
 *   jnfs io IMAGE [--crash] [--flush-latency-us N] [--log-device PATH] -c CMD [-c CMD ...]
 *   jnfs pnfs URL --device PATH COMMAND ...   (a pNFS block layout client, cmd_pnfs.c)
 *
 * Sizes take K, M, G, T suffixes (base/parse.h). `io` runs one command per -c against the
 * engine, like xfs_io; see cmd_io.c. Errors print the errno name; the exit
 * status is non-zero after any error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/msg.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "fs/fs.h"
#include "rpc/clnt.h"
#include "rpc/svc.h"
#include "daemon/admin.h"
#include "jnfs_version.h"

const char *cli_errname(int err)
{
	const char *n = strerrorname_np(err < 0 ? -err : err);
	return n ? n : "EUNKNOWN";
}

int cli_open_devices(const char *image, const char *logdev, bool create, uint64_t size,
		     struct dev **ddev, struct dev **ldev)
{
	*ldev = NULL;
	/* the log device first: it is never created, and an image made for
	 * a log device that is not there would be left behind */
	if (logdev) {
		int err = dev_file_open(logdev, 0, 0, ldev);
		if (err) {
			fprintf(stderr, "jnfs: cannot open log device %s: %s\n", logdev,
				strerror(-err));
			return err;
		}
	}
	int err = dev_file_open(image, create ? DEV_OPEN_CREATE : 0, size, ddev);
	if (err) {
		fprintf(stderr, "jnfs: cannot open %s: %s\n", image, strerror(-err));
		dev_close(*ldev);
		*ldev = NULL;
		return err;
	}
	return 0;
}

static int cmd_mkfs(int argc, char **argv)
{
	uint64_t size = 0, log_size = 0;
	const char *logdev = NULL, *label = NULL;
	static const struct option opts[] = {{"size", required_argument, NULL, 's'},
					     {"log-size", required_argument, NULL, 'l'},
					     {"log-device", required_argument, NULL, 'L'},
					     {"label", required_argument, NULL, 'n'},
					     {NULL, 0, NULL, 0}};
	int o;
	while ((o = getopt_long(argc, argv, "s:l:L:n:", opts, NULL)) != -1) {
		if ((o == 's' && parse_size(optarg, &size)) ||
		    (o == 'l' && parse_size(optarg, &log_size))) {
			fprintf(stderr, "jnfs mkfs: bad size '%s'\n", optarg);
			return 2;
		}
		if (o == 'L')
			logdev = optarg;
		else if (o == 'n')
			label = optarg;
		else if (o == '?')
			return 2;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: jnfs mkfs IMAGE [--size SIZE] [--log-size SIZE] "
				"[--log-device PATH] [--label L]\n");
		return 2;
	}
	struct dev *d, *l;
	if (cli_open_devices(argv[optind], logdev, true, size, &d, &l))
		return 1;
	if (size && dev_size(d) < size)
		fprintf(stderr, "jnfs mkfs: %s is smaller than --size; using %llu bytes\n",
			argv[optind], (unsigned long long)dev_size(d));
	int err = fs_mkfs(
		&(struct fs_mkfs_opts){.ddev = d, .ldev = l, .log_size = log_size, .label = label});
	if (!err)
		printf("jnfs mkfs: %s: %llu blocks of %u bytes\n", argv[optind],
		       (unsigned long long)(dev_size(d) / 4096), 4096);
	else
		fprintf(stderr, "jnfs mkfs: %s\n", cli_errname(err));
	dev_close(l);
	dev_close(d);
	return err ? 1 : 0;
}

static int mount_image(int argc, char **argv, const char *what, bool check, struct dev **d,
		       struct dev **l, struct fs **fs)
{
	const char *logdev = NULL;
	static const struct option opts[] = {{"log-device", required_argument, NULL, 'L'},
					     {NULL, 0, NULL, 0}};
	int o;
	while ((o = getopt_long(argc, argv, "L:", opts, NULL)) != -1) {
		if (o == 'L')
			logdev = optarg;
		else
			return 2;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: jnfs %s IMAGE [--log-device PATH]\n", what);
		return 2;
	}
	if (cli_open_devices(argv[optind], logdev, false, 0, d, l))
		return 1;
	int err = fs_mount(&(struct fs_mount_opts){.ddev = *d, .ldev = *l, .readonly_check = check},
			   fs);
	if (err) {
		fprintf(stderr, "jnfs %s: %s cannot be mounted: %s\n", what, argv[optind],
			cli_errname(err));
		dev_close(*l);
		dev_close(*d);
		return 1;
	}
	return 0;
}

static int cmd_check(int argc, char **argv)
{
	struct dev *d, *l;
	struct fs *fs;
	int r = mount_image(argc, argv, "check", true, &d, &l, &fs);
	if (r)
		return r;
	uint64_t problems = 0;
	int err = fs_check(fs, stdout, &problems);
	/* nothing was changed: a clean unmount only writes the unmount record;
	 * a damaged filesystem is left exactly as it is */
	if (err || problems)
		fs_shutdown(fs, "check found damage");
	fs_unmount(fs);
	dev_close(l);
	dev_close(d);
	if (err) {
		fprintf(stderr, "jnfs check: %s\n", cli_errname(err));
		return 1;
	}
	if (problems) {
		printf("jnfs check: %llu problems\n", (unsigned long long)problems);
		return 1;
	}
	printf("jnfs check: clean\n");
	return 0;
}

struct stats_text {
	char *p;
	uint32_t len;
};

/* A copy: the reply's buffer is gone once the call returns. */
static int dec_stats(struct xdr_dec *x, void *res)
{
	struct stats_text *t = res;
	const void *p;
	int err = xdr_dec_opaque_ref(x, JNFS_ADMIN_MAX_STATS, &p, &t->len);
	if (!err) {
		t->p = xmalloc(t->len + 1);
		memcpy(t->p, p, t->len);
	}
	return err;
}

int cli_server_stats(const char *addr, char **text, size_t *len)
{
	int fd = rpc_clnt_connect(addr, 10000);
	if (fd < 0)
		return fd;
	struct stats_text t = {0};
	struct rpc_reply_hdr rh;
	int err = rpc_clnt_call(fd, 1, JNFS_ADMIN_PROG, JNFS_ADMIN_VERS, JNFS_ADMIN_PROC_STATS,
				NULL, svc_enc_void, NULL, dec_stats, &t, &rh);
	close(fd);
	if (err)
		return err;
	t.p[t.len] = '\0';
	*text = t.p;
	*len = t.len;
	return 0;
}

int cli_stat_value(const char *text, const char *name, uint64_t *v)
{
	size_t n = strlen(name);
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (!strncmp(l, name, n) && l[n] == ' ') {
			*v = strtoull(l + n + 1, NULL, 10);
			return 0;
		}
	}
	*v = 0;
	return -ENOENT;
}

/* A running server's counters, through its administration program. */
static int server_stat(const char *addr)
{
	char *text;
	size_t len;
	int err = cli_server_stats(addr, &text, &len);
	if (err) {
		fprintf(stderr, "jnfs stat: %s: %s\n", addr,
			err == -EPROTO ? "not a jnfsd (the call was refused)" : strerror(-err));
		return 1;
	}
	int status = 0;
	if (len == 0) {
		fprintf(stderr, "jnfs stat: %s answers only on its loopback address\n", addr);
		status = 1;
	}
	fwrite(text, 1, len, stdout);
	free(text);
	return status;
}

static int cmd_stat(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--server"))
		return server_stat(argv[2]);
	if (argc == 2 && !strncmp(argv[1], "--server=", 9))
		return server_stat(argv[1] + 9);
	struct dev *d, *l;
	struct fs *fs;
	int r = mount_image(argc, argv, "stat", false, &d, &l, &fs);
	if (r)
		return r;
	struct fs_statfs st;
	fs_statfs(fs, &st);
	printf("fs.blocks %llu\nfs.blocks_free %llu\nfs.files %llu\nfs.files_free %llu\n",
	       (unsigned long long)st.blocks, (unsigned long long)st.bfree,
	       (unsigned long long)st.files, (unsigned long long)st.ffree);
	struct stat_sink s = stat_sink_file(stdout);
	fs_stats(fs, &s);
	int err = fs_unmount(fs);
	dev_close(l);
	dev_close(d);
	return err ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: jnfs <command> [args]\n"
		   "  mkfs IMAGE [--size SIZE] [--log-size SIZE] [--log-device PATH] [--label L]\n"
		   "  check IMAGE [--log-device PATH]\n"
		   "  stat IMAGE [--log-device PATH]\n"
		   "  stat --server ADDR:PORT\n"
		   "  io IMAGE [--crash] [--flush-latency-us N] [--log-device PATH] -c CMD ...\n"
		   "  pnfs URL --device PATH [options] COMMAND [ARGS]   (jnfs pnfs --help)\n"
		   "  help | --version\n");
}

int main(int argc, char **argv)
{
	msg_set_prog("jnfs");
	if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("jnfs %s (%s)\n", JNFS_VERSION, JNFS_COMMIT);
		return 0;
	}
	const char *cmd = argv[1];
	argc--;
	argv++;
	if (strcmp(cmd, "mkfs") == 0)
		return cmd_mkfs(argc, argv);
	if (strcmp(cmd, "check") == 0)
		return cmd_check(argc, argv);
	if (strcmp(cmd, "stat") == 0)
		return cmd_stat(argc, argv);
	if (strcmp(cmd, "io") == 0)
		return cli_io(argc, argv);
	if (strcmp(cmd, "pnfs") == 0)
		return cli_pnfs(argc, argv);
	fprintf(stderr, "jnfs: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
