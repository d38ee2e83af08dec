/**
 * What the parts of a number's session share: the signals its one fiber handles, its mutable
 * state (the current socket and its generation, linking, reconnect count...), and the helpers
 * every part uses (report a status, run a promise with a time limit).
 *
 * Only the session's fiber changes the state, one signal at a time; other fibers (timers,
 * requests in flight, the watchdog) report back by signalling.
 *
 * @since 1.0.0
 */
import type { ConnectionStatus } from "@wagate/domain/Connection"
import type * as Clock from "effect/Clock"
import type * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"
import type { CacheStore } from "@whiskeysockets/baileys"
import type { DriverEvent, DriverUnavailable, LinkMethod, LinkRefused, SendRejected } from "../WhatsAppDriver.js"
import type { AuthStoreService } from "./AuthStore.js"
import type { BaileysSettings } from "./BaileysSettings.js"
import type { BaileysLogger, BaileysSocket, SocketFactoryService } from "./BaileysSocket.js"
import type { GroupSubjects } from "./GroupSubjects.js"
import type { LidMap } from "./LidMap.js"
import type { NumberAuth } from "./NumberAuth.js"
import type { WaVersion } from "./WaVersion.js"
import * as Outgoing from "./Outgoing.js"
import type { SocketSignal } from "./SocketEvents.js"

/** What every session of a driver shares. @since 1.0.0 */
export interface Deps {
  readonly settings: BaileysSettings
  readonly factory: SocketFactoryService
  readonly store: AuthStoreService
  /** Bounds the handshakes in flight in this process. */
  readonly connectSlots: Effect.Semaphore
  /** The WhatsApp Web version to announce. */
  readonly versions: WaVersion
  /** Contact checks this process made or read, by phone, in front of the kept ones (`Sending.exists`). */
  readonly checked: Map<string, ContactCheck>
}

/** WhatsApp's answer whether a phone has WhatsApp, and the user it knows the phone by. @since 1.0.0 */
export interface ContactCheck {
  readonly exists: boolean
  readonly user: string
  readonly at: number
}

/** Everything the session's fiber acts on. @since 1.0.0 */
export type Signal =
  | SocketSignal
  | { readonly _tag: "Start" }
  | { readonly _tag: "Connect"; readonly gen: number }
  /** A temporary ban's timer: connect if the stored ban is over (`Reconnect.banOver`). */
  | { readonly _tag: "BanOver"; readonly gen: number }
  | { readonly _tag: "Zombie"; readonly gen: number; readonly why: string }
  | { readonly _tag: "PairingCode"; readonly gen: number; readonly code: string }
  | { readonly _tag: "PairingFailed"; readonly gen: number; readonly why: string }
  | { readonly _tag: "VersionRefreshed"; readonly gen: number }
  | { readonly _tag: "Link"; readonly method: LinkMethod; readonly done: Deferred.Deferred<void, LinkRefused> }
  | { readonly _tag: "Logout"; readonly done: Deferred.Deferred<void> }
  /** A message was not sent: its recipient has no WhatsApp (`Sending.send`). */
  | { readonly _tag: "NotOnWhatsApp"; readonly waMessageId: string }
  /** WhatsApp knows the phone `asked` as `phone`, where a message went (`Sending.send`, which waits for `done`). */
  | { readonly _tag: "PhoneMapped"; readonly asked: string; readonly phone: string; readonly done: Deferred.Deferred<void> }
  /** The session is closing: every signal before this one has been handled. */
  | { readonly _tag: "Drained"; readonly done: Deferred.Deferred<void> }

/** @since 1.0.0 */
export interface NumberRef {
  readonly id: number
  readonly phone: string
  readonly linked: boolean
}

/** The session's mutable state; changed only by the session's fiber. @since 1.0.0 */
export interface SessionState {
  status: ConnectionStatus
  socket: BaileysSocket | null
  stopListening: () => void
  /** Generation of the current socket (or of the next one, while none is up). */
  gen: number
  linking: LinkMethod["kind"] | null
  codeRequested: boolean
  /** A QR or pairing code was shown during the current linking. */
  shown: boolean
  /** Reconnects in a row without a stable connection. */
  failures: number
  /** Restarts (515) in a row without the connection opening. */
  restarts: number
  /** What was already tried once: a version refresh after 405, a retry after 440 (a 401 seen: `NumberAuth.refusal`). */
  versionRefreshed: boolean
  replacedBefore: boolean
  /** Sends waiting for WhatsApp's server ack, by message id. */
  readonly awaitingAck: Map<string, Deferred.Deferred<void, SendRejected | DriverUnavailable>>
  openedAt: number | null
  lastTrafficAt: number
  /** The connect slot the current handshake holds, until it opens, shows a QR or closes. */
  slot: Deferred.Deferred<void> | null
  watchdog: Fiber.RuntimeFiber<void> | null
  /** The session is closing or closed: it only hands over what it already received. */
  closed: boolean
}

/** @since 1.0.0 */
export type ConnectionExtra = Omit<Extract<DriverEvent, { _tag: "Connection" }>, "_tag" | "status">

/** @since 1.0.0 */
export interface SessionContext {
  readonly deps: Deps
  readonly settings: BaileysSettings
  readonly number: NumberRef
  readonly auth: NumberAuth
  readonly scope: Scope.Scope
  readonly clock: Clock.Clock
  readonly logger: BaileysLogger
  readonly state: SessionState
  readonly lids: LidMap
  readonly groups: GroupSubjects
  /** Baileys' count of re-sends per message; per number, so it outlives every socket. */
  readonly retryCounter: CacheStore
  readonly onEvent: (event: DriverEvent) => Effect.Effect<void>
  readonly signal: (s: Signal) => void
}

/** @since 1.0.0 */
export const initialState = (): SessionState => ({
  status: "none",
  socket: null,
  stopListening: () => {},
  gen: 0,
  linking: null,
  codeRequested: false,
  shown: false,
  failures: 0,
  restarts: 0,
  versionRefreshed: false,
  replacedBefore: false,
  awaitingAck: new Map(),
  openedAt: null,
  lastTrafficAt: 0,
  slot: null,
  watchdog: null,
  closed: false
})

/** @since 1.0.0 */
export const messageOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** Tells the entity the connection's status (and remembers it). @since 1.0.0 */
export const report = (ctx: SessionContext, next: ConnectionStatus, extra: ConnectionExtra = {}): Effect.Effect<void> => {
  ctx.state.status = next
  return ctx.onEvent({ _tag: "Connection", status: next, ...extra })
}

/** `f`'s promise, failing with `NoAnswer` after `ms`. @since 1.0.0 */
export const timed = <A>(f: () => Promise<A>, ms: number): Effect.Effect<A, unknown> =>
  Effect.tryPromise({ try: f, catch: (error) => error }).pipe(
    Effect.timeoutFail({ duration: Duration.millis(ms), onTimeout: () => new Outgoing.NoAnswer(ms) })
  )

/** Now, on the session's clock. @since 1.0.0 */
export const now = (ctx: SessionContext): number => ctx.clock.unsafeCurrentTimeMillis()
