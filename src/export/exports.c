/*
 * exports.c - the exports table (see exports.h).
 */
#include "export/exports.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/siphash.h"
#include "fs/fs.h"

static void fail(char *err, size_t errlen, const char *name, unsigned line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char what[256];
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "%s:%u: %s", name, line, what);
}

static const struct export_opts default_opts = {
	.rw = false,
	.sync = true,
	.secure = true,
	.pnfs = false,
	.squash = SQUASH_ROOT,
	.anonuid = 65534,
	.anongid = 65534,
};

static bool parse_u32(const char *s, uint32_t *v)
{
	char *end;
	errno = 0;
	unsigned long x = strtoul(s, &end, 10);
	if (errno || *end || end == s || x > UINT32_MAX)
		return false;
	*v = (uint32_t)x;
	return true;
}

/* Apply a comma-separated option list to o (and fsid). */
static int parse_opts(char *list, struct export_opts *o, uint32_t *fsid, bool *have_fsid,
		      const char **bad)
{
	for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "rw"))
			o->rw = true;
		else if (!strcmp(t, "ro"))
			o->rw = false;
		else if (!strcmp(t, "sync"))
			o->sync = true;
		else if (!strcmp(t, "async"))
			o->sync = false;
		else if (!strcmp(t, "root_squash"))
			o->squash = SQUASH_ROOT;
		else if (!strcmp(t, "no_root_squash"))
			o->squash = SQUASH_NONE;
		else if (!strcmp(t, "all_squash"))
			o->squash = SQUASH_ALL;
		else if (!strcmp(t, "no_all_squash"))
			o->squash = o->squash == SQUASH_ALL ? SQUASH_ROOT : o->squash;
		else if (!strcmp(t, "secure"))
			o->secure = true;
		else if (!strcmp(t, "insecure"))
			o->secure = false;
		else if (!strcmp(t, "pnfs"))
			o->pnfs = true;
		else if (!strcmp(t, "no_pnfs"))
			o->pnfs = false;
		else if (!strcmp(t, "no_subtree_check"))
			;
		else if (!strncmp(t, "anonuid=", 8) && parse_u32(t + 8, &o->anonuid))
			;
		else if (!strncmp(t, "anongid=", 8) && parse_u32(t + 8, &o->anongid))
			;
		else if (!strncmp(t, "fsid=", 5) && parse_u32(t + 5, fsid))
			*have_fsid = true;
		else if (!strcmp(t, "fsid=root") || !strcmp(t, "fsid=0"))
			*fsid = 0, *have_fsid = true;
		else {
			*bad = t;
			return -EINVAL;
		}
	}
	return 0;
}

static int parse_client(const char *s, struct export_client *c)
{
	memset(c, 0, sizeof(*c));
	if (!strcmp(s, "*"))
		return 0;
	char host[128];
	snprintf(host, sizeof(host), "%s", s);
	char *slash = strchr(host, '/');
	long prefix = -1;
	if (slash) {
		char *end;
		*slash = 0;
		prefix = strtol(slash + 1, &end, 10);
		if (*end || end == slash + 1 || prefix < 0)
			return -EINVAL;
	}
	if (inet_pton(AF_INET, host, c->addr) == 1) {
		c->family = AF_INET;
		c->prefix = prefix < 0 ? 32 : (unsigned)prefix;
		return c->prefix <= 32 ? 0 : -EINVAL;
	}
	if (inet_pton(AF_INET6, host, c->addr) == 1) {
		c->family = AF_INET6;
		c->prefix = prefix < 0 ? 128 : (unsigned)prefix;
		return c->prefix <= 128 ? 0 : -EINVAL;
	}
	return -EINVAL;
}

static bool valid_path(const char *p)
{
	if (p[0] != '/')
		return false;
	size_t n = strlen(p);
	if (n > 1 && p[n - 1] == '/')
		return false;
	return !strstr(p, "//") && !strstr(p, "/./") && !strstr(p, "/../") &&
	       strcmp(p + (n >= 2 ? n - 2 : 0), "/.") && strcmp(p + (n >= 3 ? n - 3 : 0), "/..");
}

int exports_parse(const char *text, const char *name, struct exports *out, char *err,
		  size_t errlen)
{
	memset(out, 0, sizeof(*out));
	char *buf = xstrdup(text);
	/* join continuation lines, keeping line numbers for messages */
	unsigned lineno = 0, start_line = 0;
	char *p = buf;
	int rc = 0;
	char *logical = xmalloc(strlen(text) + 1);
	size_t llen = 0;
	while (*p || llen) {
		char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		lineno++;
		if (!llen)
			start_line = lineno;
		bool cont = n && p[n - 1] == '\\';
		memcpy(logical + llen, p, cont ? n - 1 : n);
		llen += cont ? n - 1 : n;
		logical[llen] = ' ';
		p = nl ? nl + 1 : p + n;
		if (cont && (nl || *p))
			continue;
		logical[llen] = 0;
		llen = 0;
		char *hash = strchr(logical, '#');
		if (hash)
			*hash = 0;
		char *save = NULL, *tok = strtok_r(logical, " \t\r", &save);
		if (!tok) {
			if (!*p)
				break;
			continue;
		}
		if (!valid_path(tok)) {
			fail(err, errlen, name, start_line, "'%s' is not an absolute path", tok);
			rc = -EINVAL;
			goto out;
		}
		struct export ex = {.path = xstrdup(tok), .line = start_line};
		struct export_opts defaults = default_opts;
		uint32_t fsid = 0;
		bool have_fsid = false;
		for (tok = strtok_r(NULL, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
			const char *bad = NULL;
			if (tok[0] == '-') {
				if (parse_opts(tok + 1, &defaults, &fsid, &have_fsid, &bad)) {
					fail(err, errlen, name, start_line, "unknown option '%s'", bad);
					rc = -EINVAL;
				}
			} else {
				char *paren = strchr(tok, '(');
				struct export_client c;
				if (paren) {
					size_t tl = strlen(tok);
					if (tok[tl - 1] != ')') {
						fail(err, errlen, name, start_line,
						     "unterminated options in '%s'", tok);
						rc = -EINVAL;
						goto bad_export;
					}
					tok[tl - 1] = 0;
					*paren = 0;
				}
				if (parse_client(tok, &c)) {
					fail(err, errlen, name, start_line, "'%s' is not a client (*, an "
									    "address or a network)",
					     tok);
					rc = -EINVAL;
					goto bad_export;
				}
				c.opts = defaults;
				if (paren && parse_opts(paren + 1, &c.opts, &fsid, &have_fsid, &bad)) {
					fail(err, errlen, name, start_line, "unknown option '%s'", bad);
					rc = -EINVAL;
					goto bad_export;
				}
				ex.clients = xrealloc(ex.clients, (ex.nclients + 1) * sizeof(c));
				ex.clients[ex.nclients++] = c;
			}
			if (rc)
				goto bad_export;
		}
		if (!ex.nclients) {
			fail(err, errlen, name, start_line, "export %s names no client", ex.path);
			rc = -EINVAL;
			goto bad_export;
		}
		if (exports_by_path(out, ex.path)) {
			fail(err, errlen, name, start_line, "%s is exported twice", ex.path);
			rc = -EINVAL;
			goto bad_export;
		}
		/* the others are derived once the roots are known (exports_resolve) */
		for (unsigned i = 0; have_fsid && i < out->n; i++) {
			if (out->v[i].fsid_given && out->v[i].fsid == fsid) {
				fail(err, errlen, name, start_line,
				     "fsid %u is used twice: by %s here and by %s on line %u", fsid,
				     ex.path, out->v[i].path, out->v[i].line);
				rc = -EINVAL;
				goto bad_export;
			}
		}
		ex.fsid = have_fsid ? fsid : 0;
		ex.fsid_given = have_fsid;
		out->v = xrealloc(out->v, (out->n + 1) * sizeof(ex));
		out->v[out->n++] = ex;
		continue;
	bad_export:
		free(ex.path);
		free(ex.clients);
		goto out;
	}
	if (!out->n) {
		fail(err, errlen, name, lineno ? lineno : 1, "no exports");
		rc = -EINVAL;
	}
out:
	free(logical);
	free(buf);
	if (rc)
		exports_free(out);
	return rc;
}

int exports_load(const char *path, struct exports *out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	size_t cap = 4096, n = 0;
	char *text = xmalloc(cap);
	size_t got;
	while ((got = fread(text + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (n + 1 == cap)
			text = xrealloc(text, cap *= 2);
	}
	text[n] = 0;
	fclose(f);
	int rc = memchr(text, 0, n) ? -EINVAL : exports_parse(text, path, out, err, errlen);
	if (rc && memchr(text, 0, n))
		snprintf(err, errlen, "%s: not a text file", path);
	free(text);
	return rc;
}

void exports_free(struct exports *e)
{
	for (unsigned i = 0; i < e->n; i++) {
		free(e->v[i].path);
		free(e->v[i].clients);
	}
	free(e->v);
	e->v = NULL;
	e->n = 0;
}

int exports_resolve(struct exports *e, struct fs *fs, const char *name, char *err, size_t errlen)
{
	for (unsigned i = 0; i < e->n; i++) {
		struct export *ex = &e->v[i];
		struct fs_inode *ip;
		int rc = fs_root(fs, &ip);
		char *path = xstrdup(ex->path);
		for (char *save = NULL, *c = strtok_r(path, "/", &save); c && !rc;
		     c = strtok_r(NULL, "/", &save)) {
			struct fs_inode *next;
			rc = fs_lookup(ip, c, strlen(c), &next);
			fs_iput(ip);
			ip = rc ? NULL : next;
		}
		free(path);
		struct fs_attr a;
		if (!rc) {
			fs_getattr(ip, &a);
			fs_iput(ip);
			if ((a.mode & 0170000) != 0040000)
				rc = -ENOTDIR;
		}
		if (rc) {
			fail(err, errlen, name, ex->line, "cannot export %s: %s", ex->path,
			     strerror(-rc));
			return rc;
		}
		ex->root_ino = a.ino;
		ex->root_gen = a.gen;
		if (!ex->fsid_given)
			ex->fsid = export_fsid_derive(a.ino, a.gen);
	}
	/* a handle names its export by fsid alone: two alike would let one
	 * export's handles be taken for the other's */
	for (unsigned j = 1; j < e->n; j++) {
		for (unsigned i = 0; i < j; i++) {
			const struct export *a = &e->v[i], *b = &e->v[j];
			if (a->fsid != b->fsid)
				continue;
			fail(err, errlen, name, b->line,
			     "%s has the same fsid (%u) as %s on line %u; give one of them "
			     "another fsid=",
			     b->path, b->fsid, a->path, a->line);
			return -EINVAL;
		}
	}
	return 0;
}

uint32_t export_fsid_derive(uint64_t root_ino, uint32_t root_gen)
{
	/* a fixed key: the fsid only has to be stable and spread, not secret
	 * (handles are authenticated by their own MAC) */
	static const uint8_t key[16] = {'j', 'n', 'f', 's', ' ', 'e', 'x', 'p',
					'o', 'r', 't', ' ', 'f', 's', 'i', 'd'};
	uint8_t in[12];
	for (int i = 0; i < 8; i++)
		in[i] = (uint8_t)(root_ino >> (8 * i));
	for (int i = 0; i < 4; i++)
		in[8 + i] = (uint8_t)(root_gen >> (8 * i));
	uint64_t h = siphash24(key, in, sizeof(in));
	return (uint32_t)(h ^ (h >> 32));
}

const struct export *exports_by_path(const struct exports *e, const char *path)
{
	for (unsigned i = 0; i < e->n; i++)
		if (!strcmp(e->v[i].path, path))
			return &e->v[i];
	return NULL;
}

const struct export *exports_by_fsid(const struct exports *e, uint32_t fsid)
{
	for (unsigned i = 0; i < e->n; i++)
		if (e->v[i].fsid == fsid)
			return &e->v[i];
	return NULL;
}

static bool prefix_match(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned bytes = bits / 8, rest = bits % 8;
	if (memcmp(a, b, bytes))
		return false;
	if (!rest)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (a[bytes] & mask) == (b[bytes] & mask);
}

const struct export_opts *export_client_opts(const struct export *ex,
					     const struct sockaddr_storage *peer)
{
	uint8_t v4[4], v6[16];
	bool is4 = false, is6 = false;
	if (peer->ss_family == AF_INET) {
		memcpy(v4, &((const struct sockaddr_in *)peer)->sin_addr, 4);
		is4 = true;
	} else if (peer->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)peer)->sin6_addr;
		memcpy(v6, a, 16);
		is6 = true;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			memcpy(v4, v6 + 12, 4);
			is4 = true;
		}
	}
	for (unsigned i = 0; i < ex->nclients; i++) {
		const struct export_client *c = &ex->clients[i];
		if (c->family == 0 || (c->family == AF_INET && is4 && prefix_match(c->addr, v4, c->prefix)) ||
		    (c->family == AF_INET6 && is6 && prefix_match(c->addr, v6, c->prefix)))
			return &c->opts;
	}
	return NULL;
}

bool export_peer_secure(const struct sockaddr_storage *peer)
{
	uint16_t port = 0;
	if (peer->ss_family == AF_INET)
		port = ntohs(((const struct sockaddr_in *)peer)->sin_port);
	else if (peer->ss_family == AF_INET6)
		port = ntohs(((const struct sockaddr_in6 *)peer)->sin6_port);
	return port < 1024;
}

void export_squash(const struct export_opts *o, bool auth_sys, uint32_t uid, uint32_t gid,
		   const uint32_t *groups, unsigned ngroups, struct export_cred *out)
{
	memset(out, 0, sizeof(*out));
	if (!auth_sys || o->squash == SQUASH_ALL) {
		out->uid = o->anonuid;
		out->gid = o->anongid;
		return;
	}
	out->uid = uid;
	out->gid = gid;
	out->ngroups = ngroups > EXPORT_MAX_GROUPS ? EXPORT_MAX_GROUPS : ngroups;
	if (out->ngroups)
		memcpy(out->groups, groups, out->ngroups * sizeof(*groups));
	if (o->squash == SQUASH_ROOT) {
		if (out->uid == 0)
			out->uid = o->anonuid;
		if (out->gid == 0)
			out->gid = o->anongid;
		for (uint32_t i = 0; i < out->ngroups; i++)
			if (out->groups[i] == 0)
				out->groups[i] = o->anongid;
	}
}
