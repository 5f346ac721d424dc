/*
 * recover.c - log recovery at mount.
 *
 * 1. Find the newest record: scan the region for headers that carry the
 *    filesystem's UUID and their own LSN, and take the highest LSN whose
 *    CRC holds and whose tail record is intact. Its h_tail is where replay
 *    must start. (A record whose tail record is torn belongs to a checkpoint
 *    that was still being written: its own first record was the tail. It
 *    cannot be a commit record, which is written only after a flush made
 *    every earlier record durable, so passing over it loses nothing.)
 * 2. Walk the chain from that tail: each record must sit at the expected
 *    LSN, pass its CRC and name the CRC of the record before it. The walk
 *    ends at the first record that does not: that is the head. Records
 *    beyond a torn write never join the chain.
 * 3. Collect checkpoints in walk order; one that has no commit record (torn
 *    or never written) is ignored (G1), and nothing after the head counts,
 *    so what is replayed is a prefix of the checkpoints (G2).
 * 4. Replay in two passes through the item types' recover functions (pass 1
 *    lets the buffer item collect cancelled blocks), write the blocks back
 *    and flush the data device.
 *
 * If the newest record was itself left beyond a torn write (it cannot join
 * the chain), its tail is older than the true one; the walk from it is still
 * valid because nothing behind that older tail has been overwritten since.
 * 5. Valid records found beyond the head (left behind a torn write) get
 *    their header zeroed before the log is written again, so that a later
 *    mount cannot take one of them for the newest record: after a clean
 *    unmount, the unmount record is then the newest and nothing is replayed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hashmap.h"
#include "base/mem.h"
#include "base/msg.h"
#include "log/log_priv.h"

struct log_recovery {
	struct log *rc_log;
	uint64_t rc_ckpt;
	struct hashmap rc_blocks; /* daddr -> struct rc_block */
	void *rc_private[LOG_ITEM_MAX];
};

struct rc_block {
	uint64_t len; /* 8 bytes, so that data is aligned for its owner's structs */
	uint8_t data[];
};

struct rc_ckpt {
	uint64_t csn;
	uint32_t next_index;
	uint8_t *data;
	size_t len, cap;
};

bool log_rec_valid_header(const struct log *log, const struct log_rec_hdr *h, uint64_t pos)
{
	return le32toh(h->h_magic) == LOG_REC_MAGIC && le16toh(h->h_version) == LOG_REC_VERSION &&
	       le64toh(h->h_lsn) == log_pos_to_lsn(log, pos) &&
	       le32toh(h->h_log_bbs) == log->l_bbs && memcmp(h->h_uuid, log->l_p.uuid, 16) == 0 &&
	       !(le16toh(h->h_flags) & ~(LOG_REC_START | LOG_REC_COMMIT | LOG_REC_UNMOUNT)) &&
	       le32toh(h->h_len) <= LOG_MAX_BUF_SIZE;
}

static int log_read_bbs(struct log *log, uint64_t pos, uint64_t nbb, void *buf)
{
	uint64_t phys = pos % log->l_bbs;
	uint64_t first = MIN(nbb, log->l_bbs - phys);
	int err = dev_read(log->l_ldev, buf, first * LOG_BB_SIZE, log->l_off + phys * LOG_BB_SIZE);
	if (!err && first < nbb)
		err = dev_read(log->l_ldev, (uint8_t *)buf + first * LOG_BB_SIZE,
			       (nbb - first) * LOG_BB_SIZE, log->l_off);
	return err;
}

/*
 * Read the record at pos into buf (LOG_BB_SIZE + LOG_MAX_BUF_SIZE bytes).
 * Returns 1 if it is a valid record, 0 if not, -errno on a read error.
 */
static int rec_read(struct log *log, uint64_t pos, uint8_t *buf)
{
	struct log_rec_hdr *h = (struct log_rec_hdr *)buf;
	int err = log_read_bbs(log, pos, 1, buf);
	if (err)
		return err;
	if (!log_rec_valid_header(log, h, pos))
		return 0;
	uint32_t len = le32toh(h->h_len);
	uint64_t nbb = DIV_ROUND_UP((uint64_t)len, LOG_BB_SIZE);
	if (nbb) {
		err = log_read_bbs(log, pos + 1, nbb, buf + LOG_BB_SIZE);
		if (err)
			return err;
	}
	return log_rec_crc(h, buf + LOG_BB_SIZE, len) == le32toh(h->h_crc);
}

static struct log_rec_hdr *h_of(uint8_t *buf)
{
	return (struct log_rec_hdr *)buf;
}

static int cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

static void fmt_uuid(char *out, const uint8_t *u)
{
	for (int i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", u[i]);
}

/* Step 1: the position of the newest valid record, in *newest; every
 * plausible header position in *cands (sorted, newest first). */
static int find_newest(struct log *log, uint8_t *rbuf, uint64_t *newest, uint64_t **cands,
		       size_t *ncands)
{
	const uint64_t chunk_bbs = 2048;
	uint8_t *chunk = xmalloc(chunk_bbs * LOG_BB_SIZE);
	uint64_t *cand = NULL;
	size_t ncand = 0, cap = 0, foreign = 0;
	uint8_t foreign_uuid[16];
	int err = 0;

	for (uint64_t start = 0; start < log->l_bbs && !err; start += chunk_bbs) {
		uint64_t n = MIN(chunk_bbs, log->l_bbs - start);
		err = dev_read(log->l_ldev, chunk, n * LOG_BB_SIZE,
			       log->l_off + start * LOG_BB_SIZE);
		for (uint64_t i = 0; i < n && !err; i++) {
			const struct log_rec_hdr *h =
				(const struct log_rec_hdr *)(chunk + i * LOG_BB_SIZE);
			if (le32toh(h->h_magic) != LOG_REC_MAGIC ||
			    le16toh(h->h_version) != LOG_REC_VERSION)
				continue;
			uint64_t lsn = le64toh(h->h_lsn);
			if ((lsn & 0xffffffffu) != start + i || (lsn >> 32) == 0)
				continue;
			if (memcmp(h->h_uuid, log->l_p.uuid, 16) != 0) {
				if (!foreign++)
					memcpy(foreign_uuid, h->h_uuid, 16);
				continue;
			}
			if (le32toh(h->h_log_bbs) != log->l_bbs)
				continue;
			if (ncand == cap) {
				cap = cap ? cap * 2 : 256;
				cand = xrealloc(cand, cap * sizeof(*cand));
			}
			cand[ncand++] = log_lsn_to_pos(log, lsn);
		}
	}
	free(chunk);
	if (err) {
		msg_err("log: reading the log region failed: %s", strerror(-err));
		goto out;
	}

	if (ncand) /* cand is NULL when nothing was found */
		qsort(cand, ncand, sizeof(*cand), cmp_desc);
	for (size_t i = 0; i < ncand; i++) {
		int r = rec_read(log, cand[i], rbuf);
		if (r < 0) {
			err = r;
			goto out;
		}
		if (r == 0)
			continue;
		uint64_t tail = log_lsn_to_pos(log, le64toh(h_of(rbuf)->h_tail));
		if (tail > cand[i] || cand[i] - tail >= log->l_bbs || tail < log->l_bbs) {
			msg_warn("log: record at lsn %llu/%llu names an impossible tail",
				 (unsigned long long)(cand[i] / log->l_bbs),
				 (unsigned long long)(cand[i] % log->l_bbs));
			continue;
		}
		if (tail != cand[i]) {
			r = rec_read(log, tail, rbuf);
			if (r < 0) {
				err = r;
				goto out;
			}
			if (r == 0)
				continue; /* its tail record was torn: still in flight */
			r = rec_read(log, cand[i], rbuf); /* leave the newest in rbuf */
			if (r != 1) {
				err = r < 0 ? r : -EIO;
				goto out;
			}
		}
		*newest = cand[i];
		goto out;
	}
	err = -EUCLEAN;
	if (!ncand && foreign) {
		char want[33], got[33];
		fmt_uuid(want, log->l_p.uuid);
		fmt_uuid(got, foreign_uuid);
		msg_err("log: the log region belongs to another filesystem (uuid %s, expected %s)",
			got, want);
	} else {
		msg_err("log: no valid record with an intact tail in the log region (%zu headers "
			"found): the log is damaged or was never formatted",
			ncand);
	}
out:
	*cands = cand;
	*ncands = ncand;
	return err;
}

/* Step 5: zero the header of every valid record beyond the head. */
static int clear_stale(struct log *log, uint8_t *rbuf, const uint64_t *cand, size_t ncand,
		       uint64_t head, uint64_t dtail)
{
	int err = 0;
	unsigned cleared = 0;
	memset(rbuf + LOG_BB_SIZE, 0, LOG_BB_SIZE);
	for (size_t i = 0; i < ncand && !err; i++) {
		if (cand[i] < head || cand[i] >= dtail + log->l_bbs)
			continue;
		int r = rec_read(log, cand[i], rbuf);
		if (r < 0)
			return r;
		if (r == 0)
			continue;
		err = dev_write(log->l_ldev, rbuf + LOG_BB_SIZE, LOG_BB_SIZE,
				log->l_off + (cand[i] % log->l_bbs) * LOG_BB_SIZE, 0);
		cleared++;
	}
	if (!err && cleared) {
		err = dev_flush(log->l_ldev);
		msg_info("log: cleared %u records left beyond the head by a torn write", cleared);
	}
	return err;
}

static void ckpt_append(struct rc_ckpt *c, const uint8_t *p, size_t n)
{
	if (n == 0)
		return; /* an empty region: nothing to copy (p may be NULL) */
	if (c->len + n > c->cap) {
		c->cap = MAX(c->cap * 2, c->len + n);
		c->data = xrealloc(c->data, c->cap);
	}
	memcpy(c->data + c->len, p, n);
	c->len += n;
}

void *log_recovery_block(struct log_recovery *rc, uint64_t daddr, uint32_t len, int *err)
{
	struct rc_block *b = hashmap_get(&rc->rc_blocks, daddr);
	if (b) {
		if (b->len != len) {
			*err = -EUCLEAN;
			return NULL;
		}
		return b->data;
	}
	struct dev *ddev = rc->rc_log->l_ddev;
	if (daddr > dev_size(ddev) || len > dev_size(ddev) - daddr || (daddr | len) & 511) {
		msg_err("log: a logged block at byte %llu (%u bytes) lies outside the device",
			(unsigned long long)daddr, len);
		*err = -EUCLEAN;
		return NULL;
	}
	b = xmalloc(sizeof(*b) + len);
	b->len = len;
	*err = dev_read(ddev, b->data, len, daddr);
	if (*err) {
		free(b);
		return NULL;
	}
	hashmap_put(&rc->rc_blocks, daddr, b);
	return b->data;
}

uint64_t log_recovery_ckpt(const struct log_recovery *rc)
{
	return rc->rc_ckpt;
}

struct log *log_recovery_log(struct log_recovery *rc)
{
	return rc->rc_log;
}

void log_recovery_forget(struct log_recovery *rc, uint64_t daddr, uint32_t len)
{
	free(hashmap_remove(&rc->rc_blocks, daddr));
	(void)len; /* cached blocks start at their own address: a 4 KiB block */
}

void **log_recovery_private(struct log_recovery *rc, uint16_t type)
{
	BUG_ON(type >= LOG_ITEM_MAX);
	return &rc->rc_private[type];
}

/* Run pass (1 or 2) over one checkpoint's op stream. */
static int replay_ckpt(struct log *log, struct log_recovery *rc, const struct rc_ckpt *c, int pass,
		       uint64_t *nitems)
{
	size_t off = 0;
	while (off < c->len) {
		struct log_op_hdr oh;
		if (c->len - off < sizeof(oh))
			goto bad;
		memcpy(&oh, c->data + off, sizeof(oh));
		uint16_t type = le16toh(oh.o_type);
		uint32_t olen = le32toh(oh.o_len);
		size_t total = sizeof(oh) + ALIGN_UP((size_t)olen, (size_t)LOG_OP_ALIGN);
		if (total > c->len - off)
			goto bad;
		const struct log_item_ops *ops = type < LOG_ITEM_MAX ? log->l_types[type] : NULL;
		if (!ops || !ops->recover) {
			msg_err("log: checkpoint %llu holds an item of unknown type %u",
				(unsigned long long)c->csn, type);
			return -EUCLEAN;
		}
		const void *img = c->data + off + sizeof(oh);
		int err = 0;
		if (pass == 1 && ops->recover_scan)
			err = ops->recover_scan(rc, img, olen);
		else if (pass == 2)
			err = ops->recover(rc, img, olen);
		if (err) {
			msg_err("log: replaying a %s item of checkpoint %llu failed: %s", ops->name,
				(unsigned long long)c->csn, strerror(-err));
			return err;
		}
		(*nitems)++;
		off += total;
	}
	return 0;
bad:
	msg_err("log: checkpoint %llu has a malformed operation at byte %zu",
		(unsigned long long)c->csn, off);
	return -EUCLEAN;
}

static int replay(struct log *log, struct rc_ckpt *ck, size_t nck, uint64_t *nitems,
		  uint64_t head_lsn)
{
	struct log_recovery rc = {.rc_log = log};
	hashmap_init(&rc.rc_blocks);
	int err = 0;
	for (int pass = 1; pass <= 2 && !err; pass++) {
		*nitems = 0;
		for (size_t i = 0; i < nck && !err; i++) {
			rc.rc_ckpt = i + 1;
			err = replay_ckpt(log, &rc, &ck[i], pass, nitems);
		}
	}
	size_t it = 0;
	uint64_t daddr;
	void *v;
	while (hashmap_next(&rc.rc_blocks, &it, &daddr, &v)) {
		struct rc_block *b = v;
		if (!err && log->l_p.restamp)
			log->l_p.restamp(log->l_p.restamp_arg, daddr, b->data, b->len, head_lsn);
		if (!err) {
			err = dev_write(log->l_ddev, b->data, b->len, daddr, 0);
			if (err)
				msg_err("log: writing a replayed block failed: %s", strerror(-err));
		}
		free(b);
	}
	hashmap_destroy(&rc.rc_blocks);
	if (!err)
		err = dev_flush(log->l_ddev);
	for (unsigned t = 0; t < LOG_ITEM_MAX; t++)
		if (log->l_types[t] && log->l_types[t]->recover_done)
			log->l_types[t]->recover_done(&rc);
	return err;
}

int log_recover(struct log *log)
{
	uint8_t *rbuf = xmalloc_aligned(4096, LOG_BB_SIZE + LOG_MAX_BUF_SIZE);
	struct log_rec_hdr *h = (struct log_rec_hdr *)rbuf;
	struct rc_ckpt *ck = NULL, open = {0};
	size_t nck = 0, ckcap = 0;
	bool have_open = false;
	uint64_t newest, *cands = NULL;
	size_t ncands = 0;

	int err = find_newest(log, rbuf, &newest, &cands, &ncands);
	if (err)
		goto out;
	uint64_t tail = log_lsn_to_pos(log, le64toh(h->h_tail));

	/* step 2: walk the chain from the tail */
	uint64_t pos = tail, last_tail = tail, max_csn = 0;
	uint32_t last_crc = 0;
	bool first = true, last_unmount = false;
	while (pos < tail + log->l_bbs) {
		int r = rec_read(log, pos, rbuf);
		if (r < 0) {
			err = r;
			msg_err("log: reading record at lsn %llu/%llu failed: %s",
				(unsigned long long)(pos / log->l_bbs),
				(unsigned long long)(pos % log->l_bbs), strerror(-err));
			goto out;
		}
		if (r == 0 || (!first && le32toh(h->h_prev_crc) != last_crc))
			break;
		uint16_t flags = le16toh(h->h_flags);
		uint64_t csn = le64toh(h->h_csn);
		uint32_t index = le32toh(h->h_index);
		uint32_t len = le32toh(h->h_len);

		/* step 3: assemble checkpoints */
		last_unmount = (flags & LOG_REC_UNMOUNT) != 0;
		if ((flags & (LOG_REC_START | LOG_REC_UNMOUNT)) && have_open) {
			free(open.data); /* interrupted by a crash: never committed */
			have_open = false;
		}
		if (flags & LOG_REC_START) {
			open = (struct rc_ckpt){.csn = csn};
			have_open = true;
		}
		if (have_open && !last_unmount) {
			if (csn != open.csn || index != open.next_index) {
				free(open.data);
				have_open = false;
			} else {
				ckpt_append(&open, rbuf + LOG_BB_SIZE, len);
				open.next_index++;
				if (flags & LOG_REC_COMMIT) {
					if (nck == ckcap) {
						ckcap = ckcap ? ckcap * 2 : 16;
						ck = xrealloc(ck, ckcap * sizeof(*ck));
					}
					ck[nck++] = open;
					have_open = false;
				}
			}
		}
		max_csn = MAX(max_csn, csn);
		last_crc = le32toh(h->h_crc);
		last_tail = log_lsn_to_pos(log, le64toh(h->h_tail));
		first = false;
		pos += 1 + DIV_ROUND_UP((uint64_t)len, LOG_BB_SIZE);
	}
	if (first) {
		msg_err("log: the record at the tail (lsn %llu/%llu) is missing or damaged",
			(unsigned long long)(tail / log->l_bbs),
			(unsigned long long)(tail % log->l_bbs));
		err = -EUCLEAN;
		goto out;
	}

	/* step 4: replay */
	uint64_t nitems = 0;
	if (nck) {
		err = replay(log, ck, nck, &nitems, log_pos_to_lsn(log, pos));
		if (err)
			goto out;
		msg_info("log: recovered %zu checkpoints (%llu items), lsn %llu/%llu to %llu/%llu",
			 nck, (unsigned long long)nitems, (unsigned long long)(tail / log->l_bbs),
			 (unsigned long long)(tail % log->l_bbs),
			 (unsigned long long)(pos / log->l_bbs),
			 (unsigned long long)(pos % log->l_bbs));
	}
	counter_add(&log->l_stats.recovered_checkpoints, nck);
	log->l_replayed = nck > 0;
	counter_add(&log->l_stats.recovered_items, nitems);
	if (!nck && last_unmount)
		counter_inc(&log->l_stats.recovered_clean);

	log->l_head_pos = pos;
	log->l_prev_crc = last_crc;
	log->l_durable_tail = MAX(tail, MIN(last_tail, pos));
	log->l_cur_seq = max_csn + 1;
	log->l_durable_seq = max_csn;
	err = clear_stale(log, rbuf, cands, ncands, pos, log->l_durable_tail);
	if (err)
		msg_err("log: clearing stale records failed: %s", strerror(-err));
out:
	free(cands);
	if (have_open)
		free(open.data);
	for (size_t i = 0; i < nck; i++)
		free(ck[i].data);
	free(ck);
	free(rbuf);
	return err;
}
