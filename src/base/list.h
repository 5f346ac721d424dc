/*
 * list.h - intrusive circular doubly linked lists.
 *
 * A struct list is both the head of a list and the link embedded in each
 * member. An unlinked node points at itself, so list_empty() on a node tells
 * whether it is on a list.
 */
#ifndef JNFS_BASE_LIST_H
#define JNFS_BASE_LIST_H

#include <stdbool.h>
#include "base/compiler.h"

struct list {
	struct list *next, *prev;
};

#define LIST_INIT(name)                                                                            \
	{                                                                                          \
		&(name), &(name)                                                                   \
	}

static inline void list_init(struct list *l)
{
	l->next = l;
	l->prev = l;
}

static inline bool list_empty(const struct list *l)
{
	return l->next == l;
}

static inline void list_insert_between(struct list *n, struct list *prev, struct list *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}

/* Add n at the tail of head. */
static inline void list_add_tail(struct list *n, struct list *head)
{
	list_insert_between(n, head->prev, head);
}

/* Add n at the front of head. */
static inline void list_add(struct list *n, struct list *head)
{
	list_insert_between(n, head, head->next);
}

/* Unlink n and leave it pointing at itself. */
static inline void list_del(struct list *n)
{
	n->next->prev = n->prev;
	n->prev->next = n->next;
	list_init(n);
}

static inline void list_move_tail(struct list *n, struct list *head)
{
	list_del(n);
	list_add_tail(n, head);
}

/* Move every member of from to the tail of to; from becomes empty. */
static inline void list_splice_tail(struct list *from, struct list *to)
{
	if (list_empty(from))
		return;
	struct list *first = from->next, *last = from->prev;
	first->prev = to->prev;
	to->prev->next = first;
	last->next = to;
	to->prev = last;
	list_init(from);
}

#define list_entry(ptr, type, member)	     container_of(ptr, type, member)
#define list_first_entry(head, type, member) list_entry((head)->next, type, member)
#define list_last_entry(head, type, member)  list_entry((head)->prev, type, member)

#define list_for_each_entry(pos, head, member)                                                     \
	for (pos = list_entry((head)->next, __typeof__(*pos), member); &pos->member != (head);     \
	     pos = list_entry(pos->member.next, __typeof__(*pos), member))

/* Safe against removal of pos. */
#define list_for_each_entry_safe(pos, tmp, head, member)                                           \
	for (pos = list_entry((head)->next, __typeof__(*pos), member),                             \
	    tmp = list_entry(pos->member.next, __typeof__(*pos), member);                          \
	     &pos->member != (head);                                                               \
	     pos = tmp, tmp = list_entry(tmp->member.next, __typeof__(*tmp), member))

#endif
