/**
 * The behaviour of an account's webhook entity: one delivery loop that sends the account's
 * events in id order, each until a 2xx answer, waiting out the retry schedule on a failing event
 * before any later one (per-account ordering). Everything it knows is in PostgreSQL, read again
 * on each pass, so a loop that stops (idle entity, moved shard, crashed runner) is restarted by
 * the next wake-up exactly where it was.
 *
 * The loop runs beside the entity's RPCs: `Wake` only nudges it, so a slow receiver never fills
 * the mailbox, and the loop of one account never waits for another's.
 */
import * as Entity from "@effect/cluster/Entity"
import { InternalError, InvalidParam, NotFound } from "@wagate/domain/ApiError"
import * as RequestGuard from "@wagate/entities/RequestGuard"
import { WebhookEntity } from "@wagate/entities/WebhookEntity"
import * as DomainClock from "@wagate/domain/DomainClock"
import type { StoredEnvelope } from "@wagate/store/Outbox"
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Random from "effect/Random"
import * as LoopBackoff from "./LoopBackoff.js"
import * as RetrySchedule from "./RetrySchedule.js"
import * as Signing from "./Signing.js"
import { WebhookConfig } from "./WebhookConfig.js"
import * as WebhookSender from "./WebhookSender.js"
import {
  type Endpoint,
  MAX_RESEND,
  type Outcome,
  type Queued,
  type Unreadable,
  type UnreadableSecret,
  WebhookStore
} from "./WebhookStore.js"
import * as WebhookUrl from "./WebhookUrl.js"

/** Events read from the queue at a time. */
const BATCH = 100
/** The loop looks at the queue at least this often, whatever it waits for. */
const MAX_WAIT_MS = 60_000

/** The request body: the envelope, keys in the order of the specification. */
export const bodyOf = (payload: StoredEnvelope): string =>
  JSON.stringify({ event: payload.event, timestamp: payload.timestamp, data: payload.data })

/** What held a pass of the loop up: the database away or busy, or a fault of the gateway. */
type Trouble = { readonly _tag: "Database"; readonly reason: string } | { readonly _tag: "Defect" }

const troubleOf = (cause: Cause.Cause<unknown>): Trouble => {
  const failure = Cause.squash(cause)
  if (!RequestGuard.isSqlError(failure) || RequestGuard.storageFailure(failure)._tag !== "Capacity") return { _tag: "Defect" }
  const reason = failure.cause instanceof Error ? failure.cause.message : failure.message
  return { _tag: "Database", reason: reason.slice(0, 120) }
}

const describeAnswer = (status: number | null, error: string | null) =>
  status !== null ? `HTTP ${status}` : error ?? "no answer"

const sealedWith = (e: UnreadableSecret) =>
  e.keyId !== undefined ? `it was encrypted with key ${e.keyId}, which the gateway does not have` : e.reason

/** What `GET /webhook` says while the secret cannot be read. */
export const unreadableNotice = (e: UnreadableSecret) =>
  `The signing secret of this webhook can no longer be read: ${sealedWith(e)} (its key was lost or replaced, ` +
  `e.g. when the gateway was moved to another host). Nothing is sent until a new secret is set: ` +
  `POST /webhook/rotate-secret answers one. Events are kept, in order, and delivered signed with the new secret.`

/**
 * Events failed unsent because their stored body did not read (see `Unreadable`), each once.
 *
 * @since 1.0.0
 */
export const unreadableEvents = Metric.counter("wagate_webhook_unreadable_events", {
  description: "Webhook events failed unsent because their stored body is not an envelope this release reads",
  incremental: true
})

/** The `error` of an event failed unsent, as the delivery log shows it. */
export const unreadableError = (reason: string) =>
  `Not sent: the gateway cannot read this event's stored body (${reason}). It was changed in the database, or ` +
  `written by a release with events this one does not know; it failed so that the later events go on. ` +
  `POST /webhook/resend queues it again, for a release that reads it.`

export const WebhookLive = WebhookEntity.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const accountId = Number(address.entityId)
    const store = yield* WebhookStore
    const settings = yield* WebhookConfig
    const sender = yield* WebhookSender.make({ timeout: settings.timeout, allowPrivate: settings.allowPrivateUrls })
    const wakeups = yield* Queue.sliding<void>(1)
    const writes = yield* Effect.makeSemaphore(1)
    // Bumped by every change of the endpoint, so an attempt that started before it does not
    // disable an endpoint the account has just fixed, nor fail an event the new URL never saw.
    let version = 0
    // Attempts being written: a delivery does not wait for its write before the next event goes
    // out (a crash in between sends that event again: at least once), but the queue is only read
    // once they are all committed.
    let recording: Array<Fiber.RuntimeFiber<void>> = []
    const recorded = Effect.suspend(() => {
      const fibers = recording
      recording = []
      return Fiber.joinAll(fibers)
    })

    const wake = Queue.offer(wakeups, undefined).pipe(Effect.asVoid)
    /** A change of the endpoint: the loop reads it again. */
    const changed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      writes.withPermits(1)(Effect.tap(effect, () => Effect.sync(() => void version++))).pipe(Effect.zipLeft(wake))
    // The loop looks at the queue at least every MAX_WAIT_MS: a tick, rather than a timer raced
    // against every wait (a timer per delivery is most of an idle wait's cost).
    yield* Effect.sleep(Duration.millis(MAX_WAIT_MS)).pipe(Effect.zipRight(wake), Effect.forever, Effect.forkScoped)
    const wait = (ms: number) =>
      ms >= MAX_WAIT_MS
        ? Queue.take(wakeups)
        : Effect.raceFirst(Queue.take(wakeups), Effect.sleep(Duration.millis(Math.max(0, ms))))

    /** One attempt of `queued`; true when it was delivered. */
    const attempt = (endpoint: Endpoint, queued: Queued, seen: number) =>
      Effect.gen(function*() {
        const now = yield* DomainClock.now
        const secrets = [endpoint.secret, ...endpoint.earlier.filter((e) => e.until > now).map((e) => e.secret)]
        const body = bodyOf(queued.payload)
        // The receiver compares webhook-timestamp with its own clock: wall time, not domain time.
        const timestamp = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        const result = yield* sender.post(endpoint.url, Signing.headers({ eventId: queued.eventId, timestamp, body, secrets }), body)
        const at = yield* DomainClock.now
        const number = queued.attempts + 1
        const verdict = RetrySchedule.judge(result.status, number, at, yield* Random.next)
        return yield* writes.withPermits(1)(Effect.suspend(() => {
          const unchanged = version === seen
          const outcome: Outcome = verdict._tag === "Delivered"
            ? verdict
            : !unchanged
            ? { _tag: "Held" }
            : verdict._tag === "Retry"
            ? verdict
            : verdict._tag === "Gone"
            ? { _tag: "Held" }
            : { _tag: "Failed" }
          const attempted = { queued, accountId, attempt: number, at, url: endpoint.url, ...result, outcome }
          if (!unchanged || (verdict._tag !== "Gone" && verdict._tag !== "GiveUp")) {
            // Written while the next event goes out; the next read of the queue waits for it.
            return store.record(attempted).pipe(
              Effect.fork,
              Effect.map((fiber) => {
                recording.push(fiber)
                return verdict._tag === "Delivered"
              })
            )
          }
          const when = new Date(at).toISOString()
          const notice = verdict._tag === "Gone"
            ? `Turned off at ${when}: ${endpoint.url} answered 410 Gone to event ${Signing.webhookId(queued.eventId)}. ` +
              `Events are kept, in order, and delivered from that one on when the webhook is turned on again.`
            : `Turned off at ${when}: ${endpoint.url} gave no 2xx answer to event ${Signing.webhookId(queued.eventId)} ` +
              `in ${number} attempts over about three days (last: ${describeAnswer(result.status, result.error)}). ` +
              `That event failed (POST /webhook/resend sends it again); the later ones are kept, in order, and ` +
              `delivered when the webhook is turned on again.`
          // The attempt, its event's state and turning the endpoint off commit together.
          return store.recordInTransaction(attempted).pipe(
            Effect.zipRight(store.disable({
              accountId,
              reason: verdict._tag === "Gone" ? "gone" : "failing",
              notice,
              url: endpoint.url,
              eventId: queued.eventId,
              status: result.status,
              at
            })),
            store.transaction,
            Effect.zipRight(Effect.sync(() => void version++)),
            Effect.zipRight(Effect.logWarning(`webhook of account ${accountId} turned off: ${notice}`)),
            Effect.as(false)
          )
        }))
      })

    /**
     * An event that cannot be sent leaves the queue failed, with why in the delivery log, so the
     * account's later events go on; no attempt is made or counted. Logged and counted once.
     */
    const failUnreadable = (event: Unreadable) =>
      Effect.gen(function*() {
        const at = yield* DomainClock.now
        if (!(yield* store.failUnsent(event.id, unreadableError(event.reason), at))) return
        yield* Metric.increment(unreadableEvents)
        yield* Effect.logError(
          `webhook event ${Signing.webhookId(event.eventId)} of account ${accountId} failed unsent: its stored body ` +
            `does not read (${event.reason}); the account's later events go on`
        )
      })

    // The entity is the endpoint's only writer, and every change bumps `version`: the endpoint
    // read at one version stays true until the next. So does a secret this process cannot open:
    // it is read again after the account sets a new one, or by a process started with its key.
    type Read = Either.Either<Option.Option<Endpoint>, UnreadableSecret>
    let cached: { readonly version: number; readonly endpoint: Read } | undefined
    const endpointAt = (seen: number) =>
      cached !== undefined && cached.version === seen
        ? Effect.succeed(cached.endpoint)
        : Effect.tap(Effect.either(store.endpoint(accountId)), (endpoint) => Effect.sync(() => void (cached = { version: seen, endpoint })))

    // The version of the endpoint whose unreadable secret the account has been told of.
    let told = -1
    /**
     * Nothing can be signed: the queue waits (no attempt is counted against the events), the
     * account is told in the endpoint's notice, and the log says so once, not at every wake-up.
     */
    const cannotSign = (e: UnreadableSecret, seen: number) =>
      writes.withPermits(1)(Effect.suspend(() => {
        if (version !== seen || told === seen) return Effect.void
        return DomainClock.now.pipe(
          Effect.flatMap((at) => store.noteUnreadable(accountId, unreadableNotice(e), at)),
          Effect.flatMap((noted) =>
            noted
              ? Effect.logWarning(
                `webhook of account ${accountId} cannot sign: ${e.reason}. Its events wait until the key is back ` +
                  `(DATA_DIR/webhook-secret-key or WEBHOOK_SECRET_KEY) or the account sets a new secret (POST /webhook/rotate-secret)`
              )
              : Effect.void
          ),
          Effect.zipRight(Effect.sync(() => void (told = seen)))
        )
      }))

    // A pass that fails outside any attempt (PostgreSQL away while the queue is read or results
    // are written, a defect) is tried again after a backoff, not counted against the events. The
    // log says once that the loop is failing (once more if the trouble changes kind) and once that
    // it is back: retried every second with a line each time, thousands of accounts flooded the
    // log and met a returning database together.
    let failing: {
      readonly since: number
      failures: number
      /** The last wait was ended by a wake-up. */
      woken: boolean
      readonly told: Set<Trouble["_tag"]>
    } | undefined

    const backOff = (cause: Cause.Cause<unknown>) =>
      Effect.gen(function*() {
        const at = yield* DomainClock.now
        const state = failing ??= { since: at, failures: 0, woken: false, told: new Set() }
        state.failures++
        const trouble = troubleOf(cause)
        if (!state.told.has(trouble._tag)) {
          state.told.add(trouble._tag)
          yield* trouble._tag === "Database"
            ? Effect.logWarning(
              `webhook delivery of account ${accountId} is waiting for the database (${trouble.reason}); its events ` +
                `wait, and the loop tries again with backoff (up to ${LoopBackoff.MAX_DELAY_MS / 1000} s)`
            )
            : Effect.logError(
              `webhook delivery of account ${accountId} failed; its events wait, and the loop tries again with backoff ` +
                `(up to ${LoopBackoff.MAX_DELAY_MS / 1000} s)`,
              cause
            )
        }
        const backoff = DomainClock.sleep(Duration.millis(LoopBackoff.delay(state.failures, yield* Random.next)))
        // A wake-up ends a wait: the dispatcher wakes the account once it has read its due events,
        // so the loop goes on as soon as the database answers again. Never two waits in a row,
        // though: a loop whose own statements fail while the dispatcher's succeed, or that meets a
        // defect, would try again at every poll.
        state.woken = state.woken
          ? yield* Effect.as(backoff, false)
          : yield* Effect.raceFirst(Effect.as(Queue.take(wakeups), true), Effect.as(backoff, false))
      })

    /** The pass got through what failed before: the log says how long the loop was held. */
    const recovered = Effect.suspend(() => {
      if (failing === undefined) return Effect.void
      const { failures, since } = failing
      failing = undefined
      return Effect.flatMap(DomainClock.now, (at) =>
        Effect.logInfo(
          `webhook delivery of account ${accountId} resumed after ${Math.round((at - since) / 1000)} s and ${failures} ` +
            `${failures === 1 ? "retry" : "retries"}`
        ))
    })

    /** One pass: deliver what is due, in order, until an event must wait or the queue is empty. */
    const pass = Effect.gen(function*() {
      // A wake-up from here on means there may be more than the read below sees.
      yield* Queue.poll(wakeups)
      const seen = version
      const read = yield* endpointAt(seen)
      if (Either.isLeft(read)) {
        yield* cannotSign(read.left, seen)
        yield* recovered
        return yield* wait(MAX_WAIT_MS)
      }
      const endpoint = read.right
      if (Option.isNone(endpoint) || !endpoint.value.enabled) return yield* Effect.zipRight(recovered, wait(MAX_WAIT_MS))
      if (endpoint.value.notice !== null) {
        // Its key is back (the secret reads): the notice that it could not is no longer true.
        return yield* changed(Effect.flatMap(DomainClock.now, (at) => store.clearUnreadable(accountId, at)))
      }
      yield* recorded
      const queue = yield* store.queue(accountId, BATCH)
      // Those never sent leave the queue first: the order of those sent stays as it was.
      const [unreadable, readable] = Arr.separate(queue)
      yield* Effect.forEach(unreadable, failUnreadable, { discard: true })
      yield* recovered
      if (queue.length === 0) return yield* wait(MAX_WAIT_MS)
      for (const queued of readable) {
        if (version !== seen) return
        const now = yield* DomainClock.now
        if (queued.nextAttemptAt !== null && queued.nextAttemptAt > now) return yield* wait(queued.nextAttemptAt - now)
        if (!(yield* attempt(endpoint.value, queued, seen))) return
      }
      // All delivered: a full batch may have more behind it; otherwise nothing is new until woken.
      if (queue.length < BATCH) yield* wait(MAX_WAIT_MS)
    })

    yield* pass.pipe(
      Effect.catchAllCause(backOff),
      Effect.forever,
      Effect.forkScoped
    )

    /** One request: a storage error or a defect fails it alone, typed; the entity stays up. */
    const guarded = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      RequestGuard.guarded(effect, {
        onFault: (defect) => Effect.logError(`webhook of account ${accountId}: a request failed: ${defect}`),
        failed: "The webhook failed on this request; it was not completed"
      })

    return WebhookEntity.of({
      Wake: () => wake,
      Configure: ({ payload }) =>
        Effect.gen(function*() {
          const url = yield* WebhookUrl.check(payload.url, { allowPrivate: settings.allowPrivateUrls })
          const secret = Signing.generateSecret()
          const at = yield* DomainClock.now
          const { created } = yield* changed(store.configure({ accountId, url, enabled: payload.enabled, secret, at }))
          return { secret: created ? secret : null }
        }).pipe(guarded),
      RotateSecret: () =>
        Effect.gen(function*() {
          const secret = Signing.generateSecret()
          const at = yield* DomainClock.now
          const graceUntil = at + Duration.toMillis(settings.rotationGrace)
          const rotated = yield* changed(store.rotate(accountId, secret, graceUntil, at))
          if (!rotated) return yield* new NotFound({ error: "No webhook is set" })
          return { secret }
        }).pipe(
          guarded,
          // It stores nothing the caller gave: a value the store refuses is the gateway's fault.
          Effect.catchTag("InvalidParam", () => new InternalError({ error: "The webhook failed on this request; it was not completed" }))
        ),
      Resend: ({ payload }) =>
        Effect.gen(function*() {
          const read = yield* Effect.either(store.endpoint(accountId))
          if (Either.isRight(read) && Option.isNone(read.right)) return yield* new NotFound({ error: "No webhook is set" })
          const result = yield* store.resend(
            accountId,
            payload.eventId !== undefined
              ? { eventId: payload.eventId }
              : {
                since: payload.since === undefined ? null : new Date(payload.since),
                until: payload.until === undefined ? null : new Date(payload.until)
              }
          )
          if (result.tooMany !== null) {
            return yield* new InvalidParam({
              error: `The range holds ${result.tooMany} events; resend at most ${MAX_RESEND} at a time`
            })
          }
          if (payload.eventId !== undefined && result.queued === 0) {
            return yield* new NotFound({ error: `No event ${payload.eventId}` })
          }
          yield* wake
          return { queued: result.queued }
        }).pipe(guarded)
    })
  }),
  { concurrency: "unbounded", maxIdleTime: "10 minutes" }
)
