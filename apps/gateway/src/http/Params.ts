/**
 * Parsing what clients send in query strings and bodies into validated values, each failure
 * with the spec's error code.
 */
import { InvalidFrom, InvalidParam } from "@wagate/domain/ApiError"
import * as Almaty from "@wagate/domain/Almaty"
import * as Effect from "effect/Effect"

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
/**
 * Date and time, then the offset: `Z`, `+hh:mm`, `+hhmm` or `+hh` (ISO 8601 has all three), or
 * none (UTC). A `+` written unencoded in a query string arrives as a space (form encoding), so a
 * space before the offset's digits reads as `+`.
 */
const ISO = /^(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|[+ -]\d{2}(?::?\d{2})?)?$/i

/** The offset as `Date.parse` reads it: `Z` or `+hh:mm`. */
const offsetOf = (given: string | undefined) => {
  if (given === undefined || given.toUpperCase() === "Z") return "Z"
  const digits = given.slice(1).replace(":", "")
  return `${given[0] === "-" ? "-" : "+"}${digits.slice(0, 2)}:${digits.slice(2) || "00"}`
}
const UNIX = /^\d{1,13}(\.\d+)?$/

/**
 * An instant given as a date (midnight in Almaty at its start), an ISO 8601 time (UTC when it
 * names no offset), or unix time in seconds (milliseconds when it has 13 digits).
 */
export const parseInstant = (raw: string, name: string): Effect.Effect<Date, InvalidParam> =>
  Effect.suspend(() => {
    const value = raw.trim()
    let ms = Number.NaN
    if (DATE.test(value)) {
      const date = new Date(`${value}T00:00:00.000Z`)
      if (!Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === value) ms = Almaty.midnightOf(value)
    } else if (ISO.test(value)) {
      const [, dateTime, offset] = ISO.exec(value)!
      ms = Date.parse(`${dateTime!.replace(" ", "T")}${offsetOf(offset)}`)
    } else if (UNIX.test(value)) {
      const n = Number(value)
      ms = value.split(".")[0].length >= 13 ? n : n * 1000
    }
    return Number.isFinite(ms) && ms >= 0 && ms < 253402300800000
      ? Effect.succeed(new Date(ms))
      : Effect.fail(
        new InvalidParam({ error: `${name} must be a date (2026-11-21), an ISO 8601 time or unix seconds` })
      )
  })

export const parseOptionalInstant = (raw: string | undefined, name: string) =>
  raw === undefined ? Effect.succeed(undefined) : parseInstant(raw, name)

/** since must come before until when both are given. */
export const checkRange = (since: Date | undefined, until: Date | undefined) =>
  since !== undefined && until !== undefined && since.getTime() >= until.getTime()
    ? Effect.fail(new InvalidParam({ error: "since must be earlier than until" }))
    : Effect.void

/** The `since` and `until` of a history filter, each parsed and checked as one range. */
export const parseRange = (raw: { readonly since?: string | undefined; readonly until?: string | undefined }) =>
  Effect.gen(function*() {
    const since = yield* parseOptionalInstant(raw.since, "since")
    const until = yield* parseOptionalInstant(raw.until, "until")
    yield* checkRange(since, until)
    return { since, until }
  })

const digitsOf = (raw: string) => raw.trim().replace(/^\+/, "").replace(/[\s()-]/g, "")

/**
 * Kazakh and Russian mobile numbers written the domestic way: 8 and ten digits, 8 7xx in
 * Kazakhstan, 8 9xx in Russia. No country code makes an 11-digit number starting 87 or 89, so
 * such a number is never an international one: sent as it is, a message would go to no one.
 * Both countries' code is 7.
 */
const DOMESTIC = /^8[79]\d{9}$/

/** Digits of a phone in international format; a leading + and spaces, dashes, brackets are dropped. */
export const normalizePhone = (raw: string): string | null => {
  const digits = digitsOf(raw)
  return /^[1-9]\d{6,14}$/.test(digits) && !DOMESTIC.test(digits) ? digits : null
}

/**
 * Why a phone was refused: `rule`, and for a number written the domestic way the number to write
 * instead (`8 701 123 45 67` is `77011234567`).
 */
export const phoneRefusal = (raw: unknown, rule: string): string => {
  const digits = typeof raw === "string" ? digitsOf(raw) : ""
  return DOMESTIC.test(digits) ? `${rule}. ${digits} is written the domestic way; with the country code it is 7${digits.slice(1)}` : rule
}

/** How `from` names a number: phones have at least 7 digits, ids fewer (or are JSON numbers). */
export type NumberRef = { readonly id: number } | { readonly phone: string }

/**
 * A number id as ids are written: up to 6 digits without a leading zero. `012` is not id 12 (as
 * JavaScript's `Number()` would read it) but a phone, and not a valid one (docs/api-decisions.md).
 */
const NUMBER_ID = /^[1-9]\d{0,5}$/

export const parseNumberRef = (raw: string | number): Effect.Effect<NumberRef, InvalidFrom> => {
  if (typeof raw === "number") {
    return Number.isSafeInteger(raw) && raw > 0 ? Effect.succeed({ id: raw }) : Effect.fail(new InvalidFrom())
  }
  const value = raw.trim()
  if (NUMBER_ID.test(value)) return Effect.succeed({ id: Number(value) })
  const phone = normalizePhone(value)
  return phone === null ? Effect.fail(new InvalidFrom()) : Effect.succeed({ phone })
}

/** A chat as `chat` names it: a phone (a one-to-one chat) or a chat id. */
export const parseChat = (raw: string): Effect.Effect<string, InvalidParam> => {
  const value = raw.trim()
  if (/^[0-9]+(-[0-9]+)?@(c\.us|g\.us|s\.whatsapp\.net|lid)$/.test(value)) {
    return Effect.succeed(value.replace("@s.whatsapp.net", "@c.us"))
  }
  const phone = normalizePhone(value)
  return phone === null
    ? Effect.fail(new InvalidParam({ error: "chat must be a phone (digits) or a chat_id such as 77011234567@c.us" }))
    : Effect.succeed(`${phone}@c.us`)
}
