/**
 * The protocol of an account's webhook entity (id = account id). The entity delivers the
 * account's outbox in order, one event at a time, and is the single writer of the account's
 * webhook endpoint and of its events' delivery state. Its state is in PostgreSQL (the outbox
 * rows' attempts and next_attempt_at), so every call is volatile: a lost call is made up for by
 * the dispatcher, which wakes the entity of every account with a due event.
 *
 * Old and new processes exchange these messages during a rolling upgrade: a release only adds
 * optional fields to them (see this package's index).
 *
 * @since 1.0.0
 */
import * as Entity from "@effect/cluster/Entity"
import * as Rpc from "@effect/rpc/Rpc"
import * as E from "@wagate/domain/ApiError"
import * as Schema from "effect/Schema"

/**
 * Why a change can fail besides its own errors: a storage error (`capacity` to try again, or a
 * value the store refuses) or a fault of the gateway; the entity stays up (`RequestGuard`).
 */
const Guarded = [E.InvalidParam, E.Capacity, E.InternalError] as const

/** @since 1.0.0 */
export const WebhookEntity = Entity.make("Webhook", [
  /** Look at the outbox now: an event was added, became due, or the endpoint changed. */
  Rpc.make("Wake"),
  /** Creates the endpoint (answering its new secret) or changes its URL and whether it is on. */
  Rpc.make("Configure", {
    payload: { url: Schema.String, enabled: Schema.Boolean },
    success: Schema.Struct({ secret: Schema.NullOr(Schema.String) }),
    error: Schema.Union(...Guarded)
  }),
  /** A new secret; the previous one keeps signing through the grace period. */
  Rpc.make("RotateSecret", {
    success: Schema.Struct({ secret: Schema.String }),
    error: Schema.Union(E.NotFound, E.Capacity, E.InternalError)
  }),
  /** Queues one event (by id) or the events recorded in [since, until) (epoch ms) again. */
  Rpc.make("Resend", {
    payload: {
      eventId: Schema.optional(Schema.Int),
      since: Schema.optional(Schema.Number),
      until: Schema.optional(Schema.Number)
    },
    success: Schema.Struct({ queued: Schema.Int }),
    error: Schema.Union(E.NotFound, ...Guarded)
  })
])
