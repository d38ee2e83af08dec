/**
 * Linking a number as a device (by QR or by pairing code) and unlinking it: a new device
 * identity, each QR shown, the pairing code asked for once WhatsApp is ready, the operator's
 * `link` on a number already linked, and `logout`.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import { type LinkMethod, LinkRefused } from "../WhatsAppDriver.js"
import * as DisconnectPolicy from "./DisconnectPolicy.js"
import * as Reconnect from "./Reconnect.js"
import { messageOf, now, report, type SessionContext, timed } from "./SessionContext.js"

/** Starts linking with a new device identity. @since 1.0.0 */
export const start = (ctx: SessionContext, method: LinkMethod["kind"]) =>
  Effect.gen(function*() {
    const { state } = ctx
    yield* Reconnect.drop(ctx, { end: true })
    // A new device identity: nothing of an earlier one may be used with it.
    yield* ctx.auth.reset
    state.linking = method
    state.codeRequested = false
    state.shown = false
    state.failures = 0
    yield* report(ctx, "STARTING")
    yield* Reconnect.connect(ctx)
  })

/** Baileys reported a QR: shown (QR linking), the cue to ask for the code, or a device WhatsApp forgot. @since 1.0.0 */
export const qr = (ctx: SessionContext, payload: string) =>
  Effect.gen(function*() {
    const { settings, state } = ctx
    if (state.linking === "qr") {
      state.shown = true
      yield* Reconnect.handshakeDone(ctx)
      yield* report(ctx, "SCAN_QR_CODE", { qr: payload })
    } else if (state.linking === "code") {
      // The first QR means WhatsApp is ready to register a device: ask for the code instead.
      if (!state.codeRequested && state.socket !== null) {
        state.codeRequested = true
        const s = state.socket
        const mine = state.gen
        yield* Effect.forkIn(
          timed(() => s.requestPairingCode(ctx.number.phone), settings.queryTimeoutMs).pipe(
            Effect.matchEffect({
              onFailure: (error) => Effect.sync(() => ctx.signal({ _tag: "PairingFailed", gen: mine, why: messageOf(error) })),
              onSuccess: (code) => Effect.sync(() => ctx.signal({ _tag: "PairingCode", gen: mine, code }))
            })
          ),
          ctx.scope
        )
      }
    } else {
      // A linked device is never asked to scan: WhatsApp no longer knows it.
      yield* Reconnect.drop(ctx, { end: true })
      yield* ctx.auth.reset
      yield* report(ctx, "STOPPED", { reason: "WhatsApp no longer knows this device: link it again" })
    }
  })

/** WhatsApp gave the pairing code. @since 1.0.0 */
export const pairingCode = (ctx: SessionContext, code: string) =>
  Effect.suspend(() => {
    if (ctx.state.linking !== "code") return Effect.void
    ctx.state.shown = true
    return Effect.zipRight(Reconnect.handshakeDone(ctx), report(ctx, "SCAN_QR_CODE", { pairingCode: code.replace(/-/g, "") }))
  })

/**
 * WhatsApp answered a query with an error. While a pairing code is outstanding that is its
 * registration refused (Baileys sends it without waiting for the answer): the code can never
 * work, so the number is FAILED with WhatsApp's answer instead of showing a dead code.
 *
 * @since 1.0.0
 */
export const iqError = (ctx: SessionContext, code: string, text: string) =>
  Effect.gen(function*() {
    const { state } = ctx
    if (state.linking !== "code" || !state.codeRequested || ctx.auth.isLinked()) {
      return yield* Effect.logDebug(`number ${ctx.number.id}: WhatsApp answered a query with error ${code} ${text}`)
    }
    yield* Reconnect.drop(ctx, { end: true })
    state.linking = null
    const what = [code, text].filter((p) => p !== "").join(" ")
    yield* report(ctx, "FAILED", { reason: `WhatsApp refused the pairing request${what === "" ? "" : ` (${what})`}` })
  })

/** WhatsApp did not give a pairing code. @since 1.0.0 */
export const pairingFailed = (ctx: SessionContext, why: string) =>
  Effect.gen(function*() {
    yield* Reconnect.drop(ctx, { end: true })
    ctx.state.linking = null
    yield* report(ctx, "FAILED", { reason: `pairing code request failed: ${why}` })
  })

/** Why a link of a number whose account WhatsApp refused (`reason`: the 403's, the 406's) does nothing. @since 1.0.0 */
export const refusedLink = (reason: string): string =>
  `${reason}; not connected again, and a new device would be ` +
  "refused too: check WhatsApp on the phone, and once it works there unlink the number and link it again"

/**
 * Why a link of a number WhatsApp banned for a while (`reason`: the 402's, with the ban's end)
 * does nothing before the ban's end. @since 1.0.0
 */
export const bannedLink = (reason: string): string =>
  `${reason}; not connected before then (a banned account is refused on every connection, and each one ` +
  "counts against it), nor is a new device linked: the number connects by itself once the ban is over"

/**
 * The operator's link: a new link when not linked, otherwise a connection now or where it stands;
 * `LinkRefused` (after FAILED saying why) for an account WhatsApp refused or banned, for good or
 * until a ban's end. @since 1.0.0
 */
export const link = (ctx: SessionContext, method: LinkMethod) =>
  Effect.gen(function*() {
    const { state } = ctx
    const refusal = ctx.auth.refusal()
    // A temporary ban (402) over is no refusal any more: the number connects as any other.
    const until = refusal?.until
    const banned = until !== undefined
    const banning = banned && now(ctx) < until
    if (ctx.auth.isLinked() && refusal !== null && (DisconnectPolicy.refusesAccount(refusal.code) || banning)) {
      // An account WhatsApp refused (403) or banned (406; 402 until its end) is refused again on
      // every connection, and a new device of it too (a banned account cannot scan either):
      // saying so beats knocking.
      const reason = banning ? bannedLink(refusal.reason) : refusedLink(refusal.reason)
      yield* report(ctx, "FAILED", { reason })
      return yield* new LinkRefused({ reason })
    } else if (!ctx.auth.isLinked() || (refusal !== null && !banned)) {
      // Not linked, or credentials WhatsApp refused (a 401 kept a while in case it was not meant,
      // a 411): a new device, whichever session or runner they were refused in.
      yield* start(ctx, method.kind)
    } else if (state.socket === null && state.slot === null) {
      // Linked but not connecting (FAILED, or waiting to reconnect): connect now.
      state.failures = 0
      yield* report(ctx, "STARTING")
      yield* Reconnect.connect(ctx)
    } else {
      // Linked already: the entity is told where the connection stands.
      yield* report(ctx, state.status)
    }
  })

/** Unlinks the device (on the phone too, when connected) and forgets its keys: STOPPED. @since 1.0.0 */
export const logout = (ctx: SessionContext) =>
  Effect.gen(function*() {
    const { settings, state } = ctx
    const s0 = state.socket
    const connected = s0 !== null && state.status === "WORKING"
    yield* Reconnect.drop(ctx, { end: !connected })
    let reason = "logged out"
    if (connected) {
      yield* Effect.ignore(timed(() => s0.logout("logged out by the gateway"), settings.queryTimeoutMs))
      yield* Effect.ignore(timed(() => Promise.resolve(s0.end(undefined)), settings.queryTimeoutMs))
    } else if (ctx.auth.isLinked()) {
      // Not connected now: connect once, only to have WhatsApp remove the device from the phone.
      const told = yield* Effect.either(removeDevice(ctx))
      if (told._tag === "Left") {
        reason = `logged out here, but WhatsApp could not be reached to remove the device (${messageOf(told.left)}): ` +
          "remove it on the phone under Linked devices"
        yield* Effect.logWarning(`number ${ctx.number.id}: ${reason}`)
      }
    }
    state.linking = null
    yield* ctx.auth.reset
    yield* report(ctx, "STOPPED", { reason })
  })

/** How long a logout while not connected waits for its own connection to open, and for the answer. */
const OFFLINE_LOGOUT_MS = 6_000

/**
 * A socket of its own (not the session's: no events reach the entity), open within the query
 * time limit, that sends WhatsApp `remove-companion-device` and is then ended.
 */
const removeDevice = (ctx: SessionContext) =>
  Effect.gen(function*() {
    // Short, so an operator's unlink answers within the gateway's entity time limit.
    const limitMs = Math.min(ctx.settings.queryTimeoutMs, OFFLINE_LOGOUT_MS)
    const runtime = yield* Effect.runtime<never>()
    const socket = yield* Effect.try(() => ctx.deps.factory.make(Reconnect.socketOptions(ctx, runtime)))
    const opened = new Promise<void>((resolve, reject) => {
      socket.ev.on("connection.update", (u) => {
        if (u.connection === "open") resolve()
        else if (u.connection === "close") reject(u.lastDisconnect?.error ?? new Error("connection closed"))
      })
    })
    opened.catch(() => {})
    yield* Effect.ensuring(
      Effect.zipRight(
        timed(() => opened, limitMs),
        timed(() => socket.logout("logged out by the gateway"), limitMs)
      ),
      Effect.ignore(timed(() => Promise.resolve(socket.end(undefined)), limitMs))
    )
  }).pipe((tell) => ctx.deps.connectSlots.withPermits(1)(tell))
