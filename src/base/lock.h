/*
 * lock.h - mutexes, reader/writer locks and condition variables with
 * lock-order checking.
 *
 * Every lock belongs to a lock class with a rank. A thread may only block
 * on a lock whose rank is greater than that of every lock it already
 * holds; a violation panics with both class names (JNFS_LOCKDEP builds,
 * which include every test build). Trylocks never deadlock and are not
 * checked, only recorded.
 *
 * Several locks of one class (inodes, buffers) are ordered by what they
 * guard, not by a label the caller picks: a class may give an order
 * function that the checker asks, with the lock held and the lock wanted,
 * whenever a thread blocks on a second lock of that class (the engine's
 * says: directories an ancestor first, inode metadata by inode number). A
 * caller-chosen "nesting level" would have passed two threads that each
 * take the same two directories at levels 0 and 1 in opposite orders.
 *
 * Ranks, lowest taken first (each layer documents its own order at the
 * definition of its classes):
 *    100-199  filesystem engine: inode I/O lock, inode metadata lock
 *    200-299  log items: item locks (inode item lock, buffer lock)
 *    300-399  journal: CIL context, CIL, push, AIL, space
 *    400-499  RPC and protocol state
 *    500-599  NFSv4 server state (src/nfs4/brlock.h lists the band)
 *    700-799  NFSv4 client (src/nfs4c/nfs4c.h lists the band)
 *    900-999  device layer
 */
#ifndef JNFS_BASE_LOCK_H
#define JNFS_BASE_LOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct lock_class {
	const char *name;
	unsigned rank;
	/* Several locks of this class may be held at once; the caller orders
	 * them (e.g. metadata buffers by disk address). Only the order against
	 * other classes is checked. */
	bool multi;
	/* Not checked against any class: for locks only ever taken under
	 * another lock that carries the ordering (the definition says which). */
	bool unordered;
	/* For a multi class whose locks are ordered among themselves (JNFS_LOCKDEP
	 * builds): called before a thread blocks on `want` while it holds `held`,
	 * a lock of the same class (the mutex or rwlock itself); returns NULL if
	 * that order is allowed, else the rule it breaks (the checker panics
	 * with it). It may take locks that rank after the class. */
	const char *(*order)(const void *held, const void *want);
};

#define LOCK_CLASS_INIT(n, r)                                                                      \
	{                                                                                          \
		.name = (n), .rank = (r)                                                           \
	}
#define LOCK_CLASS_INIT_MULTI(n, r)                                                                \
	{                                                                                          \
		.name = (n), .rank = (r), .multi = true                                            \
	}
#define LOCK_CLASS_INIT_ORDERED(n, r, fn)                                                          \
	{                                                                                          \
		.name = (n), .rank = (r), .multi = true, .order = (fn)                             \
	}
#define LOCK_CLASS_INIT_UNORDERED(n)                                                              \
	{                                                                                          \
		.name = (n), .rank = 0, .unordered = true                                          \
	}

struct mutex {
	pthread_mutex_t m;
	/* atomic: a lock may change class while another thread trylocks it
	 * (mutex_set_class) */
	_Atomic(const struct lock_class *) cls;
};

struct rwlock {
	pthread_rwlock_t rw;
	const struct lock_class *cls;
};

struct cond {
	pthread_cond_t c;
};

void mutex_init(struct mutex *m, const struct lock_class *cls);
void mutex_destroy(struct mutex *m);
void mutex_lock(struct mutex *m);
bool mutex_trylock(struct mutex *m);
void mutex_unlock(struct mutex *m);
/* A lock whose object changes role (a metadata buffer whose block is
 * reused as another kind) changes class; no thread may hold it. */
void mutex_set_class(struct mutex *m, const struct lock_class *cls);

#ifdef JNFS_LOCKDEP
/* Panics unless the calling thread holds m. */
void assert_locked(const struct mutex *m);
/* Does the calling thread hold m? (for order functions) */
bool mutex_held(const struct mutex *m);
#else
static inline void assert_locked(const struct mutex *m)
{
	(void)m;
}
#endif

/* Writer-preferring, so a stream of readers cannot starve a writer. */
void rwlock_init(struct rwlock *l, const struct lock_class *cls);
void rwlock_destroy(struct rwlock *l);
void rwlock_rdlock(struct rwlock *l);
void rwlock_wrlock(struct rwlock *l);
/* Take it for writing if nobody holds it; true if taken. */
bool rwlock_trywrlock(struct rwlock *l);
void rwlock_unlock(struct rwlock *l);

/* Condition variables on CLOCK_MONOTONIC. */
void cond_init(struct cond *c);
void cond_destroy(struct cond *c);
void cond_wait(struct cond *c, struct mutex *m);
/* Returns false when ns passed without a wakeup. */
bool cond_timedwait_ns(struct cond *c, struct mutex *m, uint64_t ns);
void cond_signal(struct cond *c);
void cond_broadcast(struct cond *c);

#endif
