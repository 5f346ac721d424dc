/*
 * lock.c - lock wrappers and the lock-order checker.
 *
 * The checker keeps, per thread, the locks it holds. Blocking on a lock
 * whose rank is not greater than every held lock's is a potential deadlock
 * and panics, naming both classes; so does blocking on a second lock of a
 * class that orders its locks (lock_class.order) in an order it refuses.
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

static void lockdep_push(const void *lock, const struct lock_class *cls)
{
	if (nheld == LOCKDEP_MAX_HELD)
		panic("lockdep: more than %d locks held", LOCKDEP_MAX_HELD);
	held[nheld].lock = lock;
	held[nheld].cls = cls;
	nheld++;
}

/* Does this thread hold lock? (its own list: no other thread writes it) */
static bool lockdep_held(const void *lock)
{
	for (int i = 0; i < nheld; i++)
		if (held[i].lock == lock)
			return true;
	return false;
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
#define lockdep_check(l, c) ((void)0)
#define lockdep_push(l, c)  ((void)0)
#define lockdep_pop(l)	       ((void)0)
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

#ifdef JNFS_LOCKDEP
static const struct lock_class *mutex_class(const struct mutex *m)
{
	return atomic_load_explicit(&m->cls, memory_order_relaxed);
}
#endif

void mutex_destroy(struct mutex *m)
{
	pthread_mutex_destroy(&m->m);
}

void mutex_lock(struct mutex *m)
{
	lockdep_check(m, mutex_class(m));
	pthread_mutex_lock(&m->m);
	lockdep_push(m, mutex_class(m));
}

bool mutex_trylock(struct mutex *m)
{
	if (pthread_mutex_trylock(&m->m) != 0)
		return false;
	lockdep_push(m, mutex_class(m));
	return true;
}

void mutex_unlock(struct mutex *m)
{
	lockdep_pop(m);
	pthread_mutex_unlock(&m->m);
}

#ifdef JNFS_LOCKDEP
bool mutex_held(const struct mutex *m)
{
	return lockdep_held(m);
}

void assert_locked(const struct mutex *m)
{
	if (!mutex_held(m))
		panic("lock %s is not held by this thread", mutex_class(m)->name);
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
	lockdep_check(l, l->cls);
	pthread_rwlock_rdlock(&l->rw);
	lockdep_push(l, l->cls);
}

void rwlock_wrlock(struct rwlock *l)
{
	lockdep_check(l, l->cls);
	pthread_rwlock_wrlock(&l->rw);
	lockdep_push(l, l->cls);
}

bool rwlock_trywrlock(struct rwlock *l)
{
	if (pthread_rwlock_trywrlock(&l->rw) != 0)
		return false;
	lockdep_push(l, l->cls);
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
	pthread_cond_wait(&c->c, &m->m);
}

bool cond_timedwait_ns(struct cond *c, struct mutex *m, uint64_t ns)
{
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
