/**
 * One of the gateway's numbers as the simulated network sees it: whether it is linked, the
 * session it is connected through, and the events waiting for that session. The functions
 * here change a device synchronously, so each network step is atomic.
 *
 * @since 1.0.0
 */
import type { ConnectionStatus } from "@wagate/domain/Connection"
import type { SimMailbox } from "./SimMailbox.js"
import type { DriverEvent, LinkMethod } from "../WhatsAppDriver.js"

/** @since 1.0.0 */
export interface SimDevice {
  readonly phone: string
  linked: boolean
  /** Logged out since it was last linked: a new session starts STOPPED rather than `none`. */
  loggedOut: boolean
  /** The status last reported to a session (or that the next session starts from). */
  status: ConnectionStatus
  qr: string | null
  pairingCode: string | null
  reason: string | null
  /** How the number is being linked right now, if it is. */
  linking: LinkMethod["kind"] | null
  /** The session attached now; null when no session is open. */
  mailbox: SimMailbox | null
  /**
   * Sessions still open that a newer one replaced, oldest first. When the session attached now
   * closes, the newest of them takes the device back after `reconnectDelayMs`, as a connection
   * replaced on the real network tries again (Baileys' 440).
   */
  replaced: Array<SimMailbox>
  /** Messages and acks waiting for the number to be connected (WORKING with a session). */
  pending: Array<DriverEvent>
  /**
   * Bumped by every connection-level change; a timer (QR refresh, automatic scan, reconnect)
   * acts only if the generation it was started in is still current.
   */
  generation: number
  /** Link attempts so far, the seed of the next pairing code. */
  attempts: number
  /** Sessions attached so far: each connection of the number, a reconnect included. */
  sessions: number
}

/**
 * What the control surface shows of a number.
 *
 * @since 1.0.0
 */
export interface SimNumberState {
  readonly phone: string
  readonly linked: boolean
  readonly status: ConnectionStatus
  readonly qr: string | null
  readonly pairingCode: string | null
  readonly reason: string | null
  readonly sessionOpen: boolean
  /** Messages and acks queued until the number connects. */
  readonly queued: number
  /** Sessions attached since the network started: each connection, a reconnect included. */
  readonly sessions: number
}

/** A device never linked and without a session. @since 1.0.0 */
export const make = (phone: string): SimDevice => ({
  phone,
  linked: false,
  loggedOut: false,
  status: "none",
  qr: null,
  pairingCode: null,
  reason: null,
  linking: null,
  mailbox: null,
  replaced: [],
  pending: [],
  generation: 0,
  attempts: 0,
  sessions: 0
})

/** @since 1.0.0 */
export const isConnected = (device: SimDevice): boolean => device.mailbox !== null && device.status === "WORKING"

/** The status an unlinked device rests in: STOPPED after a logout, `none` if it never was linked. @since 1.0.0 */
export const restStatus = (device: SimDevice): ConnectionStatus => device.loggedOut ? "STOPPED" : "none"

/**
 * Sets the status and tells the session; reaching WORKING also hands over everything that
 * waited for the connection, in the order it arrived.
 *
 * @since 1.0.0
 */
export const setStatus = (
  device: SimDevice,
  status: ConnectionStatus,
  details: { readonly qr?: string; readonly pairingCode?: string; readonly reason?: string } = {}
): void => {
  device.status = status
  device.qr = details.qr ?? null
  device.pairingCode = details.pairingCode ?? null
  device.reason = details.reason ?? null
  device.mailbox?.offer({ _tag: "Connection", status, ...details })
  if (isConnected(device)) {
    const waiting = device.pending
    device.pending = []
    for (const event of waiting) device.mailbox!.offer(event)
  }
}

/**
 * Hands a message or ack to the number: at once when connected, otherwise when it next
 * connects (WhatsApp keeps them on its servers meanwhile).
 *
 * @since 1.0.0
 */
export const deliver = (device: SimDevice, event: DriverEvent): boolean => {
  if (isConnected(device)) {
    device.mailbox!.offer(event)
    return true
  }
  device.pending.push(event)
  return false
}

/**
 * Gives back what a closed session received and never handled: messages and acks reach the
 * number's session again (the one connected now, or the next), ahead of what waits for it, as
 * WhatsApp hands a device again what it did not acknowledge. The rest was news for that session
 * only.
 *
 * @since 1.0.0
 */
export const redeliver = (device: SimDevice, events: ReadonlyArray<DriverEvent>): void => {
  const kept = events.filter((event) => event._tag === "Incoming" || event._tag === "Ack")
  if (kept.length === 0) return
  if (isConnected(device)) for (const event of kept) device.mailbox!.offer(event)
  else device.pending.unshift(...kept)
}

/** @since 1.0.0 */
export const snapshot = (device: SimDevice): SimNumberState => ({
  phone: device.phone,
  linked: device.linked,
  status: device.status,
  qr: device.qr,
  pairingCode: device.pairingCode,
  reason: device.reason,
  sessionOpen: device.mailbox !== null,
  queued: device.pending.length,
  sessions: device.sessions
})
