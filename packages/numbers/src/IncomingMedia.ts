/**
 * Files that arrive with messages, kept in the blob store. The number's entity records the
 * message first, with its file `media_pending`; the file is then downloaded through the driver in
 * the background (a few at a time per number) and stored, or marked skipped with the reason. A
 * file that cannot be had never costs the message.
 */
import type { MessageMedia, MessageType } from "@wagate/domain/Message"
import * as Almaty from "@wagate/domain/Almaty"
import { AccountId } from "@wagate/domain/Ids"
import * as Pricing from "@wagate/domain/Pricing"
import * as StoragePricing from "@wagate/domain/StoragePricing"
import { BlobStore } from "@wagate/media/BlobStore"
import { isLengthMismatch } from "@wagate/media/BlobStoreError"
import * as NodeBody from "@wagate/media/NodeBody"
import * as StoragePolicy from "@wagate/media/StoragePolicy"
import { Accounts } from "@wagate/store/Accounts"
import { MediaFiles } from "@wagate/store/MediaFiles"
import { Conversations } from "@wagate/store/Conversations"
import type { IncomingMedia } from "@wagate/whatsapp/WhatsAppDriver"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as DomainClock from "@wagate/domain/DomainClock"
import * as BlobLeftovers from "./BlobLeftovers.js"

/** How incoming files are stored; the gateway sets them from its configuration. */
export interface Settings {
  /** A larger file is not downloaded (or, when its size was not announced, not kept). */
  readonly maxBytes: number
  /** Downloads running at once for one number; the rest wait their turn. */
  readonly concurrency: number
}

/** 64 MiB: WhatsApp's photos, voice notes and most videos are far smaller. */
export const DEFAULT_MAX_BYTES = 64 * 1024 * 1024
export const DEFAULT_CONCURRENCY = 2

export class IncomingMediaSettings extends Context.Reference<IncomingMediaSettings>()(
  "@wagate/numbers/IncomingMediaSettings",
  { defaultValue: (): Settings => ({ maxBytes: DEFAULT_MAX_BYTES, concurrency: DEFAULT_CONCURRENCY }) }
) {}

/** Downloads at once in the whole process, all numbers together (each holds a connection and a few buffers). */
export const DEFAULT_PROCESS_DOWNLOADS = 8

/**
 * The process-wide download slots: whatever the number of numbers on a runner, at most this
 * many incoming files are being downloaded at once; the rest wait their turn.
 */
export class IncomingDownloadSlots extends Context.Reference<IncomingDownloadSlots>()(
  "@wagate/numbers/IncomingDownloadSlots",
  { defaultValue: () => Effect.unsafeMakeSemaphore(DEFAULT_PROCESS_DOWNLOADS) }
) {}

class DownloadFailed extends Data.TaggedError("DownloadFailed")<{ readonly reason: string }> {}

class OverLimit extends Data.TaggedError("OverLimit") {}

/** Why a file pending when its number's entity started was not stored. */
export const INTERRUPTED = "the download was interrupted by a gateway restart"

/** The kind a file of this message type is stored and counted as. */
export const kindOf = (type: MessageType): MessageMedia["kind"] => {
  switch (type) {
    case "image":
      return "photo"
    case "video":
      return "video"
    case "audio":
    case "voice":
      return "voice"
    case "sticker":
      return "sticker"
    default:
      return "document"
  }
}

/** What the message shows of its file before the file is stored: everything but the size. */
export const describe = (type: MessageType, text: string, media: IncomingMedia): MessageMedia => {
  const kind = kindOf(type)
  return {
    kind,
    mime_type: media.mimeType,
    filename: media.filename,
    size: null,
    caption: kind === "photo" || kind === "video" || kind === "document" ? (text === "" ? null : text) : null,
    deleted: false
  }
}

/** Where a message's file lives in the blob store. */
export const blobKey = (accountId: number, numberId: number, messageId: number) =>
  `media/${accountId}/${numberId}/${messageId}`

const MiB = 1024 * 1024
const sizeText = (bytes: number) => bytes < MiB ? `${bytes} bytes` : `${Math.round((bytes / MiB) * 10) / 10} MB`

/**
 * Why the account's storage policy and state do not keep a file of `size` bytes for message
 * `messageId`, or null when they do.
 */
export const keepReason = (accountId: number, messageId: number, size: number) =>
  Effect.gen(function*() {
    const files = yield* MediaFiles
    const now = yield* DomainClock.now
    const facts = yield* files.keepFacts(accountId, messageId, new Date(Almaty.startOfDay(now)))
    const policy = yield* files.policy(accountId)
    // Past the included 5 GB, the file is kept when the balance covers a day of the charges with
    // the packs it needs counted. Before, it went by the days covered at the charge before the
    // file, 0 when nothing was charged (the numbers paused by the operator, the storage within
    // the allowance): the first file past 5 GB was then refused whatever the balance.
    const after = facts.usedBytes + size
    const unpaid = after > StoragePricing.INCLUDED_BYTES &&
      !(yield* Effect.map(
        Effect.flatMap(Accounts, (accounts) => accounts.funds(AccountId.make(accountId), now)),
        (funds) =>
          Pricing.coversDay({
            balanceTiyn: Pricing.kztToTiyn(funds.balance),
            activeNumbers: funds.active_numbers,
            storageDailyTiyn: StoragePricing.chargeFor(after).dailyTiyn
          })
      ))
    return StoragePolicy.skipReason(policy, { ...facts, size, unpaid })
  })

/**
 * Downloads the file of the recorded message `messageId` and stores it; on any failure the file
 * is marked skipped with the reason. Never fails; if interrupted (the entity stops), the file is
 * marked skipped too.
 */
export const download = (r: {
  readonly messageId: number
  readonly accountId: number
  readonly numberId: number
  readonly described: MessageMedia
  readonly media: IncomingMedia
  readonly maxBytes: number
}) =>
  Effect.gen(function*() {
    const conversations = yield* Conversations
    const accounts = yield* Accounts
    const blobs = yield* BlobStore
    const leftovers = yield* BlobLeftovers.make
    const skip = (reason: string) =>
      Effect.flatMap(DomainClock.now, (now) => conversations.skipIncomingMedia(r.messageId, reason, new Date(now)))
    const tooLarge = (size: number) =>
      skip(`the file is too large to store (${sizeText(size)}, the limit is ${sizeText(r.maxBytes)})`)

    const store = Effect.gen(function*() {
      if (r.media.size !== null && r.media.size > r.maxBytes) return yield* tooLarge(r.media.size)
      const before = yield* keepReason(r.accountId, r.messageId, r.media.size ?? 0)
      if (before !== null) return yield* skip(before)
      const slots = yield* IncomingDownloadSlots
      const key = blobKey(r.accountId, r.numberId, r.messageId)
      // Straight from the network into the store, a chunk at a time on Node streams; the count
      // stops the download as soon as it passes the limit, whatever size was announced.
      const putWith = (contentLength: number | undefined) =>
        Effect.scoped(Effect.flatMap(
          Effect.mapError(r.media.download, (e) => new DownloadFailed({ reason: e.reason })),
          (download) => {
            let received = 0
            const body = NodeBody.checked(
              NodeBody.make(download.readable, (cause) => new DownloadFailed({ reason: download.failure(cause).reason })),
              { chunk: (chunk) => (received += chunk.byteLength) > r.maxBytes ? new OverLimit() : undefined }
            )
            return blobs.put(key, body, { contentType: r.media.mimeType, contentLength })
          }
        ))
      // With the announced size the store takes the file as it comes (S3: one streamed PutObject,
      // no 5 MiB parts held in memory while they upload). A size that turns out wrong stores
      // nothing and costs a second download, without it.
      const upload = r.media.size === null ? putWith(undefined) : putWith(r.media.size).pipe(
        Effect.catchIf(
          (e) => e._tag === "BlobStoreError" && isLengthMismatch(e),
          () => putWith(undefined)
        )
      )
      const put = yield* slots.withPermits(1)(Effect.either(upload))
      if (put._tag === "Left") {
        switch (put.left._tag) {
          case "DownloadFailed":
            return yield* skip(`the file could not be downloaded: ${put.left.reason}`)
          case "OverLimit":
            return yield* skip(`the file is too large to store (more than the limit of ${sizeText(r.maxBytes)})`)
          default:
            yield* Effect.logWarning("storing an incoming file failed", put.left)
            // The store may still write what it was given, with no file row to count or remove it.
            yield* leftovers.leaveBehind(key)
            return yield* skip("the file could not be stored: the blob store is unavailable")
        }
      }
      // The size announced may be missing or wrong: the rules again with the real size, under
      // the account's lock as the file is counted, so files arriving at once are decided one
      // after the other, each on the usage and balance the ones counted before it left (past
      // the included 5 GB, the first may be paid for and the next not).
      const stored = yield* accounts.locked(
        AccountId.make(r.accountId),
        Effect.gen(function*() {
          const after = yield* keepReason(r.accountId, r.messageId, put.right.size)
          if (after !== null) return { _tag: "Refused", reason: after } as const
          const now = yield* DomainClock.now
          return yield* conversations.storeIncomingMedia({
            messageId: r.messageId,
            accountId: r.accountId,
            numberId: r.numberId,
            media: { ...r.described, size: put.right.size },
            blobKey: key,
            at: new Date(now),
            dayStart: new Date(Almaty.startOfDay(now))
          })
        })
      )
      // Not kept, or the message was settled meanwhile (it cannot be today, but a stray blob
      // would count nowhere): the blob goes.
      if (stored._tag !== "Counted") yield* leftovers.remove(key)
      if (stored._tag === "Refused") yield* skip(stored.reason)
      if (stored._tag === "OverChatDaily") yield* skip(StoragePolicy.chatDailyReason(stored.chatDailyMb))
      if (stored._tag === "OverCeiling") yield* skip(StoragePolicy.ceilingReason(stored.ceilingBytes))
    })
    yield* store.pipe(
      Effect.onInterrupt(() =>
        skip("the gateway stopped before the file was downloaded").pipe(Effect.catchAllCause(() => Effect.void))
      )
    )
  }).pipe(Effect.catchAllCause((cause) => Effect.logError("storing an incoming file failed", cause)))
