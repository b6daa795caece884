/*
 * sink.c - the backend-neutral half of sink.h: dispatch through the ops
 * table, so the pipeline never names a backend.
 */
#include "agent/sink.h"

agent_send_rc agent_sink_send(agent_sink *s, const agent_batch *b,
                              agent_reject_fn reject, void *ctx, char *why,
                              size_t why_cap)
{
    return s->ops->send(s, b, reject, ctx, why, why_cap);
}

void agent_sink_free(agent_sink *s)
{
    if (s)
        s->ops->free(s);
}
