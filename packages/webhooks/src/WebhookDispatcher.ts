/**
 * Wakes the webhook entity of every account with an event to deliver. On PostgreSQL it listens
 * to the outbox's notifications (sent when an event's transaction commits) and wakes the
 * account's entity within milliseconds. Under that, and alone on the embedded database (whose
 * single connection LISTEN must not hold), it polls: every account whose oldest waiting event is
 * due. The poll is what makes deliveries survive anything that loses a wake-up: an entity stopped
 * while idle, a runner that died in the middle of a retry sequence. Notifications sent while
 * nothing listened (the listening connection lost, or not yet opened) are not waited on the poll
 * for: each time listening starts, every account with a due event is woken, as if notified.
 *
 * One dispatcher runs in the cluster (a singleton); the wake-ups reach the entities wherever
 * their shards are. At its start it warns of webhook secrets sealed with a key this process
 * does not have.
 */
import * as Singleton from "@effect/cluster/Singleton"
import { WebhookEntity } from "@wagate/entities/WebhookEntity"
import * as DomainClock from "@wagate/domain/DomainClock"
import { DatabaseKind } from "@wagate/store/Database"
import * as Notifications from "@wagate/store/Notifications"
import { CHANNEL } from "@wagate/store/Outbox"
import type * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as LoopBackoff from "./LoopBackoff.js"
import { pollIntervalFor, WebhookConfig } from "./WebhookConfig.js"
import { WebhookStore } from "./WebhookStore.js"

/**
 * How often the listening session is checked (by the domain clock): a connection that no longer
 * answers (a stalled server, a network path that drops everything) is found at the next check,
 * within the pool's bound on an answer (DATABASE_STATEMENT_TIMEOUT_MS and 5 s), and listening
 * starts again on a new one.
 */
const LISTEN_CHECK_INTERVAL = Duration.seconds(30)

export const WebhookDispatcher = Singleton.make(
  "wagate/webhook-dispatcher",
  Effect.gen(function*() {
    const kind = yield* DatabaseKind
    const settings = yield* WebhookConfig
    const store = yield* WebhookStore
    const webhooks = yield* WebhookEntity.client

    // A database restored without the key its secrets were sealed with (docs/operations.md):
    // said once at start, rather than only in each account's notice.
    yield* store.missingKeys().pipe(
      Effect.flatMap(Effect.forEach(({ accounts, key }) =>
        Effect.logWarning(
          `${accounts} webhook ${accounts === 1 ? "secret is" : "secrets are"} encrypted with key ${key}, which this ` +
            `process does not have: those webhooks send nothing. Restore the key (DATA_DIR/webhook-secret-key, or ` +
            `WEBHOOK_SECRET_KEY / WEBHOOK_SECRET_KEYS_OLD) from where the database came from; without it each of those ` +
            `accounts must set a new secret (POST /webhook/rotate-secret)`
        ), { discard: true })),
      Effect.catchAllCause((cause) => Effect.logWarning("looking for webhook secrets this process cannot read failed", cause))
    )

    // Accounts with a wake-up on its way. A wake-up lands after the notifications that arrive
    // while it travels, and the entity reads its queue again after each one it gets, so one
    // wake-up in flight per account is enough, and nothing here ever waits for one: a burst of
    // notifications, or an entity slow to answer, never holds back another account's wake-up.
    const inFlight = new Set<string>()
    const wake = (accountId: number | string) =>
      Effect.suspend(() => {
        const id = String(accountId)
        if (inFlight.has(id)) return Effect.void
        inFlight.add(id)
        return webhooks(id).Wake(undefined, { discard: true }).pipe(
          Effect.catchAllCause((cause) => Effect.logWarning(`could not wake the webhook of account ${id}`, cause)),
          Effect.ensuring(Effect.sync(() => inFlight.delete(id))),
          Effect.forkScoped,
          Effect.asVoid
        )
      })
    const wakeAll = (ids: Iterable<number | string>) => Effect.forEach(new Set(ids), wake, { discard: true })

    if (kind === "postgres" && settings.listen) {
      // Listening that fails (the database away, its connection lost or not answering) is tried
      // again with the delivery loop's backoff, and says so once, and once when it works again:
      // tried every second with a line each time, it flooded the log for as long as the database
      // was away. The poll wakes the deliveries meanwhile.
      let listenFailing: { readonly since: number; failures: number } | undefined
      const listenFailed = (cause: Cause.Cause<unknown>) =>
        Effect.gen(function*() {
          const state = listenFailing ??= { since: yield* DomainClock.now, failures: 0 }
          state.failures++
          if (state.failures === 1) {
            yield* Effect.logWarning(
              `listening for webhook notifications failed; the poll wakes deliveries meanwhile, and listening is tried ` +
                `again with backoff (up to ${LoopBackoff.MAX_DELAY_MS / 1000} s)`,
              cause
            )
          }
          yield* DomainClock.sleep(Duration.millis(LoopBackoff.delay(state.failures, yield* Random.next)))
        })
      const listenWorks = Effect.suspend(() => {
        const state = listenFailing
        if (state === undefined) return Effect.void
        listenFailing = undefined
        return Effect.flatMap(DomainClock.now, (at) =>
          Effect.logInfo(
            `listening for webhook notifications works again after ${Math.round((at - state.since) / 1000)} s and ` +
              `${state.failures} ${state.failures === 1 ? "retry" : "retries"}`
          ))
      })
      // Once listening, the notifications sent while nothing listened are found in the outbox: every
      // account with a due event is woken (the query runs after LISTEN, so an event committed
      // meanwhile is found by it or notified). Without it they waited for the poll, which may be
      // long (WEBHOOK_POLL_INTERVAL_MS). Should the query fail, listening is counted as failed and
      // tried again, catching up again.
      const scope = yield* Effect.scope
      const catchUp = DomainClock.now.pipe(
        Effect.flatMap(store.dueAccounts),
        Effect.flatMap(wakeAll),
        Scope.extend(scope)
      )
      yield* Notifications.listen(CHANNEL, {
        check: DomainClock.sleep(LISTEN_CHECK_INTERVAL),
        listening: Effect.zipRight(catchUp, listenWorks)
      }).pipe(
        // Notifications come one per event: a burst wakes each account once.
        Stream.groupedWithin(1024, "2 millis"),
        Stream.runForEach((ids) => wakeAll(Chunk.toReadonlyArray(ids))),
        Effect.catchAllCause(listenFailed),
        Effect.forever,
        Effect.forkScoped
      )
    }

    // The poll goes on at its pace while the database is away (it is what wakes the accounts once
    // it is back), but says so once, and once when it works again, not at every poll.
    let pollFailingSince: number | undefined
    const pollFailed = (cause: Cause.Cause<unknown>) =>
      Effect.suspend(() =>
        pollFailingSince !== undefined ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (at) => {
          pollFailingSince = at
          return Effect.logWarning("looking for due webhook events failed; the poll goes on and says when it works again", cause)
        })
      )
    const pollWorks = Effect.suspend(() => {
      const since = pollFailingSince
      if (since === undefined) return Effect.void
      pollFailingSince = undefined
      return Effect.flatMap(Clock.currentTimeMillis, (at) =>
        Effect.logInfo(`looking for due webhook events works again after ${Math.round((at - since) / 1000)} s`))
    })

    yield* DomainClock.now.pipe(
      Effect.flatMap(store.dueAccounts),
      Effect.tap(() => pollWorks),
      Effect.flatMap(wakeAll),
      Effect.catchAllCause(pollFailed),
      Effect.repeat(Schedule.spaced(pollIntervalFor(settings, kind)))
    )
  })
)
