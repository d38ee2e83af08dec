/**
 * The behaviour of a linked number's entity: it owns the number's session with the network, its
 * limits, trust index and daily counters. Its state is rebuilt from PostgreSQL when it starts,
 * so an entity restarted or moved to another runner enforces exactly the same limits.
 *
 * Everything that changes the number's state (sends, checks, the network's events) runs one at a
 * time; reads (limits, connection) do not wait for them. The parts: NumberCounters (usage, trust,
 * limits), NumberConnection (the session and its events), NumberSend and NumberCheck.
 */
import * as Entity from "@effect/cluster/Entity"
import { Sharding } from "@effect/cluster/Sharding"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import { Capacity, NotConnected, NumberNotFound } from "@wagate/domain/ApiError"
import { type ConnectionState, NumberEntity, NumberMoved, type SendPayload } from "@wagate/entities/NumberEntity"
import { Conversations } from "@wagate/store/Conversations"
import { NumberStates } from "@wagate/store/NumberStates"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as DomainClock from "@wagate/domain/DomainClock"
import * as NumberCheck from "./NumberCheck.js"
import * as NumberConnection from "./NumberConnection.js"
import { knownContacts, type NumberContext } from "./NumberContext.js"
import { NumberHooks } from "./NumberHooks.js"
import * as NumberCounters from "./NumberCounters.js"
import * as NumberSend from "./NumberSend.js"
import * as RequestGuard from "./RequestGuard.js"
import { RunningNumbers } from "./RunningNumbers.js"

export { newWaMessageId } from "./NumberSend.js"

/**
 * How long a send or check waits for a linked number that is still connecting: a number that has
 * just moved to this runner (a failover, a runner stopping or joining in a rolling restart)
 * reconnects within a few seconds on a busy runner, and a send made meanwhile should wait for it
 * rather than be refused. Below the api's entity timeout (15 s). A number still connecting after
 * it is temporarily unavailable, not disconnected: 503 `capacity` with Retry-After, so the client
 * tries again (409 `not_connected` is for a number that needs someone to act: not linked, logged
 * out, failed).
 */
export const STARTING_GRACE = "10 seconds"

/** How often a request waiting for the number to connect looks whether its shard has moved on. */
const MOVE_CHECK_INTERVAL = "200 millis"

/**
 * Runs an entity's start in a scope of its own, closed as soon as the start fails. The cluster
 * starts an entity in the entity's scope and, when the start fails, starts it again in that same
 * scope (its EntityManager retries the build): what the failed start had opened, above all the
 * number's session with the network, would stay open beside the next start's, and the network
 * would tell the first session it was replaced, which that start's leftovers would record as the
 * number's status.
 */
const closedOnFailure = <A, E, R>(start: Effect.Effect<A, E, R>): Effect.Effect<A, E, Exclude<R, Scope.Scope> | Scope.Scope> =>
  Effect.gen(function*() {
    const own = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
    return yield* start.pipe(
      Scope.extend(own),
      Effect.onExit((exit) => Exit.isFailure(exit) ? Scope.close(own, exit) : Effect.void)
    )
  })

export const NumberLive = NumberEntity.toLayer(
  closedOnFailure(Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const sharding = yield* Sharding
    const numberId = Number(address.entityId)
    const states = yield* NumberStates
    const conversations = yield* Conversations

    const found = yield* states.snapshot(numberId)
    if (Option.isNone(found) || found.value.deleted) {
      // Not a number (or no longer one): nothing to connect; every call says so.
      const gone = new NotConnected({ error: "No such number" })
      const none: ConnectionState = { status: "none", qr: null, pairingCode: null, reason: null }
      return NumberEntity.of({
        Send: ({ payload }) => Effect.fail(payload.accountId === undefined ? gone : new NumberNotFound()),
        Limits: () => Effect.die(gone),
        TrustFactors: () => Effect.die(gone),
        Check: () => Effect.fail(gone),
        Connection: () => Effect.succeed(none),
        Link: () => Effect.succeed(none),
        Unlink: () => Effect.succeed(none),
        RefreshPaused: () => Effect.succeed(false),
        Wake: () => Effect.succeed(none)
      })
    }
    const number = { ...found.value }
    const running = yield* RunningNumbers
    yield* running.hold(numberId)
    const start = yield* DomainClock.now
    const counters = NumberCounters.make({
      states,
      number,
      usage: yield* states.usage(numberId, start),
      history: yield* states.sendHistory(numberId, start)
    })
    const mutex = yield* Effect.makeSemaphore(1)
    const ctx: NumberContext = {
      numberId,
      number,
      counters,
      connection: {
        current: { status: number.linked ? "STARTING" : number.status, qr: null, pairingCode: null, reason: null }
      },
      serialized: mutex.withPermits(1),
      contacts: knownContacts(conversations, numberId),
      inFlight: new Set()
    }
    const { serialized } = ctx

    const connection = yield* NumberConnection.open(ctx)
    yield* Effect.flatMap(NumberHooks, (hooks) => hooks.afterConnect?.(numberId) ?? Effect.void)
    // The trust index is computed as the number starts, beside its connection, rather than by its
    // first send: after a restart every number's first send would otherwise wait for it (two
    // queries and a write), all of them at once. A send arriving meanwhile waits for it in the
    // number's section; if it fails, the first send computes it.
    yield* Effect.forkScoped(Effect.ignore(serialized(counters.refreshTrust(start))))
    const send = yield* NumberSend.make(ctx, connection.session)
    const check = yield* NumberCheck.make(ctx, connection.session, states)

    // A linked number that has just started (moved to this runner, or woken) connects within
    // moments: a send or check arriving meanwhile waits for it rather than being refused. If the
    // number's shard moves on meanwhile (a runner joining in a rolling restart), the wait ends at
    // once with NumberMoved, so the request goes to the new owner and the hand-over, which waits
    // for this request, is not held up.
    // (Checked first: a timeout forks a fiber and a timer, and nearly every send finds it connected.)
    const starting = () => number.linked && ctx.connection.current.status === "STARTING"
    const waitConnected = Effect.gen(function*() {
      while (starting()) {
        if (yield* connection.movedAway) return yield* new NumberMoved()
        yield* connection.reclaim
        yield* Effect.raceFirst(connection.nextChange, Effect.sleep(MOVE_CHECK_INTERVAL))
      }
    }).pipe(
      Effect.timeout(STARTING_GRACE),
      Effect.catchTag("TimeoutException", () =>
        Effect.zipRight(
          Effect.logWarning(
            `number ${numberId}: still connecting after ${STARTING_GRACE} ` +
              `(${ctx.connection.current.reason ?? "no reason given"}); the request is refused`
          ),
          Effect.fail(new Capacity({ error: "The number is still connecting; try again", retryAfter: 5 }))
        ))
    )
    const connected = Effect.suspend(() => starting() ? waitConnected : Effect.void)

    /** One request: storage errors and defects fail it alone, typed; the entity stays up. */
    const guarded = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      RequestGuard.guarded(effect, (fault) =>
        Effect.zipRight(
          Effect.logError(`number ${numberId}: ${fault}`),
          states.setFault(numberId, fault, new Date())
        ))

    // The send takes the number's section itself, for its decision and record only.
    const sendHere = (payload: SendPayload) =>
      payload.accountId !== undefined && payload.accountId !== number.accountId
        ? Effect.fail(new NumberNotFound())
        : guarded(Effect.zipRight(connected, send(payload)))
    // Sends from this process reach the entity directly, for as long as it owns the shard.
    yield* running.serve(numberId, sendHere, {
      here: () => sharding.hasShardId(address.shardId),
      grace: Option.match(yield* Effect.serviceOption(ShardingConfig.ShardingConfig), {
        onNone: () => ShardingConfig.defaults.entityTerminationTimeout,
        onSome: (config) => config.entityTerminationTimeout
      })
    })

    return NumberEntity.of({
      Send: ({ payload }) => sendHere(payload),
      Limits: () =>
        Effect.flatMap(DomainClock.now, counters.limitsView).pipe(
          guarded,
          Effect.catchTag("InvalidParam", (e) => new Capacity({ error: e.error, retryAfter: 5 }))
        ),
      TrustFactors: () =>
        Effect.flatMap(DomainClock.now, counters.trustFactors).pipe(
          guarded,
          Effect.catchTag("InvalidParam", (e) => new Capacity({ error: e.error, retryAfter: 5 }))
        ),
      Check: ({ payload }) => guarded(Effect.zipRight(connected, serialized(check(payload.phone)))),
      // Asked by the runner taking the number's shard over (Wake) and by anyone reading the status:
      // an entity that gave its number up and has its shard back connects again first.
      Connection: () => Effect.zipRight(connection.reclaim, Effect.sync(() => ctx.connection.current)),
      Link: ({ payload }) =>
        Effect.gen(function*() {
          // Answer with something to show from this attempt: the QR, the code, or its outcome (the
          // network is quick). A STOPPED or FAILED is the attempt's outcome only once it has begun:
          // before, it is the state the link starts from (after an unlink, or a failed link), or
          // a late word of the logout a relink made just before.
          let begun = false
          const outcome = yield* connection.awaitState(({ status }) => {
            if (status === "STARTING") begun = true
            return status === "SCAN_QR_CODE" || status === "WORKING" || (begun && (status === "FAILED" || status === "STOPPED"))
          })
          // Kept first: a runner taking the number over while it is being linked goes on the same way.
          if (number.linkMethod !== payload.method) {
            yield* states.setLinkMethod(numberId, payload.method)
            number.linkMethod = payload.method
          }
          const begins = yield* connection.session.link({ kind: payload.method }).pipe(
            Effect.as(true),
            Effect.catchTag("DriverUnavailable", (e) => new Capacity({ error: `Linking unavailable: ${e.reason}` })),
            // Nothing begins (an account the network refused): the state it reported says why.
            Effect.catchTag("LinkRefused", () => Effect.succeed(false))
          )
          if (!begins) return ctx.connection.current
          return yield* outcome.pipe(
            Effect.timeout("5 seconds"),
            Effect.catchTag("TimeoutException", () => Effect.sync(() => ctx.connection.current))
          )
        }).pipe(Effect.scoped, guarded),
      Unlink: () =>
        Effect.gen(function*() {
          yield* connection.session.logout
          yield* Effect.whileLoop({
            while: () => ctx.connection.current.status !== "STOPPED",
            body: () => connection.nextChange,
            step: () => {}
          }).pipe(Effect.timeout("5 seconds"), Effect.ignore)
          return ctx.connection.current
        }).pipe(guarded),
      RefreshPaused: () =>
        serialized(Effect.flatMap(states.snapshot(numberId), (now) => {
          const wasPaused = number.paused
          number.paused = Option.isSome(now) && now.value.paused
          number.pausedBy = Option.isSome(now) ? now.value.pausedBy : null
          number.paidThrough = Option.isSome(now) ? now.value.paidThrough : number.paidThrough
          // Resumed: what it queued while paused goes out now, not at the next sweep.
          return wasPaused && !number.paused ? Effect.as(connection.sendPending, false) : Effect.succeed(number.paused)
        })).pipe(guarded),
      Wake: () => Effect.zipRight(connection.reclaim, Effect.sync(() => ctx.connection.current))
    })
  })),
  { concurrency: "unbounded", maxIdleTime: "5 minutes" }
)
