/**
 * A number's session on WhatsApp through Baileys, for the scope of the number's entity: it
 * connects (when the number is linked), links (QR or pairing code), reconnects with backoff,
 * watches for zombie connections, and reports everything as the port's events.
 *
 * Everything that changes the session happens in one fiber, one signal at a time (the socket's
 * events, reconnect timers, the watchdog, link and logout), and the entity's `onEvent` is called
 * from there, so events reach it in order and one at a time. A replaced socket's late events are
 * ignored (each socket has a generation). The parts: `Linking`, `Reconnect`, `Inbound`; what they
 * share, `SessionContext`.
 *
 * @since 1.0.0
 */
import NodeCache from "@cacheable/node-cache"
import type { CacheStore } from "@whiskeysockets/baileys"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import { type DriverEvent, DriverUnavailable, type LinkRefused, type Session } from "../WhatsAppDriver.js"
import * as BaileysLogger from "./BaileysLogger.js"
import type { BaileysSocket } from "./BaileysSocket.js"
import * as GroupSubjects from "./GroupSubjects.js"
import * as Inbound from "./Inbound.js"
import * as LidMap from "./LidMap.js"
import * as Linking from "./Linking.js"
import * as Reconnect from "./Reconnect.js"
import * as Sending from "./Sending.js"
import {
  type Deps,
  initialState,
  type NumberRef,
  report,
  type SessionContext,
  type Signal
} from "./SessionContext.js"
import type { SocketSignal } from "./SocketEvents.js"

export type { Deps } from "./SessionContext.js"

/** Baileys' per-message re-send counts, for an hour (no timer: entries expire when read). */
const retryCounter = (): CacheStore => {
  const cache = new NodeCache<number>({ stdTTL: 3600, checkperiod: 0, useClones: false })
  return {
    get: <T>(key: string) => cache.get(key) as T | undefined,
    set: (key, value) => cache.set(key, Number(value)),
    del: (key) => cache.del(key),
    flushAll: () => cache.flushAll()
  }
}

const onUpdate = (ctx: SessionContext, update: Extract<SocketSignal, { _tag: "Update" }>["update"]) =>
  Effect.gen(function*() {
    const lock = update.reachoutTimeLock
    if (lock?.isActive === true) {
      const ends = lock.timeEnforcementEnds
      yield* ctx.onEvent({
        _tag: "Restricted",
        reason: `WhatsApp restricted the account from reaching out (${lock.enforcementType ?? "unknown"})`,
        until: ends === undefined ? null : ends.getTime()
      })
    } else if (lock?.isActive === false) {
      yield* ctx.onEvent({ _tag: "Unrestricted" })
    }
    if (typeof update.qr === "string" && update.qr !== "") yield* Linking.qr(ctx, update.qr)
    if (update.connection === "open") yield* Reconnect.opened(ctx)
    else if (update.connection === "close") yield* Reconnect.closed(ctx, update.lastDisconnect?.error)
  })

/**
 * How long a closing session goes on handing over what it had received: enough for a database
 * under load to store it.
 *
 * @since 1.0.0
 */
export const DRAIN_LIMIT = "10 seconds"

/**
 * What a closing session still hands over: messages and delivery reports Baileys has already
 * acknowledged to WhatsApp, which will not send them again (and the LID and group facts beside
 * them). Nothing else happens any more: no reconnect, no link.
 */
const HANDED_OVER_WHILE_CLOSING: ReadonlySet<Signal["_tag"]> = new Set<Signal["_tag"]>([
  "Upsert",
  "Updates",
  "Receipts",
  "Lids",
  "Groups",
  "NotOnWhatsApp",
  "Drained"
])

const handle = (ctx: SessionContext, s: Signal): Effect.Effect<void> => {
  if ("gen" in s && s.gen !== ctx.state.gen) return Effect.void
  if (ctx.state.closed && !HANDED_OVER_WHILE_CLOSING.has(s._tag)) {
    if (s._tag === "Link") return Deferred.succeed(s.done, undefined)
    return "done" in s ? Deferred.succeed(s.done, undefined) : Effect.void
  }
  switch (s._tag) {
    case "Start":
      if (ctx.auth.isLinked()) return Reconnect.resume(ctx)
      return ctx.number.linked
        ? report(ctx, "STOPPED", { reason: "no saved credentials for this number: link it again" })
        : report(ctx, "none")
    case "Update":
      return onUpdate(ctx, s.update)
    case "Upsert":
      return Inbound.upsert(ctx, s.messages)
    case "Updates":
    case "Receipts":
    case "Lids":
    case "Groups":
      return Inbound.other(ctx, s)
    case "Connect":
    case "VersionRefreshed":
      return Reconnect.connect(ctx)
    case "BanOver":
      return Reconnect.banOver(ctx)
    case "IqError":
      return Linking.iqError(ctx, s.code, s.text)
    case "Zombie":
      return Reconnect.zombie(ctx, s.why)
    case "PairingCode":
      return Linking.pairingCode(ctx, s.code)
    case "PairingFailed":
      return Linking.pairingFailed(ctx, s.why)
    case "Link":
      return Linking.link(ctx, s.method).pipe(
        Effect.catchTag("LinkRefused", (refused) => Deferred.fail(s.done, refused)),
        Effect.ensuring(Deferred.succeed(s.done, undefined))
      )
    case "Logout":
      return Linking.logout(ctx).pipe(Effect.ensuring(Deferred.succeed(s.done, undefined)))
    case "NotOnWhatsApp":
      return ctx.onEvent({ _tag: "Ack", waMessageId: s.waMessageId, ack: "failed", error: Sending.NOT_ON_WHATSAPP })
    case "PhoneMapped":
      return ctx.onEvent({ _tag: "PhoneMapped", asked: s.asked, phone: s.phone }).pipe(
        Effect.ensuring(Deferred.succeed(s.done, undefined))
      )
    case "Drained":
      return Deferred.succeed(s.done, undefined)
  }
}

/**
 * Opens the number's session for the scope. See `WhatsAppDriverService.open`.
 *
 * @since 1.0.0
 */
export const open = (
  deps: Deps,
  number: NumberRef,
  onEvent: (event: DriverEvent) => Effect.Effect<void>
): Effect.Effect<Session, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { settings } = deps
    const scope = yield* Effect.scope
    const runtime = yield* Effect.runtime<never>()
    const auth = yield* deps.store.open(number.id)
    const inbox = yield* Queue.unbounded<Signal>()
    const clock = yield* Effect.clock
    const ctx: SessionContext = {
      deps,
      settings,
      number,
      auth,
      scope,
      clock,
      logger: BaileysLogger.make(runtime, settings.logLevel, { numberId: number.id }, () => clock.unsafeCurrentTimeMillis()),
      state: initialState(),
      lids: LidMap.make(() => auth.state.keys, (pairs) => onEvent({ _tag: "LidMapped", pairs })),
      groups: GroupSubjects.make({ ttlMs: settings.groupSubjectTtlMs, timeoutMs: settings.queryTimeoutMs, scope }),
      retryCounter: retryCounter(),
      onEvent,
      signal: (s) => void Queue.unsafeOffer(inbox, s)
    }
    const { state } = ctx

    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        state.closed = true
        const wasLinked = state.socket !== null && auth.isLinked()
        yield* Reconnect.drop(ctx, { end: true })
        // Credentials changed by the last events are kept even if their signal was not handled.
        if (wasLinked) yield* Effect.ignore(auth.saveCreds)
      })
    )
    ctx.signal({ _tag: "Start" })
    yield* Effect.forkIn(
      Effect.forever(
        Effect.flatMap(Queue.take(inbox), (s) =>
          handle(ctx, s).pipe(
            Effect.catchAllCause((cause) => Effect.logError(`number ${number.id}: handling ${s._tag} failed`, cause))
          ))
      ),
      scope
    )
    // Added after the fiber, so it runs before the fiber is stopped: what the socket reported
    // before the session began to close is handed over (an ack stored, not dropped), within
    // DRAIN_LIMIT. Interruptible, or the wait would not end at the limit inside a finalizer.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        state.closed = true
        const drained = yield* Deferred.make<void>()
        ctx.signal({ _tag: "Drained", done: drained })
        const finished = yield* Effect.timeoutOption(Effect.interruptible(Deferred.await(drained)), DRAIN_LIMIT)
        if (finished._tag === "None") {
          yield* Effect.logWarning(`number ${number.id}: events received before the session closed were not all handled in ${DRAIN_LIMIT}`)
        }
      })
    )

    const connected = (): BaileysSocket | DriverUnavailable =>
      state.closed
        ? new DriverUnavailable({ reason: "the session is closed" })
        : state.status !== "WORKING" || state.socket === null
        ? new DriverUnavailable({ reason: `the number is not connected (status ${state.status})` })
        : state.socket

    const command = <E, A extends Signal & { done: Deferred.Deferred<void, E> }>(make: (done: Deferred.Deferred<void, E>) => A) =>
      Effect.flatMap(Deferred.make<void, E>(), (done) => Effect.zipRight(Effect.sync(() => ctx.signal(make(done))), Deferred.await(done)))

    return {
      link: (method) =>
        Effect.suspend((): Effect.Effect<void, DriverUnavailable | LinkRefused> =>
          state.closed
            ? Effect.fail(new DriverUnavailable({ reason: "the session is closed" }))
            : command((done: Deferred.Deferred<void, LinkRefused>) => ({ _tag: "Link", method, done }))
        ).pipe(Effect.withSpan("BaileysSession.link", { attributes: { numberId: number.id, method: method.kind } })),
      send: (message) =>
        Effect.suspend(() => {
          const s = connected()
          return s instanceof DriverUnavailable ? Effect.fail(s) : Sending.send(ctx, s, message)
        }).pipe(Effect.withSpan("BaileysSession.send", { attributes: { numberId: number.id, kind: message.content.kind } })),
      exists: (phone) =>
        Effect.suspend(() => {
          const s = connected()
          return s instanceof DriverUnavailable ? Effect.fail(s) : Sending.exists(ctx, s, phone)
        }).pipe(Effect.withSpan("BaileysSession.exists", { attributes: { numberId: number.id } })),
      logout: Effect.suspend(() => state.closed ? Effect.void : command((done) => ({ _tag: "Logout", done })))
    }
  })
