/* The line of sandbox creates waiting for room (sbxline.h). */
#include "service/sbxline.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

/* A line is short (creates past a host's slots, bounded by the server's
 * connections), so a flat array searched whole is simplest and enough. */
struct waiter {
	uint64_t ticket;
	uint64_t key; /* the fair order, then the ticket */
	int64_t course_id, token_id;
	bool granted;
	bool has_room; /* its token had room at its last call (true until told) */
};

struct sbx_line {
	pthread_mutex_t lock;
	struct waiter *w;
	size_t n, cap;
	uint64_t next_ticket;
	uint64_t vtime; /* the key of the latest grant */
};

int sbx_line_new(struct sbx_line **ret, struct err *e)
{
	struct sbx_line *l = calloc(1, sizeof(*l));

	if (!l)
		return err_set(e, ENOMEM, "the line of sandbox creates");
	pthread_mutex_init(&l->lock, NULL);
	l->next_ticket = 1;
	*ret = l;
	return 0;
}

struct sbx_line *sbx_line_free(struct sbx_line *l)
{
	if (!l)
		return NULL;
	pthread_mutex_destroy(&l->lock);
	free(l->w);
	free(l);
	return NULL;
}

static struct waiter *find(struct sbx_line *l, uint64_t ticket)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->w[i].ticket == ticket)
			return &l->w[i];
	return NULL;
}

static bool before(const struct waiter *a, const struct waiter *b)
{
	return a->key < b->key || (a->key == b->key && a->ticket < b->ticket);
}

int sbx_line_join(struct sbx_line *l, int64_t course_id, int64_t token_id, uint64_t *ret_ticket,
		  struct err *e)
{
	pthread_mutex_lock(&l->lock);
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct waiter *w = realloc(l->w, cap * sizeof(*w));
		if (!w) {
			pthread_mutex_unlock(&l->lock);
			return err_set(e, ENOMEM, "the line of sandbox creates");
		}
		l->w = w;
		l->cap = cap;
	}
	/* After the course's last waiter, and never before the last grant:
	 * a course that had no one waiting starts at the present. */
	uint64_t key = l->vtime;
	for (size_t i = 0; i < l->n; i++)
		if (l->w[i].course_id == course_id && l->w[i].key > key)
			key = l->w[i].key;
	uint64_t ticket = l->next_ticket++;
	l->w[l->n++] = (struct waiter){.ticket = ticket,
				       .key = key + 1,
				       .course_id = course_id,
				       .token_id = token_id,
				       .has_room = true};
	pthread_mutex_unlock(&l->lock);
	*ret_ticket = ticket;
	return 0;
}

void sbx_line_leave(struct sbx_line *l, uint64_t ticket)
{
	pthread_mutex_lock(&l->lock);
	struct waiter *w = find(l, ticket);
	if (w)
		*w = l->w[--l->n];
	pthread_mutex_unlock(&l->lock);
}

bool sbx_line_turn(struct sbx_line *l, uint64_t ticket, size_t free_slots, int64_t token_room)
{
	bool go = false;

	pthread_mutex_lock(&l->lock);
	struct waiter *me = find(l, ticket), *best = NULL;
	if (!me || me->granted) {
		go = me != NULL;
		goto out;
	}
	size_t granted = 0;
	int64_t granted_token = 0;
	for (size_t i = 0; i < l->n; i++) {
		granted += l->w[i].granted;
		granted_token += l->w[i].granted && l->w[i].token_id == me->token_id;
	}
	me->has_room = token_room > granted_token;
	if (free_slots <= granted)
		goto out;
	/* A waiter whose token is full steps aside for the next, keeping its
	 * place for when its token has room again. */
	for (size_t i = 0; i < l->n; i++)
		if (!l->w[i].granted && l->w[i].has_room && (!best || before(&l->w[i], best)))
			best = &l->w[i];
	if (best == me) {
		me->granted = true;
		if (me->key > l->vtime)
			l->vtime = me->key;
		go = true;
	}
out:
	pthread_mutex_unlock(&l->lock);
	return go;
}

void sbx_line_done(struct sbx_line *l, uint64_t ticket, bool again)
{
	pthread_mutex_lock(&l->lock);
	struct waiter *w = find(l, ticket);
	if (w && again)
		w->granted = false;
	else if (w)
		*w = l->w[--l->n];
	pthread_mutex_unlock(&l->lock);
}

size_t sbx_line_waiting(struct sbx_line *l)
{
	size_t n = 0;

	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < l->n; i++)
		n += !l->w[i].granted;
	pthread_mutex_unlock(&l->lock);
	return n;
}

size_t sbx_line_ahead(struct sbx_line *l, uint64_t ticket)
{
	size_t n = 0;

	pthread_mutex_lock(&l->lock);
	const struct waiter *me = find(l, ticket);
	for (size_t i = 0; me && i < l->n; i++)
		n += !l->w[i].granted && before(&l->w[i], me);
	pthread_mutex_unlock(&l->lock);
	return n;
}
