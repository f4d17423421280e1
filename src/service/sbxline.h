/* The line of sandbox creates waiting for room on this host: fair between courses, first come first served within one. */
#ifndef PROCTOR_SERVICE_SBXLINE_H
#define PROCTOR_SERVICE_SBXLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/*
 * A create that finds no room (every slot of the host taken, or its token
 * at its max_live_sandboxes) waits here without a thread: its request is
 * suspended and, each time it is called again, asks sbx_line_turn()
 * whether it is its turn.  The line only orders; the caller says what room
 * there is (free slots, its token's room) and does the create itself once
 * granted, then says how it went (sbx_line_done).  Safe from any thread.
 *
 * Order: every waiter gets a key when it joins, one more than the larger
 * of its course's last waiter's key and the key of the last grant (start-
 * time fair queuing with equal weights); the turn goes to the waiter with
 * the smallest (key, arrival) that has room.  So one course's waiters go
 * in the order they came, courses alternate one create each, and a course
 * that comes late neither jumps ahead of those waiting nor waits behind a
 * whole backlog of another course's.
 */
struct sbx_line;

int sbx_line_new(struct sbx_line **ret, struct err *e);
/* Accepts NULL; returns NULL. */
struct sbx_line *sbx_line_free(struct sbx_line *l);

/* Join the line: a ticket that names the waiter in the calls below. */
int sbx_line_join(struct sbx_line *l, int64_t course_id, int64_t token_id, uint64_t *ret_ticket,
		  struct err *e);
/* Leave it, granted or not (the request ended); an unknown ticket is
 * ignored. */
void sbx_line_leave(struct sbx_line *l, uint64_t ticket);

/*
 * Is it `ticket`'s turn?  `free_slots`: slots of the host not held by a
 * live sandbox now; `token_room`: how many more live sandboxes the
 * waiter's token may have (INT64_MAX: no maximum), as the store counts
 * them.  Creates granted but not done count against both.  True: the
 * waiter is granted (it stays in the line, holding its place, until
 * sbx_line_done or sbx_line_leave).
 */
bool sbx_line_turn(struct sbx_line *l, uint64_t ticket, size_t free_slots, int64_t token_room);
/*
 * A granted create is done: it leaves the line (`again` false), or it
 * found no room after all (the slot taken by a grading, its token's place
 * by another server) and waits again with its place kept (`again` true).
 */
void sbx_line_done(struct sbx_line *l, uint64_t ticket, bool again);

/* How many creates wait (granted ones left out), and how many are before
 * `ticket` in the line's order now (0 for an unknown ticket). */
size_t sbx_line_waiting(struct sbx_line *l);
size_t sbx_line_ahead(struct sbx_line *l, uint64_t ticket);

#endif
