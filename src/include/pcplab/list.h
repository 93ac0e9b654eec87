/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Doubly linked circular lists with the kernel's list_head names, so that
 * free lists and PCP lists read as they do in mm/.
 *
 * Unlike the kernel's, a link is 32 bits: the offset, in 8-byte units, of
 * the list_head it points to from list_base, the start of the region that
 * holds every list_head of the model (memmap.c: the pgdats, the per-CPU
 * pagesets, then the memory map). Half-size links make struct page 16
 * bytes instead of 24, and the simulator of a 192-CPU machine spends most
 * of its time waiting for struct pages to come from memory. The calls are
 * the kernel's; only code that reads ->next or ->prev itself must go
 * through list_at().
 */
#ifndef PCPLAB_LIST_H
#define PCPLAB_LIST_H

#include "types.h"

struct list_head {
	u32 next, prev; /* list_off() of the neighbours */
} __attribute__((aligned(8))); /* an offset counts 8-byte units */

/* The start of the region of all list_heads; offset 0 is never a list. */
extern char *list_base;

/* The list_head at offset @off. */
static inline struct list_head *list_at(u32 off)
{
	return (struct list_head *)(list_base + ((size_t)off << 3));
}

/* The offset of @head in the list region. */
static inline u32 list_off(const struct list_head *head)
{
	return (u32)(((const char *)head - list_base) >> 3);
}

/*
 * CONFIG_DEBUG_LIST of the modelled kernel build (the spec's
 * config_debug_list): every list_add() and list_del() first calls the
 * out-of-line check of lib/list_debug.c, as the kernel's does
 * (src/lib/list_debug.c). Off, one predicted branch a list operation.
 */
extern bool config_debug_list;
bool __list_add_valid_or_report(struct list_head *new, u32 prev, u32 next);
bool __list_del_entry_valid_or_report(struct list_head *entry);
void list_checks_uncharged(bool on);

static inline void INIT_LIST_HEAD(struct list_head *list)
{
	list->next = list->prev = list_off(list);
}

/*
 * Link @new between neighbours at offsets @prev and @next. Offsets, not
 * pointers: each conversion costs an instruction or two on the fast path.
 */
static inline void __list_add(struct list_head *new, u32 prev, u32 next)
{
	u32 off = list_off(new);

	if (unlikely(config_debug_list) &&
	    !__list_add_valid_or_report(new, prev, next))
		return;
	list_at(next)->prev = off;
	new->next = next;
	new->prev = prev;
	list_at(prev)->next = off;
}

/* Insert @new right after @head (stack order). */
static inline void list_add(struct list_head *new, struct list_head *head)
{
	__list_add(new, list_off(head), head->next);
}

/* Insert @new right before @head (queue order). */
static inline void list_add_tail(struct list_head *new, struct list_head *head)
{
	__list_add(new, head->prev, list_off(head));
}

/* Unlink @entry; its links become 0, the kernel's LIST_POISON. */
static inline void list_del(struct list_head *entry)
{
	if (unlikely(config_debug_list) &&
	    !__list_del_entry_valid_or_report(entry))
		return;
	list_at(entry->next)->prev = entry->prev;
	list_at(entry->prev)->next = entry->next;
	entry->next = entry->prev = 0;
}

static inline void list_move(struct list_head *entry, struct list_head *head)
{
	list_del(entry);
	list_add(entry, head);
}

static inline void list_move_tail(struct list_head *entry,
				  struct list_head *head)
{
	list_del(entry);
	list_add_tail(entry, head);
}

static inline bool list_empty(const struct list_head *head)
{
	return list_at(head->next) == head;
}

#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_first_entry(head, type, member) \
	list_entry(list_at((head)->next), type, member)
#define list_last_entry(head, type, member) \
	list_entry(list_at((head)->prev), type, member)
#define list_first_entry_or_null(head, type, member) \
	(list_empty(head) ? NULL : list_first_entry(head, type, member))
#define list_next_entry(pos, member) \
	list_entry(list_at((pos)->member.next), __typeof__(*(pos)), member)

#define list_for_each_entry(pos, head, member)                       \
	for (pos = list_first_entry(head, __typeof__(*pos), member); \
	     &pos->member != (head); pos = list_next_entry(pos, member))

#define list_for_each_entry_safe(pos, n, head, member)               \
	for (pos = list_first_entry(head, __typeof__(*pos), member), \
	    n = list_next_entry(pos, member);                        \
	     &pos->member != (head); pos = n, n = list_next_entry(n, member))

#endif
