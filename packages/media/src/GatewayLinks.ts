/**
 * Signed links answered by the gateway itself, for the stores that have no URL of their own
 * (filesystem, memory): `signedUrl` mints `<publicBaseUrl>/files/<token>`, `serveSigned` answers it.
 *
 * @since 1.0.0
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type * as Stream from "effect/Stream"
import * as BlobKey from "./BlobKey.js"
import type { BlobHead, ByteRange, SignedUrlOptions } from "./BlobPort.js"
import * as ByteRanges from "./ByteRanges.js"
import { BlobNotFound, type BlobStoreError } from "./BlobStoreError.js"
import * as ContentDisposition from "./ContentDisposition.js"
import * as LinkLifetime from "./LinkLifetime.js"
import * as SignedLink from "./SignedLink.js"

/** @since 1.0.0 */
export interface Options {
  /** Where clients reach the gateway, e.g. `https://wa.example.kz`; links go to `<this>/files/...`. */
  readonly publicBaseUrl: string
  readonly signingSecret: Redacted.Redacted<string>
}

/** @since 1.0.0 */
export const make = (
  options: Options,
  store: {
    readonly head: (key: string) => Effect.Effect<Option.Option<BlobHead>, BlobStoreError>
    readonly get: (key: string, range?: ByteRange) => Stream.Stream<Uint8Array, BlobNotFound | BlobStoreError>
  }
) => {
  const base = options.publicBaseUrl.replace(/\/+$/, "")
  const nowSeconds = Effect.map(Clock.currentTimeMillis, (ms) => Math.floor(ms / 1000))
  // Rounded up, so a link lives at least the seconds asked for, never a fraction less.
  const expiry = (seconds: number) =>
    Effect.map(Clock.currentTimeMillis, (ms) => Math.ceil((ms + seconds * 1000) / 1000))

  const signedUrl = Effect.fn("BlobStore.signedUrl")(function*(key: string, link: SignedUrlOptions) {
    yield* BlobKey.check(key, "signedUrl")
    yield* LinkLifetime.check(link.expiresInSeconds, "signedUrl")
    const token = SignedLink.sign(options.signingSecret, {
      key,
      expiresAt: yield* expiry(link.expiresInSeconds),
      disposition: link.disposition,
      filename: link.filename,
      contentType: link.contentType
    })
    return `${base}/files/${token}`
  })

  const serveSigned = Effect.fn("BlobStore.serveSigned")(function*(token: string, rangeHeader?: string | undefined) {
    const now = yield* nowSeconds
    const claims = yield* SignedLink.verify(options.signingSecret, token, now)
    const head = yield* store.head(claims.key)
    if (Option.isNone(head)) return yield* new BlobNotFound({ key: claims.key })
    const size = head.value.size
    const headers = {
      "content-disposition": ContentDisposition.format(claims.disposition, claims.filename),
      "accept-ranges": "bytes",
      // Customers' files are served from the gateway's own origin: never let one run as a page.
      "x-content-type-options": "nosniff",
      "content-security-policy": "sandbox",
      "cache-control": `private, max-age=${Math.max(0, claims.expiresAt - now)}`
    }
    const contentType = claims.contentType ?? head.value.contentType
    const range = ByteRanges.parse(rangeHeader, size)
    switch (range._tag) {
      case "Whole":
        return HttpServerResponse.stream(store.get(claims.key), { contentType, contentLength: size, headers })
      case "Unsatisfiable":
        return HttpServerResponse.empty({ status: 416, headers: { ...headers, "content-range": `bytes */${size}` } })
      case "Part":
        return HttpServerResponse.stream(store.get(claims.key, range), {
          status: 206,
          contentType,
          contentLength: range.end - range.start + 1,
          headers: { ...headers, "content-range": `bytes ${range.start}-${range.end}/${size}` }
        })
    }
  })

  return { signedUrl, serveSigned } as const
}
