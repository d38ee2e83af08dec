/**
 * What a closed Baileys connection leads to, from the Boom error in `lastDisconnect` (its status
 * code, message and `data`, as Baileys 7.0.0-rc14 builds them), and how long to wait before
 * reconnecting. Pure functions; `docs/baileys.md` has the same table.
 *
 * Transient failures (the network, WhatsApp's own incidents, a restart it asks for) never strand
 * a linked number: it reconnects with a capped, jittered backoff for as long as it takes. Only
 * an answer about the account (logged out, banned, outdated client, replaced) ends the
 * connection for good, each with its own reason.
 *
 * @since 1.0.0
 */

/** @since 1.0.0 */
export type Decision =
  /** Reconnect at once (WhatsApp asked for a restart, e.g. right after linking). */
  | { readonly _tag: "RestartNow" }
  /** Reconnect after the backoff of `attempt` (1, 2, ...); the number says STARTING with `reason`. */
  | { readonly _tag: "Reconnect"; readonly reason: string; readonly attempt: number }
  /** WhatsApp refused the announced version (405) or user agent (409): fetch the current version, then reconnect. */
  | { readonly _tag: "RefreshVersion"; readonly reason: string }
  /** Try once more after `delayMs` (another connection replaced this one: 440). */
  | { readonly _tag: "RetryLater"; readonly reason: string; readonly delayMs: number }
  /** Logged out (401): STOPPED; the credentials are kept until a second 401 confirms it. */
  | { readonly _tag: "LoggedOut"; readonly reason: string }
  /** The device is no longer linked: its credentials are deleted; linking again is needed. */
  | { readonly _tag: "Stopped"; readonly reason: string }
  /**
   * Given up; stays FAILED until an operator links or restarts the number. `refused`: WhatsApp
   * refused the credentials themselves (411), so they are never used again and a link makes a
   * new device; or it refused the account (403, 406), which a new device would not change
   * either (`refusesAccount`). `until` (epoch ms): the account is banned until then (402), and
   * stored so; the number is not connected before then, and connects by itself after.
   */
  | { readonly _tag: "Failed"; readonly reason: string; readonly refused?: boolean; readonly until?: number }

/** @since 1.0.0 */
export interface Closed {
  /** Status code of the error that closed the connection (undefined: none given). */
  readonly code: number | undefined
  readonly message: string
  /** The system error code under a WebSocket error (`ENOTFOUND`, `ECONNREFUSED`...), from `Boom.data.code`. */
  readonly cause: string | undefined
  /** `Boom.data` as Baileys set it (the attributes of a `<failure>` node, for instance). */
  readonly data: Readonly<Record<string, unknown>> | undefined
  /** The connection was made to link the number (QR or pairing code), not yet linked. */
  readonly linking: "qr" | "code" | null
  /** A QR or a pairing code was shown during this linking. */
  readonly shown: boolean
  /** Reconnects already made in a row (without a stable connection), before this close. */
  readonly failures: number
  /** Restarts (515) in a row without the connection opening. */
  readonly restarts: number
  /** Attempts a linking connection gets when WhatsApp cannot be reached. */
  readonly linkRetries: number
  /** The version was refreshed after a 405 already. */
  readonly versionRefreshed: boolean
  /** A 440 was already retried. */
  readonly replacedBefore: boolean
  /** A 401 was already seen (and not followed by an open connection): this one confirms the logout. */
  readonly loggedOutBefore: boolean
  /** When the connection closed (epoch ms): a ban's `expire` counts from then. */
  readonly now: number
}

/** @since 1.0.0 */
export const RESTART_REQUIRED = 515
/**
 * WhatsApp refused the account itself (banned or blocked): connecting again, after a restart or
 * on a link, is refused the same way, and so would a new device be. @since 1.0.0
 */
export const FORBIDDEN = 403
/** @since 1.0.0 */
export const FORBIDDEN_REASON = "refused by WhatsApp (403): the account may be banned"
/** WhatsApp banned the account: refused as a 403 is, on every connection and every device. @since 1.0.0 */
export const BANNED = 406
/** @since 1.0.0 */
export const BANNED_REASON = "banned by WhatsApp (406)"

/** Whether a close with `code` refused the account itself (403, 406), not only these credentials. @since 1.0.0 */
export const refusesAccount = (code: number): boolean => code === FORBIDDEN || code === BANNED
/**
 * WhatsApp banned the account for a while (402): every connection before the ban's end is
 * refused again (and adds to the account's record), so none is made until then. @since 1.0.0
 */
export const TEMPORARY_BAN = 402
/**
 * How long a 402 that gives no usable end (no `expire`, or not a number) is waited out before
 * one connection tries again: WhatsApp's temporary bans are counted in hours to days, so a day
 * neither hammers a banned account nor leaves a number idle long after its ban. @since 1.0.0
 */
export const TEMPORARY_BAN_UNKNOWN_MS = 24 * 60 * 60 * 1000
/**
 * The shortest wait after a 402, whatever its `expire` says (an end already past, a clock
 * ahead of WhatsApp's): a ban answered again at once is not tried again in a loop. @since 1.0.0
 */
export const TEMPORARY_BAN_MIN_MS = 5 * 60 * 1000
/** WhatsApp refused the client's user agent (409): its version or browser, not the account. @since 1.0.0 */
export const BAD_USER_AGENT = 409
/** Seconds before a connection replaced by another one (440) is tried once more. @since 1.0.0 */
export const REPLACED_RETRY_MS = 30_000

/** The status code a Baileys close error carries (a Boom), if any. @since 1.0.0 */
export const codeOf = (error: unknown): number | undefined => {
  const output = (error as { output?: { statusCode?: unknown } } | undefined)?.output
  return typeof output?.statusCode === "number" ? output.statusCode : undefined
}

/** `Boom.data` of a Baileys close error, when it is an object. @since 1.0.0 */
export const dataOf = (error: unknown): Readonly<Record<string, unknown>> | undefined => {
  const data = (error as { data?: unknown } | undefined)?.data
  return typeof data === "object" && data !== null ? data as Record<string, unknown> : undefined
}

/** The system error code under a WebSocket error (`Boom.data` is the `ws` error). @since 1.0.0 */
export const causeOf = (error: unknown): string | undefined => {
  const code = dataOf(error)?.code
  return typeof code === "string" && /^E[A-Z_]+$/.test(code) ? code : undefined
}

/** What Baileys ends a linking connection with when the last QR (or the pairing code) expired. */
const QR_REFS_ENDED = /^QR refs attempts ended/

const isNetwork = (c: Closed) =>
  c.cause !== undefined || c.message.startsWith("WebSocket Error") || c.code === undefined

/** For people: what happened, in a few words. @since 1.0.0 */
export const describe = (c: Closed): string => {
  if (c.cause !== undefined || c.message.startsWith("WebSocket Error")) {
    return `cannot reach WhatsApp (${c.message.replace(/^WebSocket Error \((.*)\)$/, "$1") || c.cause})`
  }
  if (c.message === "Timed Out") return `WhatsApp did not answer in time (${c.code ?? 408})`
  if (c.message === "Connection was lost") return `connection lost: no answer to keep-alives (${c.code ?? 408})`
  return `${c.message || "connection closed"}${c.code === undefined ? "" : ` (${c.code})`}`
}

/**
 * When a 402's ban ends (epoch ms), from `Boom.data.expire` (the `<failure>` node's attribute):
 * WhatsApp gives the ban's length in seconds (whatsmeow reads it so); a value past 10^9 is taken
 * as an epoch in seconds. Null when there is none usable.
 */
const banEnd = (c: Closed): number | null => {
  const raw = c.data?.expire ?? c.data?.expires ?? c.data?.until
  const n = typeof raw === "number" || (typeof raw === "string" && raw.trim() !== "") ? Number(raw) : NaN
  if (!Number.isFinite(n) || n <= 0) return null
  return n > 1_000_000_000 ? n * 1000 : c.now + n * 1000
}

/**
 * Why WhatsApp banned the account for a while: the `<failure>` node's `code` attribute, in the
 * words whatsmeow gives its codes (`events.TempBanReason`).
 */
const BAN_REASONS: Readonly<Record<string, string>> = {
  "101": "too many messages to people who do not have the number in their contacts",
  "102": "blocked by too many people",
  "103": "too many groups created with people who do not have the number in their contacts",
  "104": "the same message sent to too many people",
  "106": "too many messages to a broadcast list"
}

/** `; WhatsApp's reason: ... (code)` for a 402 that gives its code, else nothing. */
const banReason = (c: Closed): string => {
  const code = c.data?.code
  if ((typeof code !== "string" && typeof code !== "number") || String(code).trim() === "") return ""
  const known = BAN_REASONS[String(code).trim()]
  return known === undefined ? `; WhatsApp's reason code: ${String(code).trim()}` : `; WhatsApp's reason: ${known} (${String(code).trim()})`
}

/** A 402: FAILED until the ban's end (or a day, when WhatsApp gave none), stored, with WhatsApp's reason. */
const temporaryBan = (c: Closed): Decision => {
  const end = banEnd(c)
  const until = Math.max(end ?? c.now + TEMPORARY_BAN_UNKNOWN_MS, c.now + TEMPORARY_BAN_MIN_MS)
  const at = new Date(until).toISOString()
  return {
    _tag: "Failed",
    reason: (end === null
      ? `temporarily banned by WhatsApp (402), no end given: tried again at ${at}`
      : `temporarily banned by WhatsApp (402) until ${at}`) + banReason(c),
    until
  }
}

/** What an account-level answer means; null for a transient one. */
const accountLevel = (c: Closed): Decision | null => {
  switch (c.code) {
    case 401:
      return c.linking !== null
        ? { _tag: "Failed", reason: "WhatsApp refused the linking (401)" }
        : c.loggedOutBefore
        ? { _tag: "Stopped", reason: "logged out from the phone (401)" }
        : { _tag: "LoggedOut", reason: "logged out from the phone (401)" }
    case TEMPORARY_BAN:
      return temporaryBan(c)
    case FORBIDDEN:
      return { _tag: "Failed", reason: FORBIDDEN_REASON, refused: true }
    case 405:
      return c.versionRefreshed
        ? { _tag: "Failed", reason: "WhatsApp rejected the client version (405) even after fetching the current one" }
        : { _tag: "RefreshVersion", reason: "WhatsApp rejected the client version (405): fetching the current one" }
    case BANNED:
      return { _tag: "Failed", reason: BANNED_REASON, refused: true }
    case BAD_USER_AGENT:
      // The client announced (its WhatsApp Web version, its browser), not the account: the
      // current version is fetched and tried once, as after a 405; then FAILED, not stored, so a
      // restart (after the operator set WA_VERSION or updated the gateway) tries once again.
      return c.versionRefreshed
        ? {
          _tag: "Failed",
          reason: "WhatsApp refused the client's user agent (409) even after fetching the current version: " +
            "set WA_VERSION or update the gateway, then link the number (its credentials are kept)"
        }
        : { _tag: "RefreshVersion", reason: "WhatsApp refused the client's user agent (409): fetching the current version" }
    case 411:
      return { _tag: "Failed", reason: "multi-device mismatch (411): link the number again", refused: true }
    case 440:
      return c.replacedBefore || c.linking !== null
        ? { _tag: "Failed", reason: "replaced by another connection of this device (440)" }
        : {
          _tag: "RetryLater",
          reason: `replaced by another connection of this device (440): trying once more in ${REPLACED_RETRY_MS / 1000} s`,
          delayMs: REPLACED_RETRY_MS
        }
  }
  return null
}

/** @since 1.0.0 */
export const decide = (closed: Closed): Decision => {
  const { code, linking } = closed
  if (code === RESTART_REQUIRED) {
    // Right after a scan WhatsApp asks for one restart; a server that asks every time is backed off.
    return closed.restarts === 0
      ? { _tag: "RestartNow" }
      : {
        _tag: "Reconnect",
        reason: `WhatsApp keeps asking for a restart (515, ${closed.restarts + 1} in a row): reconnecting (attempt ${
          closed.failures + 1
        })`,
        attempt: closed.failures + 1
      }
  }
  if (linking !== null && QR_REFS_ENDED.test(closed.message) && closed.shown) {
    return { _tag: "Failed", reason: linking === "qr" ? "qr refs ran out" : "pairing code expired" }
  }
  const account = accountLevel(closed)
  if (account !== null) return account
  const attempt = closed.failures + 1
  const what = describe(closed)
  if (linking !== null) {
    const rescan = closed.shown ? (linking === "qr" ? "; scan the new QR" : "; a new code will be shown") : ""
    if (attempt > closed.linkRetries) return { _tag: "Failed", reason: what }
    return { _tag: "Reconnect", reason: `${what}: retrying (attempt ${attempt} of ${closed.linkRetries})${rescan}`, attempt }
  }
  return {
    _tag: "Reconnect",
    reason: `${isNetwork(closed) ? what : `connection lost: ${what}`}: reconnecting (attempt ${attempt})`,
    attempt
  }
}

/**
 * The wait before reconnect `attempt` (1, 2, ...): `base * 2^(attempt-1)` capped at `max`, of
 * which the upper half is random (`random` in [0, 1)), so numbers cut off together do not all
 * come back in the same instant.
 *
 * @since 1.0.0
 */
export const backoffMs = (attempt: number, base: number, max: number, random: number): number => {
  const ceiling = Math.min(max, base * 2 ** Math.max(0, Math.min(attempt, 40) - 1))
  return Math.round(ceiling / 2 + random * (ceiling / 2))
}
