/*
 * slots.c - the fore channel slot table. See slots.h.
 */
#include "nfs4c/slots.h"

#include <errno.h>
#include <string.h>

#include "base/compiler.h"
#include "base/msg.h"

void nfs4c_slots_init(struct nfs4c_slots *s, uint32_t n)
{
	memset(s, 0, sizeof(*s));
	n = MAX(1u, MIN(n, (uint32_t)NFS4C_MAX_SLOTS));
	s->nslots = n;
	s->highest = n - 1;
	s->target = n - 1;
	for (uint32_t i = 0; i < n; i++) {
		s->slot[i].seqid = 1;
		s->slot[i].state = NFS4C_SLOT_FREE;
	}
}

static uint32_t usable_top(const struct nfs4c_slots *s)
{
	return MIN(s->highest, s->target);
}

int nfs4c_slots_take(struct nfs4c_slots *s, int want, uint32_t *slotid)
{
	if (want >= 0) {
		if ((uint32_t)want >= s->nslots)
			return -EINVAL;
		struct nfs4c_slot *sl = &s->slot[want];
		if (sl->state == NFS4C_SLOT_BUSY)
			return -EBUSY;
		if (sl->state == NFS4C_SLOT_DEAD)
			return -ENOSPC;
		sl->state = NFS4C_SLOT_BUSY;
		s->nbusy++;
		*slotid = (uint32_t)want;
		return 0;
	}
	bool busy = false;
	for (uint32_t i = 0; i <= usable_top(s); i++) {
		struct nfs4c_slot *sl = &s->slot[i];
		if (sl->state == NFS4C_SLOT_FREE) {
			sl->state = NFS4C_SLOT_BUSY;
			s->nbusy++;
			*slotid = i;
			return 0;
		}
		busy |= sl->state == NFS4C_SLOT_BUSY;
	}
	return busy ? -EAGAIN : -ENOSPC;
}

uint32_t nfs4c_slots_highest_busy(const struct nfs4c_slots *s)
{
	for (uint32_t i = s->nslots; i-- > 0;)
		if (s->slot[i].state == NFS4C_SLOT_BUSY)
			return i;
	return 0;
}

void nfs4c_slots_done(struct nfs4c_slots *s, uint32_t slotid, enum nfs4c_slot_outcome how)
{
	BUG_ON(slotid >= s->nslots);
	struct nfs4c_slot *sl = &s->slot[slotid];
	BUG_ON(sl->state != NFS4C_SLOT_BUSY);
	s->nbusy--;
	switch (how) {
	case NFS4C_SLOT_PROCESSED:
		sl->seqid++;
		sl->state = NFS4C_SLOT_FREE;
		break;
	case NFS4C_SLOT_UNUSED:
		sl->state = NFS4C_SLOT_FREE;
		break;
	case NFS4C_SLOT_LOST:
		sl->state = NFS4C_SLOT_DEAD;
		s->ndead++;
		break;
	}
}

void nfs4c_slots_set_limits(struct nfs4c_slots *s, uint32_t highest, uint32_t target)
{
	highest = MIN(highest, s->nslots - 1);
	target = MIN(target, s->nslots - 1);
	/* the server forgot the slots above a lower highest: they restart at
	 * seqid 1 (a busy one keeps its request's seqid until it is done; its
	 * reply says what became of it) */
	for (uint32_t i = highest + 1; i <= s->highest; i++)
		if (s->slot[i].state == NFS4C_SLOT_FREE)
			s->slot[i].seqid = 1;
	s->highest = highest;
	s->target = target;
}

void nfs4c_slots_set_seqid(struct nfs4c_slots *s, uint32_t slotid, uint32_t seqid)
{
	BUG_ON(slotid >= s->nslots);
	s->slot[slotid].seqid = seqid;
}

void nfs4c_slots_assert(const struct nfs4c_slots *s)
{
	uint32_t busy = 0, dead = 0;
	BUG_ON(s->nslots == 0 || s->nslots > NFS4C_MAX_SLOTS);
	BUG_ON(s->highest >= s->nslots || s->target >= s->nslots);
	for (uint32_t i = 0; i < s->nslots; i++) {
		BUG_ON(s->slot[i].state > NFS4C_SLOT_DEAD);
		busy += s->slot[i].state == NFS4C_SLOT_BUSY;
		dead += s->slot[i].state == NFS4C_SLOT_DEAD;
	}
	BUG_ON(busy != s->nbusy || dead != s->ndead);
}
