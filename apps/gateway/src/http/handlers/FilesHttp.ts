/**
 * Serves the gateway's own signed links: the file streamed with its type and disposition, byte
 * ranges honoured. A tampered or malformed link answers 403 `link_invalid`, an expired one 410
 * `link_expired`, a file gone since 404 `not_found`, a store that fails 503.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { BlobStore } from "@wagate/media/BlobStore"
import * as Effect from "effect/Effect"
import { GatewayApi } from "../GatewayApi.js"

const refusal = (status: number, code: string, error: string) =>
  HttpServerResponse.unsafeJson({ error, code }, { status, headers: { "cache-control": "no-store" } })

export const FilesHttp = HttpApiBuilder.group(GatewayApi, "files", (handlers) =>
  Effect.gen(function*() {
    const blobs = yield* BlobStore
    return handlers.handleRaw("serve", ({ path }) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        return yield* blobs.serveSigned(path.token, request.headers["range"]).pipe(
          Effect.catchTags({
            BlobLinkInvalid: () => Effect.succeed(refusal(403, "link_invalid", "This link is not valid")),
            BlobLinkExpired: () => Effect.succeed(refusal(410, "link_expired", "This link has expired; ask for a new one")),
            BlobNotFound: () => Effect.succeed(refusal(404, "not_found", "The file is no longer available")),
            BlobStoreError: (error) =>
              Effect.as(
                Effect.logWarning("serving a signed link failed", error),
                refusal(503, "storage_unavailable", "Storage is unavailable")
              )
          })
        )
      }))
  }))
