/**
 * One HTTP exchange of a media download: a GET connected to an address chosen (and checked) by
 * the caller, answered by a redirect or by a body read up to a size cap.
 *
 * @since 1.0.0
 */
import { MediaFetchFailed, MediaTooLarge } from "@wagate/domain/ApiError"
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { IncomingHttpHeaders, IncomingMessage } from "node:http"
import * as http from "node:http"
import * as https from "node:https"
import type { LookupFunction } from "node:net"
import { isIP } from "node:net"

/** @since 1.0.0 */
export interface Target {
  readonly url: URL
  /** The IP address the connection goes to, whatever DNS answers by the time it is made. */
  readonly address: string
}

/** @since 1.0.0 */
export type Answer =
  | { readonly _tag: "Redirect"; readonly location: string }
  | {
    readonly _tag: "Body"
    readonly headers: IncomingHttpHeaders
    /** The body as it arrives, once; it fails with `MediaTooLarge` past the cap. */
    readonly body: Stream.Stream<Uint8Array, MediaFetchFailed | MediaTooLarge>
  }

const REDIRECTS = new Set([301, 302, 303, 307, 308])

/**
 * GETs `target.url` from `target.address`. A body longer than `maxBytes` (announced or streamed)
 * fails with `MediaTooLarge` as soon as it is known, and the connection is closed. The body is
 * read while it is consumed (nothing is held beyond a chunk or two); the connection closes with
 * the scope.
 *
 * @since 1.0.0
 */
export const exchange = (
  target: Target,
  maxBytes: number,
  describeLimit: string
): Effect.Effect<Answer, MediaFetchFailed | MediaTooLarge, Scope.Scope> =>
  Effect.gen(function*() {
    const tooLarge = () => new MediaTooLarge({ error: `The file is larger than the ${describeLimit} limit` })
    const client = target.url.protocol === "https:" ? https : http
    const req = yield* Effect.acquireRelease(
      Effect.sync(() =>
        client.request(target.url, {
          method: "GET",
          // A socket of its own: nothing pooled outlives the download or carries another's address.
          agent: false,
          lookup: pinned(target.address),
          headers: { "user-agent": "wagate", accept: "*/*", "accept-encoding": "identity" }
        })
      ),
      (req) => Effect.sync(() => req.destroy())
    )
    const res = yield* Effect.async<IncomingMessage, MediaFetchFailed>((resume) => {
      let answered = false
      // Kept for the request's life: an error after the response (the body cut short) reaches the
      // body's stream through the response; here it must only not go unhandled.
      req.on("error", (error) => {
        if (!answered) resume(Effect.fail(failure(error, target.url)))
        answered = true
      })
      req.once("response", (res) => {
        if (!answered) resume(Effect.succeed(res))
        answered = true
      })
      req.end()
    })
    const status = res.statusCode ?? 0
    const location = res.headers.location
    if (REDIRECTS.has(status) && location !== undefined) {
      req.destroy()
      return { _tag: "Redirect", location } as const
    }
    if (status < 200 || status > 299) {
      return yield* new MediaFetchFailed({ error: `The URL answered HTTP ${status}${reason(res)}` })
    }
    if (Number(res.headers["content-length"]) > maxBytes) return yield* tooLarge()
    let size = 0
    const body = NodeStream.fromReadable<MediaFetchFailed | MediaTooLarge, Uint8Array>(
      () => res,
      (error) => res.complete || (error as Error).message !== "aborted" ? failure(error as Error, target.url) : closedEarly()
    ).pipe(
      Stream.mapEffect((chunk) => {
        size += chunk.byteLength
        return size > maxBytes ? Effect.fail(tooLarge()) : Effect.succeed(chunk)
      }),
      // A body cut short ends the stream quietly on some node versions: not the whole file.
      Stream.concat(Stream.suspend(() =>
        res.complete ? Stream.empty : Stream.fail(closedEarly())
      ))
    )
    return { _tag: "Body", headers: res.headers, body } as const
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

const closedEarly = () => new MediaFetchFailed({ error: "The connection closed before the whole file arrived" })

const reason = (res: IncomingMessage) => (res.statusMessage ? ` ${res.statusMessage}` : "")

const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_|HOSTNAME_MISMATCH)/

const failure = (error: Error & { readonly code?: string }, url: URL): MediaFetchFailed => {
  const code = error.code ?? ""
  const host = url.host
  const description = code === "ECONNREFUSED"
    ? `Connection to ${host} was refused`
    : code === "ECONNRESET"
    ? `Connection to ${host} was reset`
    : code === "ETIMEDOUT" || code === "EHOSTUNREACH" || code === "ENETUNREACH"
    ? `${host} could not be reached (${code})`
    : TLS_CODES.test(code)
    ? `TLS error with ${host}: ${error.message}`
    : `Could not fetch from ${host}: ${error.message}`
  return new MediaFetchFailed({ error: description })
}
