/**
 * A session's connection: making a socket (once a connect slot is free), dropping it, what a
 * close leads to (`DisconnectPolicy`), reconnecting with backoff, and the zombie watchdog on an
 * open connection.
 *
 * @since 1.0.0
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import * as Random from "effect/Random"
import type * as Runtime from "effect/Runtime"
import type { SocketOptions } from "./BaileysSocket.js"
import * as Browser from "./Browser.js"
import * as DisconnectPolicy from "./DisconnectPolicy.js"
import type * as NumberAuth from "./NumberAuth.js"
import * as Sending from "./Sending.js"
import { messageOf, now, report, type SessionContext, timed } from "./SessionContext.js"
import { attach } from "./SocketEvents.js"
import * as Watchdog from "./Watchdog.js"

/** Reconnects after a lost or refused connection (not the restarts WhatsApp asks for). @since 1.0.0 */
export const reconnects = Metric.counter("wagate_whatsapp_reconnects", {
  description: "WhatsApp connections made again after they were lost or refused",
  incremental: true
})

const releaseSlot = (ctx: SessionContext) =>
  Effect.suspend(() => ctx.state.slot === null ? Effect.void : Deferred.succeed(ctx.state.slot, undefined))

/** The handshake ended (open, QR shown, closed): its connect slot goes back. @since 1.0.0 */
export const handshakeDone = releaseSlot

/** Stops listening to the current socket and closes it; its late events are ignored. @since 1.0.0 */
export const drop = (ctx: SessionContext, options: { readonly end: boolean }) =>
  Effect.gen(function*() {
    const state = ctx.state
    state.gen++
    yield* releaseSlot(ctx)
    state.slot = null
    if (state.watchdog !== null) yield* Fiber.interruptFork(state.watchdog)
    state.watchdog = null
    state.openedAt = null
    Sending.connectionLost(ctx)
    const old = state.socket
    state.socket = null
    state.stopListening()
    state.stopListening = () => {}
    if (old !== null && options.end) {
      yield* Effect.forkIn(
        Effect.ignore(timed(() => Promise.resolve(old.end(undefined)), ctx.settings.queryTimeoutMs)),
        ctx.scope
      )
    }
  })

/** What a socket of this session is made with. @since 1.0.0 */
export const socketOptions = (ctx: SessionContext, runtime: Runtime.Runtime<never>): SocketOptions => ({
  auth: { creds: ctx.auth.state.creds, keys: ctx.auth.state.keys },
  logger: ctx.logger,
  webSocketUrl: ctx.settings.webSocketUrl,
  version: ctx.deps.versions.current(),
  browser: Browser.browserFor(ctx.settings.deviceName, ctx.auth.isLinked() ? null : ctx.state.linking),
  // Only subjects are kept: a send to a group (the gateway sends none) lets Baileys fetch its members.
  cachedGroupMetadata: () => Promise.resolve(undefined),
  getMessage: Sending.getMessage(ctx, runtime),
  msgRetryCounterCache: ctx.retryCounter
})

/** A new socket for a new generation, once a connect slot is free. @since 1.0.0 */
export const connect = (ctx: SessionContext) =>
  Effect.gen(function*() {
    const { settings, state } = ctx
    yield* drop(ctx, { end: true })
    const mine = state.gen
    const held = yield* Deferred.make<void>()
    state.slot = held
    const runtime = yield* Effect.runtime<never>()
    const start = Effect.suspend(() => {
      if (mine !== state.gen || state.closed) return Effect.void
      const made = Effect.try(() => ctx.deps.factory.make(socketOptions(ctx, runtime)))
      return Effect.matchEffect(made, {
        onFailure: (error) =>
          Effect.sync(() =>
            ctx.signal({
              _tag: "Update",
              gen: mine,
              update: { connection: "close", lastDisconnect: { error: error.error as Error, date: new Date() } }
            })
          ),
        onSuccess: (created) =>
          Effect.gen(function*() {
            state.socket = created
            state.lastTrafficAt = now(ctx)
            state.stopListening = attach(created, mine, ctx.signal, () => {
              state.lastTrafficAt = now(ctx)
            }, {
              creds: ctx.auth.saveCredsNow,
              serverAck: (id, error) => Sending.serverAck(ctx, id, error)
            })
            // The slot is held until the handshake ends (open, QR shown, closed) or times out.
            yield* Deferred.await(held).pipe(Effect.timeout(Duration.millis(settings.connectSlotMs)), Effect.ignore)
          })
      })
    })
    // The first socket waits (a few seconds at most) for the current WhatsApp Web version.
    yield* Effect.forkIn(Effect.zipRight(ctx.deps.versions.ready, ctx.deps.connectSlots.withPermits(1)(start)), ctx.scope)
  })

/** Reports STARTING with `reason` and connects again after the backoff (or `delayMs`). @since 1.0.0 */
export const reconnectLater = (ctx: SessionContext, reason: string, delayMs?: number) =>
  Effect.gen(function*() {
    const { settings, state } = ctx
    state.failures++
    const delay = delayMs ??
      DisconnectPolicy.backoffMs(state.failures, settings.backoffBaseMs, settings.backoffMaxMs, yield* Random.next)
    if (state.failures > settings.reconnectWarnAfter) {
      yield* Effect.logWarning(`number ${ctx.number.id}: ${reason}`)
    }
    yield* Metric.increment(reconnects)
    yield* report(ctx, "STARTING", { reason })
    yield* later(ctx, delay)
  })

const watch = (ctx: SessionContext) =>
  Effect.suspend(() => {
    const { state } = ctx
    const s = state.socket
    if (s === null) return Effect.void
    const mine = state.gen
    return Effect.map(
      Effect.forkIn(
        Watchdog.watch({
          socket: s,
          lastTrafficAt: () => state.lastTrafficAt,
          traffic: () => {
            state.lastTrafficAt = now(ctx)
          }
        }, ctx.settings).pipe(Effect.flatMap((why) => Effect.sync(() => ctx.signal({ _tag: "Zombie", gen: mine, why })))),
        ctx.scope
      ),
      (fiber) => {
        state.watchdog = fiber
      }
    )
  })

/** The connection is open: WORKING, and watched. @since 1.0.0 */
export const opened = (ctx: SessionContext) =>
  Effect.gen(function*() {
    const { state } = ctx
    yield* releaseSlot(ctx)
    state.linking = null
    state.restarts = 0
    state.versionRefreshed = false
    state.replacedBefore = false
    // A 401 that was not meant: the credentials were taken after all.
    yield* ctx.auth.refuse(null)
    const at = now(ctx)
    state.openedAt = at
    state.lastTrafficAt = at
    yield* report(ctx, "WORKING")
    yield* watch(ctx)
    // Every group's subject in one query, off the event path.
    const socket = state.socket
    if (socket !== null) yield* ctx.groups.prime(() => socket.groupFetchAllParticipating())
  })

/** The connection closed with `error`: restart, reconnect later, or stop (`DisconnectPolicy`). @since 1.0.0 */
export const closed = (ctx: SessionContext, error: unknown) =>
  Effect.gen(function*() {
    const { auth, settings, state } = ctx
    const wasOpen = state.openedAt
    yield* drop(ctx, { end: false })
    if (wasOpen !== null && now(ctx) - wasOpen >= settings.stableMs) state.failures = 0
    const linking = auth.isLinked() ? null : state.linking
    const decision = DisconnectPolicy.decide({
      code: DisconnectPolicy.codeOf(error),
      message: messageOf(error ?? ""),
      cause: DisconnectPolicy.causeOf(error),
      data: DisconnectPolicy.dataOf(error),
      linking,
      shown: state.shown,
      failures: state.failures,
      restarts: state.restarts,
      linkRetries: settings.linkRetries,
      versionRefreshed: state.versionRefreshed,
      replacedBefore: state.replacedBefore,
      loggedOutBefore: auth.refusal()?.code === LOGGED_OUT,
      now: now(ctx)
    })
    // A linking connection made again needs a new pairing code: the old one was for that socket.
    if (linking !== null) state.codeRequested = false
    switch (decision._tag) {
      case "RestartNow":
        if (auth.isLinked()) state.linking = null
        state.restarts++
        yield* report(ctx, "STARTING")
        return yield* connect(ctx)
      case "Reconnect":
        if (DisconnectPolicy.codeOf(error) === DisconnectPolicy.RESTART_REQUIRED) state.restarts++
        return yield* reconnectLater(ctx, decision.reason)
      case "RefreshVersion": {
        state.versionRefreshed = true
        yield* report(ctx, "STARTING", { reason: decision.reason })
        const mine = state.gen
        yield* Effect.forkIn(
          Effect.zipRight(ctx.deps.versions.refresh, Effect.sync(() => ctx.signal({ _tag: "VersionRefreshed", gen: mine }))),
          ctx.scope
        )
        return
      }
      case "RetryLater":
        state.replacedBefore = true
        return yield* reconnectLater(ctx, decision.reason, decision.delayMs)
      case "LoggedOut": {
        // Kept until a second 401 confirms it; stored, so a session opened later knows it too.
        const refusal = { code: LOGGED_OUT, reason: decision.reason, at: now(ctx) }
        yield* auth.refuse(refusal)
        return yield* loggedOut(ctx, refusal)
      }
      case "Stopped":
        state.linking = null
        yield* auth.reset
        return yield* report(ctx, "STOPPED", { reason: decision.reason })
      case "Failed": {
        state.linking = null
        const { until } = decision
        if ((decision.refused === true || until !== undefined) && auth.isLinked()) {
          const code = DisconnectPolicy.codeOf(error) ?? 0
          yield* auth.refuse({ code, reason: decision.reason, at: now(ctx), ...(until === undefined ? {} : { until }) })
        }
        yield* report(ctx, "FAILED", { reason: decision.reason })
        // A linked number banned for a while connects by itself once the ban is over.
        if (until !== undefined && auth.isLinked()) yield* banWait(ctx, until)
        return
      }
    }
  })

const LOGGED_OUT = 401

/** STOPPED after a first 401, with one more try after the backoff's longest wait. */
const loggedOut = (ctx: SessionContext, refusal: NumberAuth.Refusal) =>
  Effect.gen(function*() {
    const retryAt = Math.max(now(ctx), refusal.at + ctx.settings.backoffMaxMs)
    yield* report(ctx, "STOPPED", { reason: refusal.reason, retryAt })
    yield* later(ctx, retryAt - now(ctx))
  })

/**
 * The longest a ban's timer sleeps in one go: a longer sleep would never end (timers stop at
 * 2^31 ms, about 24.8 days), so a longer ban is waited out a day at a time.
 */
const BAN_WAIT_STEP_MS = 24 * 60 * 60 * 1000

/** Reconnect when the temporary ban ending at `until` is over (`banOver`). */
const banWait = (ctx: SessionContext, until: number) =>
  later(ctx, Math.min(Math.max(0, until - now(ctx)), BAN_WAIT_STEP_MS), "BanOver")

/** The ended ban's reason while its number connects again. @since 1.0.0 */
export const BAN_OVER_REASON = "the temporary ban (402) is over: connecting again"

/**
 * A temporary ban's timer: once the stored ban has ended the number connects (STARTING); the
 * ban is forgotten when the connection opens, or replaced if WhatsApp answers with another.
 *
 * @since 1.0.0
 */
export const banOver = (ctx: SessionContext) =>
  Effect.gen(function*() {
    const until = ctx.auth.refusal()?.until
    if (until === undefined) return
    if (now(ctx) < until) return yield* banWait(ctx, until)
    ctx.state.failures = 0
    yield* report(ctx, "STARTING", { reason: BAN_OVER_REASON })
    yield* connect(ctx)
  })

/**
 * A session opened with linked credentials connects, unless WhatsApp refused them in an earlier
 * session (on another runner, before a restart): after a 401 the one more try is made when it
 * is due; after a 411 the number stays FAILED, and only a link (a new device) goes on; after a
 * 403 or a 406 (the account refused, banned) it stays FAILED until it is unlinked; after a 402
 * (banned for a while) it stays FAILED until the ban's end, and then connects.
 *
 * @since 1.0.0
 */
export const resume = (ctx: SessionContext) =>
  Effect.gen(function*() {
    const refusal = ctx.auth.refusal()
    if (refusal === null) {
      yield* report(ctx, "STARTING")
      return yield* connect(ctx)
    }
    if (refusal.code === LOGGED_OUT) return yield* loggedOut(ctx, refusal)
    if (refusal.until !== undefined && now(ctx) >= refusal.until) return yield* banOver(ctx)
    yield* report(ctx, "FAILED", { reason: refusal.reason })
    if (refusal.until !== undefined) yield* banWait(ctx, refusal.until)
  })

/** A `Connect` (or `BanOver`) signal for the current generation after `ms`. */
const later = (ctx: SessionContext, ms: number, tag: "Connect" | "BanOver" = "Connect") =>
  Effect.gen(function*() {
    const due = ctx.state.gen
    yield* Effect.forkIn(
      Effect.sleep(Duration.millis(ms)).pipe(Effect.zipRight(Effect.sync(() => ctx.signal({ _tag: tag, gen: due })))),
      ctx.scope
    )
  })

/** The watchdog found the open connection dead: count it and connect again. @since 1.0.0 */
export const zombie = (ctx: SessionContext, why: string) =>
  Effect.gen(function*() {
    if (ctx.state.status !== "WORKING") return
    yield* Metric.increment(Watchdog.zombieRestarts)
    yield* Effect.logWarning(`number ${ctx.number.id}: zombie connection restarted: ${why}`)
    yield* report(ctx, "STARTING", { reason: `zombie connection restarted: ${why}` })
    yield* connect(ctx)
  })
