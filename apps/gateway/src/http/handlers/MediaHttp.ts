/**
 * GET /media/{id} (a redirect to a signed link), DELETE /media/{id} and POST /media/delete.
 * A number key sees and deletes only its own number's files; anything it may not see is
 * `not_found`, as a wrong id is.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { WagateApi } from "@wagate/domain/Api"
import { NotFound, StorageUnavailable } from "@wagate/domain/ApiError"
import { CurrentKey } from "@wagate/domain/Auth"
import * as DomainClock from "@wagate/domain/DomainClock"
import { BlobStore } from "@wagate/media/BlobStore"
import * as MediaLinks from "@wagate/media/MediaLinks"
import { MediaFiles } from "@wagate/store/MediaFiles"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { NumberScope } from "../NumberScope.js"
import { checkRange, parseChat, parseInstant, parseOptionalInstant } from "../Params.js"
import { retainedSince } from "./Retention.js"

const fileNotFound = () => new NotFound({ error: "File not found" })

export const MediaHttp = HttpApiBuilder.group(WagateApi, "media", (handlers) =>
  Effect.gen(function*() {
    const files = yield* MediaFiles
    const blobs = yield* BlobStore
    const scope = yield* NumberScope
    // By the domain clock: the media upkeep purges a deleted file's backup by it.
    const now = Effect.map(DomainClock.now, (ms) => new Date(ms))
    const unavailable = (error: unknown) =>
      Effect.zipRight(Effect.logWarning("the blob store failed", error), Effect.fail(new StorageUnavailable()))

    return handlers
      .handle("get", ({ path, urlParams }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentKey
          const file = yield* Effect.flatten(files.find(principal.accountId, principal.numberId, path.id, yield* retainedSince)).pipe(
            Effect.mapError(fileNotFound)
          )
          const head = yield* blobs.head(file.blobKey).pipe(Effect.catchAll(unavailable))
          if (Option.isNone(head)) {
            // Counted but not in the store: the store lost it, or is not the one it was written to.
            const health = yield* blobs.health
            if (health.status === "down") return yield* new StorageUnavailable()
            yield* Effect.logWarning(`file of message ${file.messageId} is missing from the blob store (${file.blobKey})`)
            return yield* fileNotFound()
          }
          const url = yield* blobs.signedUrl(file.blobKey, {
            expiresInSeconds: MediaLinks.LINK_SECONDS,
            ...MediaLinks.presentation(file, urlParams.download === "1")
          }).pipe(Effect.catchAll(unavailable))
          return HttpServerResponse.redirect(url, { status: 302, headers: { "cache-control": "no-store" } })
        }))
      .handle("delete", ({ path }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentKey
          const result = yield* files.deleteOne(principal.accountId, principal.numberId, path.id, yield* now)
          if (result.deleted === 0) return yield* fileNotFound()
          return { ok: true, deleted: result.deleted, freed_bytes: result.freedBytes }
        }))
      .handle("bulkDelete", ({ payload }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentKey
          const until = yield* parseInstant(payload.until, "until")
          const since = yield* parseOptionalInstant(payload.since, "since")
          yield* checkRange(since, until)
          const number = yield* scope.reading(principal, payload.from)
          const chatId = payload.chat === undefined ? undefined : yield* parseChat(payload.chat)
          const result = yield* files.deleteMatching({
            accountId: principal.accountId,
            numberId: number?.id ?? null,
            until,
            since,
            chatId,
            kind: payload.kind,
            minSize: payload.min_size
          }, yield* now)
          return { ok: true, deleted: result.deleted, freed_bytes: result.freedBytes }
        }))
  }))
