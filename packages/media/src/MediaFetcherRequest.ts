/**
 * One HTTP exchange of a media download through the guarded client: a GET to a checked address,
 * answered by a redirect or by a body read up to a size cap.
 *
 * @since 1.0.0
 */
import { MediaFetchFailed, MediaTooLarge } from "@wagate/domain/ApiError"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { IncomingHttpHeaders } from "node:http"
import * as GuardedHttp from "./GuardedHttp.js"
import * as NodeBody from "./NodeBody.js"

/** @since 1.0.0 */
export type Target = GuardedHttp.Target

/** @since 1.0.0 */
export type Answer =
  | { readonly _tag: "Redirect"; readonly location: string }
  | {
    readonly _tag: "Body"
    readonly headers: IncomingHttpHeaders
    /** The body as it arrives, once; it fails with `MediaTooLarge` past the cap. */
    readonly body: NodeBody.NodeBody<MediaFetchFailed | MediaTooLarge>
  }

const REDIRECTS = new Set([301, 302, 303, 307, 308])

/** What a network failure of a download tells the account. */
const failed = (failure: GuardedHttp.NetworkFailure) =>
  new MediaFetchFailed({
    error: failure.closedEarly
      ? "The connection closed before the whole file arrived"
      : failure.cause.code === "ECONNRESET"
      ? `Connection to ${failure.url.host} was reset`
      : GuardedHttp.describe(failure, "fetch from")
  })

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
  describeLimit: string,
  /** Closes the connection when aborted (the caller's time limit). */
  signal?: AbortSignal | undefined
): Effect.Effect<Answer, MediaFetchFailed | MediaTooLarge, Scope.Scope> =>
  Effect.gen(function*() {
    const tooLarge = () => new MediaTooLarge({ error: `The file is larger than the ${describeLimit} limit` })
    const res = yield* GuardedHttp.request(target, {
      method: "GET",
      headers: { "user-agent": "wagate", accept: "*/*", "accept-encoding": "identity" },
      signal
    }).pipe(Effect.mapError(failed))
    const location = res.headers.location
    if (REDIRECTS.has(res.status) && location !== undefined) return { _tag: "Redirect", location } as const
    if (res.status < 200 || res.status > 299) {
      return yield* new MediaFetchFailed({
        error: `The URL answered HTTP ${res.status}${res.statusMessage ? ` ${res.statusMessage}` : ""}`
      })
    }
    if (Number(res.headers["content-length"]) > maxBytes) return yield* tooLarge()
    let size = 0
    const body = NodeBody.checked(NodeBody.mapError(res.body, failed), {
      chunk: (chunk) => (size += chunk.byteLength) > maxBytes ? tooLarge() : undefined
    })
    return { _tag: "Body", headers: res.headers, body } as const
  })
