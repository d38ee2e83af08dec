/**
 * Attachments sent through POST /messages/send are kept like incoming files: in the blob store
 * under the message, counted in the account's storage. The file went from its URL into the store
 * before the send (the network is handed it from there); here it is counted under the message,
 * or removed when the account's ceiling does not keep it (the message then says why).
 */
import type { MessageMedia } from "@wagate/domain/Message"
import * as StoragePolicy from "@wagate/media/StoragePolicy"
import { MediaFiles } from "@wagate/store/MediaFiles"
import * as Effect from "effect/Effect"
import * as DomainClock from "@wagate/domain/DomainClock"
import * as BlobLeftovers from "./BlobLeftovers.js"

/**
 * Where a sent file is stored: the file is stored before the message is recorded, so not under
 * the message id as incoming files are, but under its network id, chosen first. A pending message
 * thus names its file even when its runner died before the file was counted (`media_files.blob_key`
 * names it once it is).
 */
export const sentKey = (accountId: number, numberId: number, waMessageId: string) =>
  `media/${accountId}/${numberId}/sent-${waMessageId}`

export const make = Effect.gen(function*() {
  const files = yield* MediaFiles
  const leftovers = yield* BlobLeftovers.make

  return (r: {
    readonly messageId: number
    readonly accountId: number
    readonly numberId: number
    readonly chatId: string
    readonly media: MessageMedia
    /** Where the file was stored before the send, and its size. */
    readonly blobKey: string
    readonly size: number
    readonly at: Date
  }) =>
    Effect.gen(function*() {
      const skip = (reason: string) =>
        Effect.flatMap(DomainClock.now, (now) => files.skip(r.messageId, reason, new Date(now)))
      const counted = yield* files.add({
        messageId: r.messageId,
        accountId: r.accountId,
        numberId: r.numberId,
        chatId: r.chatId,
        kind: r.media.kind,
        mimeType: r.media.mime_type,
        filename: r.media.filename,
        size: r.size,
        blobKey: r.blobKey,
        at: r.at
      })
      // The account's ceiling is the one storage rule for sent files: checked as the file is counted.
      if (counted._tag === "OverCeiling") {
        yield* leftovers.remove(r.blobKey)
        yield* skip(StoragePolicy.ceilingReason(counted.ceilingBytes))
      }
    }).pipe(Effect.catchAllCause((cause) => Effect.logError("keeping a sent file failed", cause)))
})
