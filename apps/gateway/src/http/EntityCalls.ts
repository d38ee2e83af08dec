/**
 * Calling a number's or an account's entity from an HTTP handler: never waiting forever (a
 * shard without a runner would retry for ever), and answering 503 `capacity` when the entity
 * cannot take the call: timed out, mailbox full, or storage trouble. A request that met its
 * number on the way out of a runner (`NumberMoved`: the shard moved while the request waited for
 * the number to connect, and nothing was done) is asked again, and the cluster takes it to the
 * number's new owner, within the same time bound. A call interrupted there (its runner stopping)
 * answers 503 `capacity` too. A request the entity
 * dropped after dying on it twice (`internal_error`) answers 500 with the entity's message; the
 * endpoints do not declare it, since it is never the client's doing.
 */
import type { AlreadyProcessingMessage, MailboxFull, PersistenceError } from "@effect/cluster/ClusterError"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Capacity, type InternalError } from "@wagate/domain/ApiError"
import { CurrentKey } from "@wagate/domain/Auth"
import type { NumberMoved } from "@wagate/entities/NumberEntity"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Runtime from "effect/Runtime"
import * as Prometheus from "../infra/Prometheus.js"

type ClusterFailure = MailboxFull | AlreadyProcessingMessage | PersistenceError | InternalError

const isClusterFailure = (e: unknown): e is ClusterFailure =>
  Predicate.isTagged(e, "MailboxFull") || Predicate.isTagged(e, "AlreadyProcessingMessage") ||
  Predicate.isTagged(e, "PersistenceError") || Predicate.isTagged(e, "InternalError")

/** How soon a request that met its number moving is asked again (the new owner takes a moment). */
const MOVED_RETRY_DELAY = "100 millis"

const isMoved = (e: unknown): e is NumberMoved => Predicate.isTagged(e, "NumberMoved")

/** Asks again, for as long as the caller waits, while the answer is that the number moved. */
const followMoves = <A, E, R>(call: Effect.Effect<A, E | NumberMoved, R>): Effect.Effect<A, E, R> =>
  Effect.catchAll(call, (e) => isMoved(e) ? Effect.delay(followMoves(call), MOVED_RETRY_DELAY) : Effect.fail(e))

/** What the HTTP stack and the authentication provide for one request. */
const withoutRequest = Context.omit(
  HttpServerRequest.HttpServerRequest,
  HttpServerRequest.ParsedSearchParams,
  HttpRouter.RouteContext,
  CurrentKey
)

/**
 * The call without the request. The cluster builds an entity in the fiber of the call that starts
 * it, and the entity's fibers keep that fiber's refs for the entity's life: not only their current
 * values but, in each ref's history, the value every ancestor fiber had (Effect keeps them for
 * joins), so a `locally` around the call does not let go of the request's. A number first called
 * by a request would otherwise log with that request's `request_id` for as long as it runs, and
 * keep the request itself (its context, its body, its response, the key that made it) in memory
 * until it stops.
 *
 * So the call runs in a fiber of its own that descends from no request: it starts from each
 * ref's current value alone, without the request's services, log annotations or response
 * handlers (its parent span stays, for traces), and it is interrupted with the request.
 */
export const detached = <A, E, R>(call: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.runtime<R>(), (runtime) => {
    const refs = runtime.fiberRefs
    const context = withoutRequest(runtime.context) as Context.Context<R>
    // FiberRefs.unsafeMake's own key type: a map holds refs of every value type.
    const current = new Map<FiberRef.FiberRef<any>, readonly [readonly [FiberId.Single, unknown]]>()
    for (const ref of FiberRefs.fiberRefs(refs)) current.set(ref, [[FiberId.none, FiberRefs.getOrDefault(refs, ref)]])
    current.set(FiberRef.currentContext, [[FiberId.none, context]])
    current.set(FiberRef.currentLogAnnotations, [[FiberId.none, HashMap.empty()]])
    current.set(HttpApp.currentPreResponseHandlers, [[FiberId.none, Option.none()]])
    const detachedRuntime = Runtime.make({ context, runtimeFlags: runtime.runtimeFlags, fiberRefs: FiberRefs.unsafeMake(current) })
    const fiber = Runtime.runFork(detachedRuntime)(call)
    return Effect.onInterrupt(Fiber.join(fiber), () => Fiber.interrupt(fiber))
  })

/** An entity call through the cluster, `detached` from the request and bounded as `boundedInPlace`. */
export const bounded = (timeout: Duration.DurationInput) =>
<A, E, R>(
  call: Effect.Effect<A, E | ClusterFailure | NumberMoved, R>
): Effect.Effect<A, Exclude<E, ClusterFailure> | Capacity, R> => boundedInPlace(timeout)(detached(call))

/**
 * The first link of a number just added. The number stays added (and its first day charged)
 * when its entity does not answer, so "try again" would meet `phone_taken`: the refusal says the
 * number is there and how to link it (`linkIt`).
 */
export const firstLink = (numberId: number, linkIt: string) =>
<A, E, R>(link: Effect.Effect<A, E | Capacity, R>): Effect.Effect<A, E | Capacity, R> =>
  Effect.catchIf(link, (e): e is Capacity => e instanceof Capacity, (e) =>
    Effect.fail(
      new Capacity({
        error: `Number ${numberId} was added, but it could not start linking (${e.error.replace(/; try again$/, "")}): ${linkIt}`,
        ...(e.retryAfter === undefined ? {} : { retryAfter: e.retryAfter })
      })
    ))

/**
 * An entity call bounded in time, followed when its number moves, and its failures answered as
 * the API does, in the request's own fiber: for a call that may reach an entity already running
 * in this process directly (a send) and detaches its way through the cluster itself.
 */
export const boundedInPlace = (timeout: Duration.DurationInput) =>
<A, E, R>(
  call: Effect.Effect<A, E | ClusterFailure | NumberMoved, R>
): Effect.Effect<A, Exclude<E, ClusterFailure> | Capacity, R> =>
  call.pipe(
    followMoves,
    (counted) =>
      Effect.acquireUseRelease(Effect.sync(Prometheus.callStarted), () => counted, () => Effect.sync(Prometheus.callEnded)),
    Effect.timeoutFail({
      duration: timeout,
      onTimeout: () => new Capacity({ error: "The number did not answer in time; try again", retryAfter: 5 })
    }),
    // The entity's runner stopped while the call ran there (a stop interrupts what outlasts its
    // grace): whether it was done is unknown, so the answer is "try again" (with the same
    // Idempotency-Key), not an interruption, which HTTP would answer 503 with no body.
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.fail(new Capacity({ error: "The number's runner stopped while handling the request; try again", retryAfter: 1 }))
        : Effect.failCause(cause)
    ),
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
