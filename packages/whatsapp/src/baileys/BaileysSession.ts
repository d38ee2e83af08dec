/**
 * A number's session on WhatsApp through Baileys, for the scope of the number's entity: it
 * connects (when the number is linked), links (QR or pairing code), reconnects with backoff,
 * watches for zombie connections, and reports everything as the port's events.
 *
 * Everything that changes the session happens in one fiber, one signal at a time (the socket's
 * events, reconnect timers, the watchdog, link and logout), and the entity's `onEvent` is called
 * from there, so events reach it in order and one at a time. A replaced socket's late events are
 * ignored (each socket has a generation).
 *
 * @since 1.0.0
 */
import type { ConnectionStatus } from "@wagate/domain/Connection"
import type { WAMessage } from "@whiskeysockets/baileys"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import * as Queue from "effect/Queue"
import * as Random from "effect/Random"
import type * as Scope from "effect/Scope"
import { type DriverEvent, DriverUnavailable, type LinkMethod, type Session } from "../WhatsAppDriver.js"
import * as Acks from "./Acks.js"
import type { AuthStoreService } from "./AuthStore.js"
import * as BaileysLogger from "./BaileysLogger.js"
import type { BaileysSettings } from "./BaileysSettings.js"
import type { BaileysSocket, SocketFactoryService } from "./BaileysSocket.js"
import * as DisconnectPolicy from "./DisconnectPolicy.js"
import * as GroupSubjects from "./GroupSubjects.js"
import * as IncomingMessages from "./IncomingMessages.js"
import * as Jids from "./Jids.js"
import * as LidMap from "./LidMap.js"
import * as Outgoing from "./Outgoing.js"
import { type SocketSignal, attach } from "./SocketEvents.js"
import * as Watchdog from "./Watchdog.js"

/** What every session of a driver shares. @since 1.0.0 */
export interface Deps {
  readonly settings: BaileysSettings
  readonly factory: SocketFactoryService
  readonly store: AuthStoreService
  /** Bounds the handshakes in flight in this process. */
  readonly connectSlots: Effect.Semaphore
}

type Signal =
  | SocketSignal
  | { readonly _tag: "Start" }
  | { readonly _tag: "Connect"; readonly gen: number }
  | { readonly _tag: "Zombie"; readonly gen: number; readonly why: string }
  | { readonly _tag: "PairingCode"; readonly gen: number; readonly code: string }
  | { readonly _tag: "PairingFailed"; readonly gen: number; readonly why: string }
  | { readonly _tag: "Link"; readonly method: LinkMethod; readonly done: Deferred.Deferred<void> }
  | { readonly _tag: "Logout"; readonly done: Deferred.Deferred<void> }

const messageOf = (error: unknown) => error instanceof Error ? error.message : String(error)

/**
 * Opens the number's session for the scope. See `WhatsAppDriverService.open`.
 *
 * @since 1.0.0
 */
export const open = (
  deps: Deps,
  number: { readonly id: number; readonly phone: string; readonly linked: boolean },
  onEvent: (event: DriverEvent) => Effect.Effect<void>
): Effect.Effect<Session, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { factory, settings } = deps
    const scope = yield* Effect.scope
    const clock = yield* Effect.clock
    const runtime = yield* Effect.runtime<never>()
    const auth = yield* deps.store.open(number.id)
    const logger = BaileysLogger.make(runtime, settings.logLevel, { numberId: number.id })
    const inbox = yield* Queue.unbounded<Signal>()
    const signal = (s: Signal) => void Queue.unsafeOffer(inbox, s)
    const lids = LidMap.make(() => auth.state.keys)
    const groups = GroupSubjects.make({ ttlMs: settings.groupSubjectTtlMs, timeoutMs: settings.queryTimeoutMs })

    let status: ConnectionStatus = "none"
    let socket: BaileysSocket | null = null
    let stopListening = () => {}
    /** Generation of the current socket (or of the next one, while none is up). */
    let gen = 0
    let linking: LinkMethod["kind"] | null = null
    let codeRequested = false
    let failures = 0
    let openedAt: number | null = null
    let lastTrafficAt = 0
    let slot: Deferred.Deferred<void> | null = null
    let watchdog: Fiber.RuntimeFiber<void> | null = null
    let closed = false

    const report = (next: ConnectionStatus, extra: Omit<Extract<DriverEvent, { _tag: "Connection" }>, "_tag" | "status"> = {}) => {
      status = next
      return onEvent({ _tag: "Connection", status: next, ...extra })
    }
    const releaseSlot = Effect.suspend(() => slot === null ? Effect.void : Deferred.succeed(slot, undefined))
    const timed = <A>(f: () => Promise<A>, ms: number): Effect.Effect<A, unknown> =>
      Effect.tryPromise({ try: f, catch: (error) => error }).pipe(
        Effect.timeoutFail({ duration: Duration.millis(ms), onTimeout: () => new Outgoing.NoAnswer(ms) })
      )

    /** Stops listening to the current socket and closes it; its late events are ignored. */
    const drop = (options: { readonly end: boolean }) =>
      Effect.gen(function*() {
        gen++
        yield* releaseSlot
        slot = null
        if (watchdog !== null) yield* Fiber.interruptFork(watchdog)
        watchdog = null
        openedAt = null
        const old = socket
        socket = null
        stopListening()
        stopListening = () => {}
        if (old !== null && options.end) {
          yield* Effect.forkIn(
            Effect.ignore(timed(() => Promise.resolve(old.end(undefined)), settings.queryTimeoutMs)),
            scope
          )
        }
      })

    /** A new socket for a new generation, once a connect slot is free. */
    const connect = Effect.gen(function*() {
      yield* drop({ end: true })
      const mine = gen
      const held = yield* Deferred.make<void>()
      slot = held
      const start = Effect.suspend(() => {
        if (mine !== gen || closed) return Effect.void
        const made = Effect.try(() =>
          factory.make({
            auth: { creds: auth.state.creds, keys: auth.state.keys },
            logger,
            webSocketUrl: settings.webSocketUrl,
            version: settings.version,
            deviceName: settings.deviceName,
            cachedGroupMetadata: (jid) => Promise.resolve(groups.cached(jid))
          })
        )
        return Effect.matchEffect(made, {
          onFailure: (error) =>
            Effect.sync(() =>
              signal({
                _tag: "Update",
                gen: mine,
                update: { connection: "close", lastDisconnect: { error: error.error as Error, date: new Date() } }
              })
            ),
          onSuccess: (created) =>
            Effect.gen(function*() {
              socket = created
              lastTrafficAt = clock.unsafeCurrentTimeMillis()
              stopListening = attach(created, mine, signal, () => {
                lastTrafficAt = clock.unsafeCurrentTimeMillis()
              })
              // The slot is held until the handshake ends (open, QR shown, closed) or times out.
              yield* Deferred.await(held).pipe(Effect.timeout(Duration.millis(settings.connectSlotMs)), Effect.ignore)
            })
        })
      })
      yield* Effect.forkIn(deps.connectSlots.withPermits(1)(start), scope)
    })

    const reconnectLater = (reason: string) =>
      Effect.gen(function*() {
        failures++
        const delay = DisconnectPolicy.backoffMs(failures, settings.backoffBaseMs, settings.backoffMaxMs, yield* Random.next)
        yield* report("STARTING", { reason })
        const due = gen
        yield* Effect.forkIn(
          Effect.sleep(Duration.millis(delay)).pipe(Effect.zipRight(Effect.sync(() => signal({ _tag: "Connect", gen: due })))),
          scope
        )
      })

    const startLinking = (method: LinkMethod["kind"]) =>
      Effect.gen(function*() {
        yield* drop({ end: true })
        // A new device identity: nothing of an earlier one may be used with it.
        yield* auth.reset
        linking = method
        codeRequested = false
        failures = 0
        yield* report("STARTING")
        yield* connect
      })

    const onUpdate = (update: Extract<SocketSignal, { _tag: "Update" }>["update"]) =>
      Effect.gen(function*() {
        if (update.reachoutTimeLock?.isActive === true) {
          const ends = update.reachoutTimeLock.timeEnforcementEnds
          yield* onEvent({
            _tag: "Restricted",
            reason: `WhatsApp restricted the account from reaching out (${update.reachoutTimeLock.enforcementType ?? "unknown"})`,
            until: ends === undefined ? null : ends.getTime()
          })
        }
        if (typeof update.qr === "string" && update.qr !== "") {
          if (linking === "qr") {
            yield* releaseSlot
            yield* report("SCAN_QR_CODE", { qr: update.qr })
          } else if (linking === "code") {
            // The first QR means WhatsApp is ready to register a device: ask for the code instead.
            if (!codeRequested && socket !== null) {
              codeRequested = true
              const s = socket
              const mine = gen
              yield* Effect.forkIn(
                timed(() => s.requestPairingCode(number.phone), settings.queryTimeoutMs).pipe(
                  Effect.matchEffect({
                    onFailure: (error) => Effect.sync(() => signal({ _tag: "PairingFailed", gen: mine, why: messageOf(error) })),
                    onSuccess: (code) => Effect.sync(() => signal({ _tag: "PairingCode", gen: mine, code }))
                  })
                ),
                scope
              )
            }
          } else {
            // A linked device is never asked to scan: WhatsApp no longer knows it.
            yield* drop({ end: true })
            yield* auth.reset
            yield* report("STOPPED", { reason: "WhatsApp no longer knows this device: link it again" })
          }
        }
        if (update.connection === "open") {
          yield* releaseSlot
          linking = null
          const now = clock.unsafeCurrentTimeMillis()
          openedAt = now
          lastTrafficAt = now
          yield* report("WORKING")
          yield* watch
        } else if (update.connection === "close") {
          yield* onClose(update.lastDisconnect?.error)
        }
      })

    const watch = Effect.suspend(() => {
      const s = socket
      if (s === null) return Effect.void
      const mine = gen
      return Effect.map(
        Effect.forkIn(
          Watchdog.watch({
            socket: s,
            lastTrafficAt: () => lastTrafficAt,
            traffic: () => {
              lastTrafficAt = clock.unsafeCurrentTimeMillis()
            }
          }, settings).pipe(Effect.flatMap((why) => Effect.sync(() => signal({ _tag: "Zombie", gen: mine, why })))),
          scope
        ),
        (fiber) => {
          watchdog = fiber
        }
      )
    })

    const onClose = (error: unknown) =>
      Effect.gen(function*() {
        const wasOpen = openedAt
        yield* drop({ end: false })
        if (wasOpen !== null && clock.unsafeCurrentTimeMillis() - wasOpen >= settings.stableMs) failures = 0
        const decision = DisconnectPolicy.decide({
          code: DisconnectPolicy.codeOf(error),
          message: messageOf(error ?? ""),
          linking: auth.isLinked() ? null : linking,
          failures,
          restartBudget: settings.restartBudget
        })
        switch (decision._tag) {
          case "RestartNow":
            if (auth.isLinked()) linking = null
            yield* report("STARTING")
            return yield* connect
          case "Reconnect":
            return yield* reconnectLater(decision.reason)
          case "Stopped":
            linking = null
            yield* auth.reset
            return yield* report("STOPPED", { reason: decision.reason })
          case "Failed":
            linking = null
            return yield* report("FAILED", { reason: decision.reason })
        }
      })

    const onUpsert = (messages: ReadonlyArray<WAMessage>) =>
      Effect.forEach(messages, (m) =>
        Effect.gen(function*() {
          const incoming = yield* IncomingMessages.toIncoming(m, {
            lids,
            groups,
            fetchGroup: (jid) => socket === null ? Promise.reject(new Error("not connected")) : socket.groupMetadata(jid),
            download: (message) =>
              Effect.suspend(() => {
                const s = socket
                if (s === null) return Effect.fail(new DriverUnavailable({ reason: "the number is not connected" }))
                return timed(() => factory.download(s, message), settings.queryTimeoutMs * 3).pipe(
                  Effect.mapError((e) => new DriverUnavailable({ reason: `media download failed: ${messageOf(e)}` }))
                )
              }),
            now: clock.unsafeCurrentTimeMillis()
          })
          if (incoming !== null) yield* onEvent({ _tag: "Incoming", message: incoming })
        }), { discard: true })

    const handle = (s: Signal): Effect.Effect<void> => {
      if ("gen" in s && s.gen !== gen) return Effect.void
      switch (s._tag) {
        case "Start":
          if (auth.isLinked()) return Effect.zipRight(report("STARTING"), connect)
          return number.linked
            ? report("STOPPED", { reason: "no saved credentials for this number: link it again" })
            : report("none")
        case "Update":
          return onUpdate(s.update)
        case "Creds":
          return auth.saveCreds
        case "Upsert":
          return onUpsert(s.messages)
        case "Updates":
          return Effect.forEach(Acks.fromUpdates(s.updates), onEvent, { discard: true })
        case "Receipts":
          return Effect.forEach(Acks.fromReceipts(s.receipts), onEvent, { discard: true })
        case "Lids":
          return lids.remember(s.pairs)
        case "Groups":
          return groups.update(s.groups)
        case "Connect":
          return connect
        case "Zombie":
          if (status !== "WORKING") return Effect.void
          return Effect.gen(function*() {
            yield* Metric.increment(Watchdog.zombieRestarts)
            yield* Effect.logWarning(`number ${number.id}: zombie connection restarted: ${s.why}`)
            yield* report("STARTING", { reason: `zombie connection restarted: ${s.why}` })
            yield* connect
          })
        case "PairingCode":
          if (linking !== "code") return Effect.void
          return Effect.zipRight(releaseSlot, report("SCAN_QR_CODE", { pairingCode: s.code.replace(/-/g, "") }))
        case "PairingFailed":
          return Effect.gen(function*() {
            yield* drop({ end: true })
            linking = null
            yield* report("FAILED", { reason: `pairing code request failed: ${s.why}` })
          })
        case "Link":
          return Effect.gen(function*() {
            if (!auth.isLinked()) yield* startLinking(s.method.kind)
            else if (socket === null && slot === null) {
              // Linked but not connecting (FAILED, or waiting to reconnect): connect now.
              failures = 0
              yield* report("STARTING")
              yield* connect
            } else {
              // Linked already: the entity is told where the connection stands.
              yield* report(status)
            }
          }).pipe(Effect.ensuring(Deferred.succeed(s.done, undefined)))
        case "Logout":
          return Effect.gen(function*() {
            const s0 = socket
            yield* drop({ end: false })
            if (s0 !== null) {
              yield* Effect.ignore(timed(() => s0.logout("logged out by the gateway"), settings.queryTimeoutMs))
              yield* Effect.ignore(timed(() => Promise.resolve(s0.end(undefined)), settings.queryTimeoutMs))
            }
            linking = null
            yield* auth.reset
            yield* report("STOPPED", { reason: "logged out" })
          }).pipe(Effect.ensuring(Deferred.succeed(s.done, undefined)))
      }
    }

    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        closed = true
        const wasLinked = socket !== null && auth.isLinked()
        yield* drop({ end: true })
        // Credentials changed by the last events are kept even if their signal was not handled.
        if (wasLinked) yield* Effect.ignore(auth.saveCreds)
      })
    )
    signal({ _tag: "Start" })
    yield* Effect.forkIn(
      Effect.forever(
        Effect.flatMap(Queue.take(inbox), (s) =>
          handle(s).pipe(
            Effect.catchAllCause((cause) => Effect.logError(`number ${number.id}: handling ${s._tag} failed`, cause))
          ))
      ),
      scope
    )

    const connected = (): BaileysSocket | DriverUnavailable =>
      closed
        ? new DriverUnavailable({ reason: "the session is closed" })
        : status !== "WORKING" || socket === null
        ? new DriverUnavailable({ reason: `the number is not connected (status ${status})` })
        : socket

    const command = <A extends Signal & { done: Deferred.Deferred<void> }>(make: (done: Deferred.Deferred<void>) => A) =>
      Effect.flatMap(Deferred.make<void>(), (done) => Effect.zipRight(Effect.sync(() => signal(make(done))), Deferred.await(done)))

    return {
      link: (method) =>
        Effect.suspend(() =>
          closed
            ? Effect.fail(new DriverUnavailable({ reason: "the session is closed" }))
            : command((done) => ({ _tag: "Link", method, done }))
        ).pipe(Effect.withSpan("BaileysSession.link", { attributes: { numberId: number.id, method: method.kind } })),
      send: (message) =>
        Effect.suspend(() => {
          const s = connected()
          if (s instanceof DriverUnavailable) return Effect.fail(s)
          const timeout = message.content.kind === "text" ? settings.sendTimeoutMs : settings.mediaSendTimeoutMs
          return timed(
            () => s.sendMessage(Jids.phoneJid(message.to), Outgoing.content(message.content), { messageId: message.waMessageId }),
            timeout
          ).pipe(Effect.mapError((e) => Outgoing.sendFailure(e)), Effect.asVoid)
        }).pipe(Effect.withSpan("BaileysSession.send", { attributes: { numberId: number.id, kind: message.content.kind } })),
      exists: (phone) =>
        Effect.suspend(() => {
          const s = connected()
          if (s instanceof DriverUnavailable) return Effect.fail(s)
          return timed(() => s.onWhatsApp(phone), settings.queryTimeoutMs).pipe(
            Effect.map((found) => ({ exists: found?.some((r) => r.exists) ?? false, chatId: Jids.chatOf(phone) })),
            Effect.mapError((e) => new DriverUnavailable({ reason: `contact check failed: ${messageOf(e)}` }))
          )
        }).pipe(Effect.withSpan("BaileysSession.exists", { attributes: { numberId: number.id } })),
      logout: Effect.suspend(() => closed ? Effect.void : command((done) => ({ _tag: "Logout", done })))
    }
  })
