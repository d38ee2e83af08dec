/**
 * The zombie watchdog: a connection that says WORKING but is dead. Every `watchdogIntervalMs` it
 * looks at a WORKING connection; it is a zombie when its WebSocket is no longer open, when
 * Baileys has held events back for `bufferStuckMs` (nothing would reach the gateway), or when
 * after `idleMs` without a single received frame a ping is not answered within `pingTimeoutMs`.
 * The session then restarts the connection and counts it in `wagate_zombie_restarts`.
 *
 * @since 1.0.0
 */
import type { BinaryNode } from "@whiskeysockets/baileys"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type { BaileysSocket } from "./BaileysSocket.js"
import type { BaileysSettings } from "./BaileysSettings.js"

/** Connections restarted because they were WORKING but dead. @since 1.0.0 */
export const zombieRestarts = Metric.counter("wagate_zombie_restarts", {
  description: "WhatsApp connections that reported WORKING but were dead, and were restarted",
  incremental: true
})

/** A keep-alive ping, as WhatsApp Web sends it (a new node each time: the query sets its id). */
const ping = (): BinaryNode => ({
  tag: "iq",
  attrs: { to: "s.whatsapp.net", type: "get", xmlns: "w:p" },
  content: [{ tag: "ping", attrs: {} }]
})

/** @since 1.0.0 */
export interface Watched {
  readonly socket: BaileysSocket
  /** When the connection last received anything (Clock millis). */
  readonly lastTrafficAt: () => number
  /** Records traffic now (an answered ping). */
  readonly traffic: () => void
}

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`

/**
 * Watches the connection; succeeds with why it is a zombie (and runs forever while it is not).
 *
 * @since 1.0.0
 */
export const watch = (
  watched: Watched,
  settings: Pick<BaileysSettings, "watchdogIntervalMs" | "idleMs" | "pingTimeoutMs" | "bufferStuckMs">
): Effect.Effect<string> =>
  Effect.gen(function*() {
    let bufferingSince: number | null = null
    while (true) {
      yield* Effect.sleep(Duration.millis(settings.watchdogIntervalMs))
      const now = yield* Clock.currentTimeMillis
      const { socket } = watched
      if (!socket.ws.isOpen) return "the websocket is no longer open"
      if (socket.ev.isBuffering?.() === true) {
        bufferingSince ??= now
        if (now - bufferingSince >= settings.bufferStuckMs) return `events held back for ${seconds(now - bufferingSince)}`
      } else {
        bufferingSince = null
      }
      const idle = now - watched.lastTrafficAt()
      if (idle < settings.idleMs) continue
      const answered = yield* Effect.tryPromise(() => socket.query(ping(), settings.pingTimeoutMs)).pipe(
        Effect.timeout(Duration.millis(settings.pingTimeoutMs)),
        Effect.as(true),
        Effect.orElseSucceed(() => false)
      )
      if (!answered) return `no answer to a ping within ${seconds(settings.pingTimeoutMs)} after ${seconds(idle)} without traffic`
      watched.traffic()
    }
  })
