/**
 * Sessions and CSRF of the cabinet.
 *
 * - The session is a random 256-bit id in the HttpOnly cookie `wagate_sid` (SameSite=Strict,
 *   `Secure` when the gateway is reached over HTTPS); only its SHA-256 is stored. A session is
 *   made only when a password (or a one-time link) has just been checked, always with a fresh id,
 *   so an id planted before signing in never becomes a session (no fixation). It ends after 7
 *   days unused or 30 days in all, at log-out, and for every other session at a password change
 *   or reset. An open event stream of a session ends with it (looked at every 2 s).
 * - Every state change carries `X-CSRF-Token`: the session's token once signed in (the page gets
 *   it from GET /cabinet/api/me), before that the `wagate_csrf` cookie's (double submit; each
 *   cabinet page carries the value). A request whose Origin is another site is refused as well.
 * - No answer of the cabinet API is kept by a cache (`Cache-Control: no-store`): they carry the
 *   account's data and the CSRF token.
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { CabinetCsrf, CabinetSession } from "@wagate/cabinet/CabinetApi"
import { CsrfRejected, NotSignedIn, RateLimited } from "@wagate/domain/ApiError"
import type { AccountId } from "@wagate/domain/Ids"
import { CabinetUsers } from "@wagate/store/CabinetUsers"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { Settings } from "../Config.js"
import { RequestCounter } from "../infra/RequestCounter.js"
import { clientIp } from "../http/Authentication.js"

export const SESSION_COOKIE = "wagate_sid"
export const CSRF_COOKIE = "wagate_csrf"
export const COOKIE_PATH = "/cabinet"
const DAY_MS = 86_400_000
export const SESSION_IDLE_MS = 7 * DAY_MS
export const SESSION_MAX_MS = 30 * DAY_MS

export const secret = () => randomBytes(32).toString("base64url")
export const digest = (value: string) => createHash("sha256").update(value).digest()

const same = (a: string, b: string) => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y)
}

/** Whether the request reached us over HTTPS (per PUBLIC_URL, or as a trusted proxy says). */
export const httpsOf = (
  settings: { readonly publicUrl: Option.Option<string>; readonly trustProxy: boolean },
  request: HttpServerRequest.HttpServerRequest
) =>
  (Option.isSome(settings.publicUrl) && settings.publicUrl.value.startsWith("https://")) ||
  (settings.trustProxy && request.headers["x-forwarded-proto"] === "https")

export const isHttps = Effect.zipWith(Settings, HttpServerRequest.HttpServerRequest, httpsOf)

const cookieOptions = (secure: boolean, sameSite: "strict" | "lax", maxAgeMs: number) => ({
  path: COOKIE_PATH,
  httpOnly: true,
  secure,
  sameSite,
  maxAge: `${maxAgeMs} millis` as const
})

export const withCsrfCookie = (response: HttpServerResponse.HttpServerResponse, token: string, secure: boolean) =>
  HttpServerResponse.unsafeSetCookie(response, CSRF_COOKIE, token, cookieOptions(secure, "lax", SESSION_MAX_MS))

/** Another site's page cannot send this: a browser's Origin names the page that sent it. */
const sameOrigin = (request: HttpServerRequest.HttpServerRequest) => {
  const origin = request.headers["origin"]
  if (origin === undefined) return true
  try {
    const host = request.headers["x-forwarded-host"] ?? request.headers["host"]
    return new URL(origin).host === host
  } catch {
    return false
  }
}

const isSafe = (method: string) => method === "GET" || method === "HEAD" || method === "OPTIONS"

/** Marks the answer to the request, whatever it is (errors included), as not to be stored. */
const noStore = HttpApp.appendPreResponseHandler((_request, response) =>
  Effect.succeed(HttpServerResponse.setHeader(response, "cache-control", "no-store"))
)

export const CabinetCsrfLive = Layer.succeed(
  CabinetCsrf,
  Effect.gen(function*() {
    yield* noStore
    const request = yield* HttpServerRequest.HttpServerRequest
    if (isSafe(request.method)) return
    const header = request.headers["x-csrf-token"] ?? ""
    const cookie = request.cookies[CSRF_COOKIE] ?? ""
    if (!sameOrigin(request) || !same(header, cookie)) return yield* new CsrfRejected()
  })
)

export const CabinetSessionLive = Layer.effect(
  CabinetSession,
  Effect.gen(function*() {
    const users = yield* CabinetUsers
    return Effect.gen(function*() {
      yield* noStore
      const request = yield* HttpServerRequest.HttpServerRequest
      const id = request.cookies[SESSION_COOKIE]
      if (id === undefined || id.length < 40 || id.length > 60) return yield* new NotSignedIn()
      const sessionHash = digest(id)
      const now = new Date(yield* Clock.currentTimeMillis)
      const found = yield* users.session(sessionHash, now, SESSION_IDLE_MS)
      if (Option.isNone(found)) return yield* new NotSignedIn()
      if (!isSafe(request.method) && (!sameOrigin(request) || !same(request.headers["x-csrf-token"] ?? "", found.value.csrf))) {
        return yield* new CsrfRejected()
      }
      return { ...found.value, sessionHash }
    })
  })
)

/**
 * Completes once the session has ended (log-out, a password change or reset, 7 days unused, 30
 * days in all), looked at every 2 seconds: what an open event stream of the session waits for.
 */
export const sessionEnded = (sessionHash: Buffer) =>
  Effect.gen(function*() {
    const users = yield* CabinetUsers
    const live = Effect.flatMap(Clock.currentTimeMillis, (now) => users.sessionLive(sessionHash, new Date(now), SESSION_IDLE_MS))
    yield* Effect.repeat(live, { schedule: Schedule.spaced("2 seconds"), while: (yes) => yes })
  })

/**
 * Starts a new session for the account, ending the one the request came with (if any), and
 * answers `body` plus the session's CSRF token with both cookies set.
 */
export const startSession = (accountId: AccountId, body: Record<string, unknown>) =>
  Effect.gen(function*() {
    const users = yield* CabinetUsers
    const request = yield* HttpServerRequest.HttpServerRequest
    const previous = request.cookies[SESSION_COOKIE]
    if (previous !== undefined) yield* users.endSession(digest(previous))
    const id = secret()
    const csrf = secret()
    const now = yield* Clock.currentTimeMillis
    yield* users.createSession({ idHash: digest(id), accountId, csrf, expiresAt: new Date(now + SESSION_MAX_MS) })
    const secure = yield* isHttps
    return HttpServerResponse.unsafeJson({ ...body, account_id: accountId, csrf }).pipe(
      (r) => HttpServerResponse.unsafeSetCookie(r, SESSION_COOKIE, id, cookieOptions(secure, "strict", SESSION_MAX_MS)),
      (r) => withCsrfCookie(r, csrf, secure)
    )
  })

/** Answers `body` with the session cookie cleared. */
export const endedSession = (body: Record<string, unknown>) =>
  HttpServerResponse.unsafeJson(body).pipe(
    (r) => HttpServerResponse.unsafeSetCookie(r, SESSION_COOKIE, "", { path: COOKIE_PATH, httpOnly: true, maxAge: 0 })
  )

/** Attempts per 15 minutes: per email (whether or not it has an account) and per address. */
export const PER_EMAIL = 10
export const PER_ADDRESS = 50
const WINDOW_MS = 15 * 60_000

/**
 * Counts an attempt of `action` (log-in, sign-up, reset) by this address and, when given, for
 * this email; past the limit the answer is 429 with Retry-After, the same for any email.
 */
export const throttle = (action: string, email: string | null) =>
  Effect.gen(function*() {
    const counter = yield* RequestCounter
    const { trustProxy } = yield* Settings
    const request = yield* HttpServerRequest.HttpServerRequest
    const byAddress = yield* counter.hit(`cabinet:${action}:ip:${clientIp(request, trustProxy)}`, WINDOW_MS)
    const byEmail = email === null
      ? null
      : yield* counter.hit(`cabinet:${action}:email:${email.trim().toLowerCase()}`, WINDOW_MS)
    const over = byAddress.count > PER_ADDRESS ? byAddress : byEmail !== null && byEmail.count > PER_EMAIL ? byEmail : null
    if (over !== null) {
      return yield* new RateLimited({
        error: "Too many attempts; wait a few minutes and try again",
        retryAfter: Math.max(1, Math.ceil(over.resetMs / 1000))
      })
    }
  })
