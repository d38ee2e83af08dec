/**
 * The gateway's one way to call a URL a client gave it (an attachment to download, a webhook to
 * deliver): the host is resolved and every address it has is checked once, here (no private,
 * loopback or otherwise non-public address unless the caller allows it); the connection then goes
 * to the checked address whatever DNS answers meanwhile (no rebinding between check and connect);
 * a caller that follows a redirect checks its target again with {@link addressFor}. The answer's
 * body is a stream read as it is consumed, never buffered here; time limits are the caller's.
 *
 * @since 1.0.0
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { lookup } from "node:dns/promises"
import type { IncomingHttpHeaders, IncomingMessage } from "node:http"
import * as http from "node:http"
import * as https from "node:https"
import type { LookupFunction } from "node:net"
import { isIP } from "node:net"
import * as NodeBody from "./NodeBody.js"
import * as PrivateAddress from "./PrivateAddress.js"

/** Host name to IP addresses. @since 1.0.0 */
export type Resolve = (hostname: string) => Effect.Effect<ReadonlyArray<string>, unknown>

/** The system resolver, every address of the name. @since 1.0.0 */
export const systemResolve: Resolve = (hostname) =>
  Effect.tryPromise(() => lookup(hostname, { all: true, verbatim: true })).pipe(
    Effect.map((entries) => entries.map((entry) => entry.address))
  )

/** Why a URL's host is not connected to. @since 1.0.0 */
export class Refused extends Data.TaggedError("GuardedHttp.Refused")<{
  readonly host: string
  readonly reason: "private" | "unresolvable"
}> {}

/** The request failed on the network (before or while the answer came). @since 1.0.0 */
export class NetworkFailure extends Data.TaggedError("GuardedHttp.NetworkFailure")<{
  readonly url: URL
  readonly cause: Error & { readonly code?: string }
  /** On a kept-alive connection the peer had closed: worth one more try on a new one. */
  readonly staleSocket: boolean
  /** The answer had started and its body was cut short. */
  readonly closedEarly: boolean
}> {}

/** @since 1.0.0 */
export interface Target {
  readonly url: URL
  /** The checked IP address the connection goes to. */
  readonly address: string
}

/** The host of a URL without IPv6 brackets, lower case. @since 1.0.0 */
export const hostOf = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase()

/**
 * The address to connect to for `url`: the host itself when it is an IP address, else the first
 * address it resolves to. With `guard`, a host that is (or resolves to any) non-public address,
 * or is named `localhost`, is refused: all addresses count, not only the one used, since a name
 * that also points inside is not a public server.
 *
 * @since 1.0.0
 */
export const addressFor = (
  url: URL,
  options: { readonly guard: boolean; readonly resolve?: Resolve | undefined }
): Effect.Effect<Target, Refused> =>
  Effect.gen(function*() {
    const host = hostOf(url)
    if (options.guard && PrivateAddress.isLocalHostname(host)) return yield* new Refused({ host, reason: "private" })
    const addresses = isIP(host) !== 0 ? [host] : yield* (options.resolve ?? systemResolve)(host).pipe(
      Effect.mapError(() => new Refused({ host, reason: "unresolvable" }))
    )
    if (addresses.length === 0) return yield* new Refused({ host, reason: "unresolvable" })
    if (options.guard && addresses.some(PrivateAddress.isPrivate)) return yield* new Refused({ host, reason: "private" })
    return { url, address: addresses[0]! }
  })

/** @since 1.0.0 */
export interface Response {
  readonly status: number
  readonly statusMessage: string
  readonly headers: IncomingHttpHeaders
  /** The body as it arrives, once; a body cut short fails with `closedEarly`. */
  readonly body: NodeBody.NodeBody<NetworkFailure>
}

/**
 * One request to a checked target; redirects are answers (the caller decides whether to follow,
 * and checks the new target). The request is aborted with the scope unless its answer was read
 * whole, so a kept-alive connection (`agent`) is reused only after a complete exchange.
 *
 * @since 1.0.0
 */
export const request = (
  target: Target,
  options: {
    readonly method: string
    readonly headers: Record<string, string>
    readonly body?: Uint8Array | undefined
    /** Default: a connection of its own (nothing pooled carries another's address). */
    readonly agent?: http.Agent | undefined
    /**
     * Aborting it closes the connection at once, whatever the request is doing: waiting for the
     * answer fails, and so does a body being read. A deadline for a whole exchange, without a
     * race around every chunk of the body.
     */
    readonly signal?: AbortSignal | undefined
  }
): Effect.Effect<Response, NetworkFailure, Scope.Scope> =>
  Effect.gen(function*() {
    const { url } = target
    let res: IncomingMessage | undefined
    const req = yield* Effect.acquireRelease(
      Effect.sync(() =>
        (url.protocol === "https:" ? https : http).request(url, {
          method: options.method,
          agent: options.agent ?? false,
          lookup: pinned(target.address),
          signal: options.signal,
          headers: options.body === undefined
            ? options.headers
            : { ...options.headers, "content-length": String(options.body.byteLength) }
        })
      ),
      (req) => Effect.sync(() => res?.complete === true || req.destroy())
    )
    const failure = (cause: Error, closedEarly = false) =>
      new NetworkFailure({ url, cause, staleSocket: req.reusedSocket && (cause as { code?: string }).code === "ECONNRESET", closedEarly })
    res = yield* Effect.async<IncomingMessage, NetworkFailure>((resume) => {
      let answered = false
      // Kept for the request's life: an error after the response (the body cut short) reaches the
      // body's stream through the response; here it must only not go unhandled.
      req.on("error", (error) => {
        if (!answered) resume(Effect.fail(failure(error)))
        answered = true
      })
      req.once("response", (response) => {
        if (!answered) resume(Effect.succeed(response))
        answered = true
      })
      req.end(options.body)
    })
    const response = res
    const status = { status: response.statusCode ?? 0, statusMessage: response.statusMessage ?? "", headers: response.headers }
    const cutShort = () => failure(new Error("The connection closed before the whole answer arrived"), true)
    const body = NodeBody.checked(
      NodeBody.make(
        response,
        (error) => response.complete || (error as Error).message !== "aborted" ? failure(error as Error) : cutShort()
      ),
      // A body cut short ends the stream quietly on some node versions: not the whole answer.
      { end: () => (response.complete ? undefined : cutShort()) }
    )
    return { ...status, body }
  })

/**
 * A `lookup` that answers every name with the checked address, in both shapes `net` asks for
 * (one address, or all of them when it races IPv4 against IPv6).
 */
const pinned = (address: string): LookupFunction => (_hostname, options, callback) => {
  const family = isIP(address)
  if (options.all) (callback as (e: null, all: Array<{ address: string; family: number }>) => void)(null, [{ address, family }])
  else callback(null, address, family)
}

const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_|HOSTNAME_MISMATCH)/

/**
 * What went wrong, for the account: `doing` says what was tried ("fetch from", "deliver to").
 *
 * @since 1.0.0
 */
export const describe = (failure: NetworkFailure, doing: string): string => {
  const code = failure.cause.code ?? ""
  const host = failure.url.host
  if (failure.closedEarly) return failure.cause.message
  switch (code) {
    case "ECONNREFUSED":
      return `Connection to ${host} was refused`
    case "ECONNRESET":
      return `${host} closed the connection without answering`
    case "ETIMEDOUT":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return `${host} could not be reached (${code})`
    default:
      return TLS_CODES.test(code) ? `TLS error with ${host}: ${failure.cause.message}` : `Could not ${doing} ${host}: ${failure.cause.message}`
  }
}
