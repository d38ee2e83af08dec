/**
 * One HTTP exchange of a media download: a GET connected to an address chosen (and checked) by
 * the caller, answered by a redirect or by a body read up to a size cap.
 *
 * @since 1.0.0
 */
import { MediaFetchFailed, MediaTooLarge } from "@wagate/domain/ApiError"
import * as Effect from "effect/Effect"
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
  | { readonly _tag: "Body"; readonly headers: IncomingHttpHeaders; readonly bytes: Uint8Array }

const REDIRECTS = new Set([301, 302, 303, 307, 308])

/**
 * GETs `target.url` from `target.address`. A body longer than `maxBytes` (announced or streamed)
 * fails with `MediaTooLarge` as soon as it is known, and the connection is closed, so at most
 * `maxBytes` are ever held. Interrupting the effect closes the connection.
 *
 * @since 1.0.0
 */
export const exchange = (
  target: Target,
  maxBytes: number,
  describeLimit: string
): Effect.Effect<Answer, MediaFetchFailed | MediaTooLarge> =>
  Effect.async<Answer, MediaFetchFailed | MediaTooLarge>((resume) => {
    let settled = false
    const settle = (result: Effect.Effect<Answer, MediaFetchFailed | MediaTooLarge>) => {
      if (settled) return
      settled = true
      resume(result)
    }
    const tooLarge = () => new MediaTooLarge({ error: `The file is larger than the ${describeLimit} limit` })
    const client = target.url.protocol === "https:" ? https : http
    const req = client.request(target.url, {
      method: "GET",
      // A socket of its own: nothing pooled outlives the download or carries another's address.
      agent: false,
      lookup: pinned(target.address),
      headers: { "user-agent": "wagate", accept: "*/*", "accept-encoding": "identity" }
    })
    const stop = (result: Effect.Effect<Answer, MediaFetchFailed | MediaTooLarge>) => {
      settle(result)
      req.destroy()
    }
    let response: IncomingMessage | undefined
    req.on("error", (error) => {
      // Bytes after a complete body (a server sending more than it announced) are not the file's;
      // the body already read stands.
      if (response?.complete) return
      settle(Effect.fail(failure(error, target.url)))
    })
    req.on("response", (res: IncomingMessage) => {
      response = res
      const status = res.statusCode ?? 0
      const location = res.headers.location
      if (REDIRECTS.has(status) && location !== undefined) {
        return stop(Effect.succeed({ _tag: "Redirect", location }))
      }
      if (status < 200 || status > 299) {
        return stop(Effect.fail(new MediaFetchFailed({ error: `The URL answered HTTP ${status}${reason(res)}` })))
      }
      const announced = Number(res.headers["content-length"])
      if (announced > maxBytes) return stop(Effect.fail(tooLarge()))
      const chunks: Array<Uint8Array> = []
      let size = 0
      res.on("data", (chunk: Uint8Array) => {
        size += chunk.byteLength
        if (size > maxBytes) return stop(Effect.fail(tooLarge()))
        chunks.push(chunk)
      })
      res.on("end", () => {
        // A fresh array rather than Buffer.concat, whose small results are views of a shared pool.
        const bytes = new Uint8Array(size)
        let offset = 0
        for (const chunk of chunks) {
          bytes.set(chunk, offset)
          offset += chunk.byteLength
        }
        stop(Effect.succeed({ _tag: "Body", headers: res.headers, bytes }))
      })
      res.on("error", (error) => stop(Effect.fail(failure(error, target.url))))
      res.on("close", () => {
        if (!res.complete) stop(Effect.fail(new MediaFetchFailed({ error: "The connection closed before the whole file arrived" })))
      })
    })
    req.end()
    return Effect.sync(() => {
      settled = true
      req.destroy()
    })
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
