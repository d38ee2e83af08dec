/**
 * One webhook attempt: a POST of the signed body, answered within the timeout, to the address
 * checked for the URL. Each account's entity has a sender of its own, with its own kept-alive
 * connection, so a slow or dead receiver of one account holds no socket, slot or queue another
 * account needs.
 *
 * @since 1.0.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as http from "node:http"
import * as https from "node:https"
import type { LookupFunction } from "node:net"
import { isIP } from "node:net"
import * as WebhookUrl from "./WebhookUrl.js"

/** What an attempt got: the HTTP status, or why there was none. @since 1.0.0 */
export interface Attempt {
  readonly status: number | null
  readonly error: string | null
  /** From sending the request to the answer's status line (or to the failure). */
  readonly latencyMs: number
}

/** @since 1.0.0 */
export interface Sender {
  readonly post: (url: string, headers: Record<string, string>, body: string) => Effect.Effect<Attempt>
}

/** @since 1.0.0 */
export interface Options {
  readonly timeout: Duration.DurationInput
  readonly allowPrivate: boolean
  readonly resolve?: WebhookUrl.Resolve | undefined
}

/** How long a host's checked address is reused before it is resolved and checked again. */
const ADDRESS_TTL_MS = 30_000

class Failed {
  constructor(readonly error: string, readonly staleSocket: boolean) {}
}

/**
 * A sender for the scope; its connections are closed with the scope.
 *
 * @since 1.0.0
 */
export const make = (options: Options): Effect.Effect<Sender, never, Scope.Scope> =>
  Effect.gen(function*() {
    const timeout = Duration.decode(options.timeout)
    const agents = yield* Effect.acquireRelease(
      Effect.sync(() => ({
        http: new http.Agent({ keepAlive: true, maxSockets: 1 }),
        https: new https.Agent({ keepAlive: true, maxSockets: 1 })
      })),
      (a) => Effect.sync(() => {
        a.http.destroy()
        a.https.destroy()
      })
    )
    const addresses = new Map<string, { readonly address: string; readonly until: number }>()

    const addressOf = (url: URL) =>
      Effect.suspend(() => {
        const key = `${url.protocol}//${url.host}`
        const known = addresses.get(key)
        if (known && known.until > Date.now()) return Effect.succeed(known.address)
        return WebhookUrl.target(url, { allowPrivate: options.allowPrivate, resolve: options.resolve }).pipe(
          Effect.tap((address) => Effect.sync(() => addresses.set(key, { address, until: Date.now() + ADDRESS_TTL_MS })))
        )
      })

    const exchange = (url: URL, address: string, headers: Record<string, string>, body: string) =>
      Effect.async<number, Failed>((resume) => {
        let settled = false
        const settle = (result: Effect.Effect<number, Failed>) => {
          if (settled) return
          settled = true
          resume(result)
        }
        const payload = Buffer.from(body, "utf8")
        const req = (url.protocol === "https:" ? https : http).request(url, {
          method: "POST",
          agent: url.protocol === "https:" ? agents.https : agents.http,
          lookup: pinned(address),
          headers: { ...headers, "content-length": String(payload.byteLength) }
        })
        req.on("error", (error: Error & { code?: string }) =>
          settle(Effect.fail(new Failed(describe(error, url), req.reusedSocket && error.code === "ECONNRESET"))))
        req.on("response", (res) => {
          // The answer's body means nothing; it is read only so the connection can be reused.
          res.resume()
          res.on("error", () => undefined)
          settle(Effect.succeed(res.statusCode ?? 0))
        })
        req.end(payload)
        return Effect.sync(() => {
          settled = true
          req.destroy()
        })
      })

    const post = (rawUrl: string, headers: Record<string, string>, body: string): Effect.Effect<Attempt> =>
      Effect.suspend(() => {
        const started = performance.now()
        const latencyMs = () => Math.round(performance.now() - started)
        const url = new URL(rawUrl)
        return addressOf(url).pipe(
          Effect.mapError((e) => new Failed(e.reason, false)),
          Effect.flatMap((address) =>
            exchange(url, address, headers, body).pipe(
              // A kept-alive connection the receiver had just closed: once more on a new one.
              Effect.catchIf((e) => e.staleSocket, () => exchange(url, address, headers, body))
            )
          ),
          Effect.timeoutFail({
            duration: timeout,
            onTimeout: () => new Failed(`No answer within ${Duration.format(timeout)}`, false)
          }),
          Effect.match({
            onSuccess: (status): Attempt => ({ status, error: null, latencyMs: latencyMs() }),
            onFailure: (e): Attempt => ({ status: null, error: e.error, latencyMs: latencyMs() })
          })
        )
      })

    return { post }
  })

/** A `lookup` that answers every name with the checked address. */
const pinned = (address: string): LookupFunction => (_hostname, options, callback) => {
  const family = isIP(address)
  if (options.all) (callback as (e: null, all: Array<{ address: string; family: number }>) => void)(null, [{ address, family }])
  else callback(null, address, family)
}

const describe = (error: Error & { readonly code?: string }, url: URL): string => {
  const host = url.host
  switch (error.code) {
    case "ECONNREFUSED":
      return `Connection to ${host} was refused`
    case "ECONNRESET":
      return `${host} closed the connection without answering`
    case "ETIMEDOUT":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return `${host} could not be reached (${error.code})`
    default:
      return /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_|HOSTNAME_MISMATCH)/.test(error.code ?? "")
        ? `TLS error with ${host}: ${error.message}`
        : `Could not deliver to ${host}: ${error.message}`
  }
}
