/**
 * Attachments sent through POST /messages/send are kept like incoming files: in the blob store
 * under the message, counted in the account's storage. The account's ceiling applies (a file
 * past it is sent but not kept, and the message says why); a store that fails never fails the
 * send that already reached the network.
 */
import type { MessageMedia } from "@wagate/domain/Message"
import { BlobStore } from "@wagate/media/BlobStore"
import * as StoragePolicy from "@wagate/media/StoragePolicy"
import { MediaFiles } from "@wagate/store/MediaFiles"
import * as Effect from "effect/Effect"
import * as DomainClock from "@wagate/domain/DomainClock"
import { blobKey } from "./IncomingMedia.js"

export const make = Effect.gen(function*() {
  const blobs = yield* BlobStore
  const files = yield* MediaFiles

  return (r: {
    readonly messageId: number
    readonly accountId: number
    readonly numberId: number
    readonly chatId: string
    readonly media: MessageMedia
    readonly bytes: Uint8Array
    readonly at: Date
  }) =>
    Effect.gen(function*() {
      const skip = (reason: string) =>
        Effect.flatMap(DomainClock.now, (now) => files.skip(r.messageId, reason, new Date(now)))
      const policy = yield* files.policy(r.accountId)
      const reason = StoragePolicy.skipReason(policy, {
        size: r.bytes.byteLength,
        direction: "out",
        isGroup: false,
        knownSender: true,
        chatBytesToday: 0,
        usedBytes: yield* files.usedBytes(r.accountId),
        unpaid: false
      })
      if (reason !== null) return yield* skip(reason)
      const key = blobKey(r.accountId, r.numberId, r.messageId)
      const put = yield* Effect.either(
        blobs.put(key, r.bytes, { contentType: r.media.mime_type, contentLength: r.bytes.byteLength })
      )
      if (put._tag === "Left") {
        yield* Effect.logWarning("keeping a sent file failed", put.left)
        return yield* skip("the file could not be stored: the blob store is unavailable")
      }
      yield* files.add({
        messageId: r.messageId,
        accountId: r.accountId,
        numberId: r.numberId,
        chatId: r.chatId,
        kind: r.media.kind,
        mimeType: r.media.mime_type,
        filename: r.media.filename,
        size: put.right.size,
        blobKey: key,
        at: r.at
      })
    }).pipe(Effect.catchAllCause((cause) => Effect.logError("keeping a sent file failed", cause)))
})
