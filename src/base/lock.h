/*
 * lock.h - mutexes, reader/writer locks and condition variables with
 * lock-order checking and lock contracts.
 *
 * Every lock belongs to a lock class with a rank, and every class is a row
 * of one table (base/lock_classes.h; docs/locking.md is written from it).
 * A thread may only block on a lock whose rank is greater than that of
 * every lock it already holds; a violation panics with both class names
 * (JNFS_LOCKDEP builds, which include every test build and the default
 * jnfsd). Trylocks never deadlock and are not checked, only recorded.
 *
 * Several locks of one class (inodes, buffers) are ordered by what they
 * guard, not by a label the caller picks: a class may give an order
 * function that the checker asks, with the lock held and the lock wanted,
 * whenever a thread blocks on a second lock of that class (the engine's
 * says: directories an ancestor first, inode metadata by inode number). A
 * caller-chosen "nesting level" would have passed two threads that each
 * take the same two directories at levels 0 and 1 in opposite orders.
 *
 * Contracts: a function whose comment says "X held" (or "X held
 * exclusively", "no lock held") starts with the assertion that says so:
 * assert_locked(), assert_rdlocked(), assert_wrlocked(),
 * assert_none_held(). In a checking build each panics naming the class
 * and the function; otherwise it compiles to nothing. The checker keeps
 * the locks a thread holds in that thread's own list, so an assertion
 * costs a walk of a few entries and touches no shared memory.
 */
#ifndef JNFS_BASE_LOCK_H
#define JNFS_BASE_LOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/lock_classes.h"

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

/* The class of a row of lock_classes.h (of any kind but ORDERED). */
#define LOCK_CLASS(id)                                                                             \
	{                                                                                          \
		.name = lock_class_names[LOCK_##id], .rank = LOCK_RANK_##id,                       \
		.multi = (int)LOCK_KIND_OF_##id != (int)LOCK_KIND_ONE,                             \
		.unordered = (int)LOCK_KIND_OF_##id == (int)LOCK_KIND_UNORDERED                    \
	}
/* A row of kind ORDERED, with its order function (NULL without checking). */
#define LOCK_CLASS_ORDERED(id, fn)                                                                 \
	{                                                                                          \
		.name = lock_class_names[LOCK_##id], .rank = LOCK_RANK_##id, .multi = true,        \
		.order = (fn)                                                                      \
	}
/* Classes outside the table: for tests of the checker only (src/ may not). */
#define LOCK_CLASS_INIT(n, r)                                                                      \
	{                                                                                          \
		.name = (n), .rank = (r)                                                           \
	}
#define LOCK_CLASS_INIT_ORDERED(n, r, fn)                                                          \
	{                                                                                          \
		.name = (n), .rank = (r), .multi = true, .order = (fn)                             \
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

/* Above every rank: assert_none_held(lo, LOCK_RANK_MAX) is "nothing from lo up". */
#define LOCK_RANK_MAX (~0u)

#ifdef JNFS_LOCKDEP
/* The calling thread holds m. */
#define assert_locked(m) lockdep_assert_mutex((m), __func__)
/* The calling thread holds l, shared or exclusively. */
#define assert_rdlocked(l) lockdep_assert_rwlock((l), false, __func__)
/* The calling thread holds l exclusively. */
#define assert_wrlocked(l) lockdep_assert_rwlock((l), true, __func__)
/* The calling thread holds no lock ranked from lo to hi (unordered classes
 * do not count): "no engine lock held"; assert_no_locks(): none at all. */
#define assert_none_held(lo, hi) lockdep_assert_none_held((lo), (hi), __func__)
#define assert_no_locks()	 lockdep_assert_none_held(0, LOCK_RANK_MAX, __func__)
void lockdep_assert_mutex(const struct mutex *m, const char *func);
void lockdep_assert_rwlock(const struct rwlock *l, bool exclusive, const char *func);
void lockdep_assert_none_held(unsigned lo, unsigned hi, const char *func);
/* Does the calling thread hold m? (for order functions) */
bool mutex_held(const struct mutex *m);
#else
#define assert_locked(m)	((void)(m))
#define assert_rdlocked(l)	((void)(l))
#define assert_wrlocked(l)	((void)(l))
#define assert_none_held(lo, hi) ((void)(lo), (void)(hi))
#define assert_no_locks()	 ((void)0)
#endif

#endif
