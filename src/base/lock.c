/*
 * lock.c - lock wrappers, the lock-order checker and lock contracts.
 *
 * The checker keeps, per thread, the locks it holds (and whether an rwlock
 * is held shared). Blocking on a lock whose rank is not greater than every
 * held lock's is a potential deadlock and panics, naming both classes; so
 * does blocking on a second lock of a class that orders its locks
 * (lock_class.order) in an order it refuses, and a contract assertion
 * (assert_locked() and the others) that the thread's list contradicts.
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
	bool shared; /* an rwlock held for reading */
};

static __thread struct held_lock held[LOCKDEP_MAX_HELD];
static __thread int nheld;

static void lockdep_check(const void *lock, const struct lock_class *cls)
{
	const void *same[LOCKDEP_MAX_HELD];
	int nsame = 0;
	for (int i = 0; i < nheld; i++) {
		if (held[i].lock == lock)
			panic("lockdep: recursive acquisition of %s", cls->name);
		if (cls->unordered || held[i].cls->unordered)
			continue;
		if (cls->multi && held[i].cls == cls) {
			same[nsame++] = held[i].lock;
			continue;
		}
		if (held[i].cls->rank >= cls->rank)
			panic("lockdep: taking %s (rank %u) while holding %s (rank %u)", cls->name,
			      cls->rank, held[i].cls->name, held[i].cls->rank);
	}
	/* after the ranks: an order function may take locks of later ranks */
	for (int i = 0; i < nsame && cls->order; i++) {
		const char *why = cls->order(same[i], lock);
		if (why)
			panic("lockdep: taking %s while holding %s: %s", cls->name, cls->name, why);
	}
}

static void lockdep_push(const void *lock, const struct lock_class *cls, bool shared)
{
	if (nheld == LOCKDEP_MAX_HELD)
		panic("lockdep: more than %d locks held", LOCKDEP_MAX_HELD);
	held[nheld].lock = lock;
	held[nheld].cls = cls;
	held[nheld].shared = shared;
	nheld++;
}

/* This thread's entry for lock, or NULL (its own list: no other thread
 * writes it, so this is exact and race-free). */
static const struct held_lock *lockdep_find(const void *lock)
{
	for (int i = 0; i < nheld; i++)
		if (held[i].lock == lock)
			return &held[i];
	return NULL;
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

static const struct lock_class *mutex_class(const struct mutex *m)
{
	return atomic_load_explicit(&m->cls, memory_order_relaxed);
}

bool mutex_held(const struct mutex *m)
{
	return lockdep_find(m) != NULL;
}

void lockdep_assert_mutex(const struct mutex *m, const char *func)
{
	if (!lockdep_find(m))
		panic("lockdep: %s: %s is not held by this thread", func, mutex_class(m)->name);
}

void lockdep_assert_rwlock(const struct rwlock *l, bool exclusive, const char *func)
{
	const struct held_lock *h = lockdep_find(l);
	if (!h)
		panic("lockdep: %s: %s is not held by this thread", func, l->cls->name);
	if (exclusive && h->shared)
		panic("lockdep: %s: %s is held shared, not exclusively", func, l->cls->name);
}

void lockdep_assert_none_held(unsigned lo, unsigned hi, const char *func)
{
	for (int i = 0; i < nheld; i++) {
		const struct lock_class *c = held[i].cls;
		if (!c->unordered && c->rank >= lo && c->rank <= hi)
			panic("lockdep: %s: called holding %s (rank %u; none from %u to %u may be "
			      "held)",
			      func, c->name, c->rank, lo, hi);
	}
}
#else
#define lockdep_check(l, c)   ((void)0)
#define lockdep_push(l, c, s) ((void)0)
#define lockdep_pop(l)	      ((void)0)
#endif

void mutex_init(struct mutex *m, const struct lock_class *cls)
{
	pthread_mutex_init(&m->m, NULL);
	atomic_init(&m->cls, cls);
}

void mutex_set_class(struct mutex *m, const struct lock_class *cls)
{
	atomic_store_explicit(&m->cls, cls, memory_order_relaxed);
}

void mutex_destroy(struct mutex *m)
{
	pthread_mutex_destroy(&m->m);
}

void mutex_lock(struct mutex *m)
{
	lockdep_check(m, mutex_class(m));
	pthread_mutex_lock(&m->m);
	lockdep_push(m, mutex_class(m), false);
}

bool mutex_trylock(struct mutex *m)
{
	if (pthread_mutex_trylock(&m->m) != 0)
		return false;
	lockdep_push(m, mutex_class(m), false);
	return true;
}

void mutex_unlock(struct mutex *m)
{
	lockdep_pop(m);
	pthread_mutex_unlock(&m->m);
}

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
	lockdep_check(l, l->cls);
	pthread_rwlock_rdlock(&l->rw);
	lockdep_push(l, l->cls, true);
}

void rwlock_wrlock(struct rwlock *l)
{
	lockdep_check(l, l->cls);
	pthread_rwlock_wrlock(&l->rw);
	lockdep_push(l, l->cls, false);
}

bool rwlock_trywrlock(struct rwlock *l)
{
	if (pthread_rwlock_trywrlock(&l->rw) != 0)
		return false;
	lockdep_push(l, l->cls, false);
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
	assert_locked(m);
	pthread_cond_wait(&c->c, &m->m);
}

bool cond_timedwait_ns(struct cond *c, struct mutex *m, uint64_t ns)
{
	assert_locked(m);
	struct timespec ts = deadline_after_ns(ns);
	int rc = pthread_cond_timedwait(&c->c, &m->m, &ts);
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
