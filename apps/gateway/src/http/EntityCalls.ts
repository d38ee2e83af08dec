/**
 * Calling a number's or an account's entity from an HTTP handler: never waiting forever (a
 * shard without a runner would retry for ever), and answering 503 `capacity` when the entity
 * cannot take the call: timed out, mailbox full, or storage trouble. A request the entity
 * dropped after dying on it twice (`internal_error`) answers 500 with the entity's message; the
 * endpoints do not declare it, since it is never the client's doing.
 */
import type { AlreadyProcessingMessage, MailboxFull, PersistenceError } from "@effect/cluster/ClusterError"
import { Capacity, type InternalError } from "@wagate/domain/ApiError"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Prometheus from "../infra/Prometheus.js"

type ClusterFailure = MailboxFull | AlreadyProcessingMessage | PersistenceError | InternalError

const isClusterFailure = (e: unknown): e is ClusterFailure =>
  Predicate.isTagged(e, "MailboxFull") || Predicate.isTagged(e, "AlreadyProcessingMessage") ||
  Predicate.isTagged(e, "PersistenceError") || Predicate.isTagged(e, "InternalError")

export const bounded = (timeout: Duration.DurationInput) =>
<A, E, R>(call: Effect.Effect<A, E | ClusterFailure, R>): Effect.Effect<A, Exclude<E, ClusterFailure> | Capacity, R> =>
  call.pipe(
    (counted) =>
      Effect.acquireUseRelease(Effect.sync(Prometheus.callStarted), () => counted, () => Effect.sync(Prometheus.callEnded)),
    Effect.timeoutFail({
      duration: timeout,
      onTimeout: () => new Capacity({ error: "The number did not answer in time; try again", retryAfter: 5 })
    }),
    // The runner went away while the call was on its socket (kill -9, a crashed host): whether
    // it got there is unknown, so the answer is "try again" (with the same Idempotency-Key).
    Effect.catchSomeDefect((defect) =>
      Predicate.isTagged(defect, "SocketError") || Predicate.isTagged(defect, "RunnerUnavailable")
        ? Option.some(Effect.fail(new Capacity({ error: "The number's runner went away; try again", retryAfter: 1 })))
        : Option.none()
    ),
    Effect.catchIf(isClusterFailure, (e) =>
      e._tag === "InternalError"
        ? Effect.die(e)
        : Effect.zipRight(
          e._tag === "PersistenceError" ? Effect.logError("entity call failed", e) : Effect.void,
          Effect.fail(new Capacity({ retryAfter: 5 }))
        ))
  )
