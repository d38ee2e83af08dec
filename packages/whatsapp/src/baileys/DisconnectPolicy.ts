/**
 * What a closed Baileys connection leads to, by its `DisconnectReason` (the status code of the
 * Boom error in `lastDisconnect`), and how long to wait before reconnecting. Pure functions;
 * `docs/baileys.md` has the same table.
 *
 * @since 1.0.0
 */
import { DisconnectReason } from "@whiskeysockets/baileys"

/** @since 1.0.0 */
export type Decision =
  /** Reconnect at once, without counting it (WhatsApp asked for a restart, e.g. right after linking). */
  | { readonly _tag: "RestartNow" }
  /** Reconnect after a backoff; counts against the restart budget. */
  | { readonly _tag: "Reconnect"; readonly reason: string }
  /** The device is no longer linked: its credentials are deleted; linking again is needed. */
  | { readonly _tag: "Stopped"; readonly reason: string }
  /** Given up; stays FAILED until an operator links or restarts the number. */
  | { readonly _tag: "Failed"; readonly reason: string }

/** @since 1.0.0 */
export interface Closed {
  /** Status code of the error that closed the connection (undefined: none given). */
  readonly code: number | undefined
  readonly message: string
  /** The connection was made to link the number (QR or pairing code), not yet linked. */
  readonly linking: "qr" | "code" | null
  /** Reconnects already made in a row, before this close. */
  readonly failures: number
  readonly restartBudget: number
}

/** The status code a Baileys close error carries (a Boom), if any. @since 1.0.0 */
export const codeOf = (error: unknown): number | undefined => {
  const output = (error as { output?: { statusCode?: unknown } } | undefined)?.output
  return typeof output?.statusCode === "number" ? output.statusCode : undefined
}

const described = (closed: Closed) => `${closed.message || "connection closed"}${closed.code === undefined ? "" : ` (${closed.code})`}`

/** @since 1.0.0 */
export const decide = (closed: Closed): Decision => {
  const { code, linking } = closed
  if (code === DisconnectReason.restartRequired) return { _tag: "RestartNow" }
  if (linking !== null) {
    // Baileys ends a linking connection with 408 when the last QR (or the pairing code) expired.
    if (code === DisconnectReason.timedOut || /QR refs/i.test(closed.message)) {
      return { _tag: "Failed", reason: linking === "qr" ? "qr refs ran out" : "pairing code expired" }
    }
    return { _tag: "Failed", reason: `linking failed: ${described(closed)}` }
  }
  switch (code) {
    case DisconnectReason.loggedOut:
      return { _tag: "Stopped", reason: "logged out from the phone" }
    case DisconnectReason.forbidden:
      return { _tag: "Failed", reason: "refused by WhatsApp (403): the account may be banned" }
    case DisconnectReason.connectionReplaced:
      return { _tag: "Failed", reason: "replaced by another connection of this device (440)" }
    case DisconnectReason.multideviceMismatch:
      return { _tag: "Failed", reason: "multi-device mismatch (411): link the number again" }
  }
  if (closed.failures + 1 > closed.restartBudget) {
    return { _tag: "Failed", reason: `restart budget spent after ${closed.failures} reconnects: ${described(closed)}` }
  }
  return { _tag: "Reconnect", reason: `connection lost: ${described(closed)}` }
}

/**
 * The wait before reconnect `attempt` (1, 2, ...): `base * 2^(attempt-1)` capped at `max`, of
 * which the upper half is random (`random` in [0, 1)), so numbers cut off together do not all
 * come back in the same instant.
 *
 * @since 1.0.0
 */
export const backoffMs = (attempt: number, base: number, max: number, random: number): number => {
  const ceiling = Math.min(max, base * 2 ** Math.max(0, attempt - 1))
  return Math.round(ceiling / 2 + random * (ceiling / 2))
}
