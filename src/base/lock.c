/*
 * lock.c - lock wrappers and the lock-order checker.
 *
 * The checker keeps, per thread, the locks it holds. Blocking on a lock
 * whose key (rank * 16 + subclass) is not greater than every held key is a
 * potential deadlock and panics, naming both classes.
 */
#include "base/lock.h"

#include <errno.h>
#include <string.h>

#include "base/msg.h"
#include "base/time.h"

#ifdef JNFS_LOCKDEP
#define LOCKDEP_MAX_HELD 48

struct held_lock {
	const void *lock;
	const struct lock_class *cls;
	unsigned key;
};

static __thread struct held_lock held[LOCKDEP_MAX_HELD];
static __thread int nheld;

static unsigned lock_key(const struct lock_class *cls, unsigned sub)
{
	return cls->rank * 16 + sub;
}

static void lockdep_check(const void *lock, const struct lock_class *cls, unsigned sub)
{
	unsigned key = lock_key(cls, sub);
	for (int i = 0; i < nheld; i++) {
		if (held[i].lock == lock)
			panic("lockdep: recursive acquisition of %s", cls->name);
		if (cls->unordered || held[i].cls->unordered)
			continue;
		if (cls->multi && held[i].cls == cls)
			continue;
		if (held[i].key >= key)
			panic("lockdep: taking %s (rank %u.%u) while holding %s (rank %u.%u)",
			      cls->name, cls->rank, sub, held[i].cls->name, held[i].key / 16,
			      held[i].key % 16);
	}
}

static void lockdep_push(const void *lock, const struct lock_class *cls, unsigned sub)
{
	if (nheld == LOCKDEP_MAX_HELD)
		panic("lockdep: more than %d locks held", LOCKDEP_MAX_HELD);
	held[nheld].lock = lock;
	held[nheld].cls = cls;
	held[nheld].key = lock_key(cls, sub);
	nheld++;
}

static void lockdep_pop(const void *lock)
{
	for (int i = nheld - 1; i >= 0; i--) {
		if (held[i].lock == lock) {
			memmove(&held[i], &held[i + 1], (size_t)(nheld - i - 1) * sizeof(held[0]));
			nheld--;
			return;
		}
	}
	panic("lockdep: releasing a lock that is not held");
}
#else
#define lockdep_check(l, c, s) ((void)0)
#define lockdep_push(l, c, s)  ((void)0)
#define lockdep_pop(l)	       ((void)0)
#endif

void mutex_init(struct mutex *m, const struct lock_class *cls)
{
	pthread_mutex_init(&m->m, NULL);
	m->cls = cls;
#ifdef JNFS_LOCKDEP
	m->owned = false;
#endif
}

void mutex_destroy(struct mutex *m)
{
	pthread_mutex_destroy(&m->m);
}

void mutex_lock_nested(struct mutex *m, unsigned subclass)
{
	lockdep_check(m, m->cls, subclass);
	pthread_mutex_lock(&m->m);
	lockdep_push(m, m->cls, subclass);
#ifdef JNFS_LOCKDEP
	m->owner = pthread_self();
	m->owned = true;
#endif
}

void mutex_lock(struct mutex *m)
{
	mutex_lock_nested(m, 0);
}

bool mutex_trylock(struct mutex *m)
{
	if (pthread_mutex_trylock(&m->m) != 0)
		return false;
	lockdep_push(m, m->cls, 0);
#ifdef JNFS_LOCKDEP
	m->owner = pthread_self();
	m->owned = true;
#endif
	return true;
}

void mutex_unlock(struct mutex *m)
{
#ifdef JNFS_LOCKDEP
	m->owned = false;
#endif
	lockdep_pop(m);
	pthread_mutex_unlock(&m->m);
}

#ifdef JNFS_LOCKDEP
void assert_locked(const struct mutex *m)
{
	if (!m->owned || !pthread_equal(m->owner, pthread_self()))
		panic("lock %s is not held by this thread", m->cls->name);
}
#endif

void rwlock_init(struct rwlock *l, const struct lock_class *cls)
{
	pthread_rwlockattr_t attr;
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&l->rw, &attr);
	pthread_rwlockattr_destroy(&attr);
	l->cls = cls;
}

void rwlock_destroy(struct rwlock *l)
{
	pthread_rwlock_destroy(&l->rw);
}

void rwlock_rdlock(struct rwlock *l)
{
	lockdep_check(l, l->cls, 0);
	pthread_rwlock_rdlock(&l->rw);
	lockdep_push(l, l->cls, 0);
}

void rwlock_wrlock(struct rwlock *l)
{
	lockdep_check(l, l->cls, 0);
	pthread_rwlock_wrlock(&l->rw);
	lockdep_push(l, l->cls, 0);
}

void rwlock_wrlock_nested(struct rwlock *l, unsigned subclass)
{
	lockdep_check(l, l->cls, subclass);
	pthread_rwlock_wrlock(&l->rw);
	lockdep_push(l, l->cls, subclass);
}

bool rwlock_trywrlock(struct rwlock *l)
{
	if (pthread_rwlock_trywrlock(&l->rw) != 0)
		return false;
	lockdep_push(l, l->cls, 0);
	return true;
}

void rwlock_unlock(struct rwlock *l)
{
	lockdep_pop(l);
	pthread_rwlock_unlock(&l->rw);
}

void cond_init(struct cond *c)
{
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&c->c, &attr);
	pthread_condattr_destroy(&attr);
}

void cond_destroy(struct cond *c)
{
	pthread_cond_destroy(&c->c);
}

void cond_wait(struct cond *c, struct mutex *m)
{
#ifdef JNFS_LOCKDEP
	m->owned = false;
#endif
	pthread_cond_wait(&c->c, &m->m);
#ifdef JNFS_LOCKDEP
	m->owner = pthread_self();
	m->owned = true;
#endif
}

bool cond_timedwait_ns(struct cond *c, struct mutex *m, uint64_t ns)
{
	struct timespec ts = deadline_after_ns(ns);
#ifdef JNFS_LOCKDEP
	m->owned = false;
#endif
	int rc = pthread_cond_timedwait(&c->c, &m->m, &ts);
#ifdef JNFS_LOCKDEP
	m->owner = pthread_self();
	m->owned = true;
#endif
	return rc != ETIMEDOUT;
}

void cond_signal(struct cond *c)
{
	pthread_cond_signal(&c->c);
}

void cond_broadcast(struct cond *c)
{
	pthread_cond_broadcast(&c->c);
}
