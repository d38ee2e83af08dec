/**
 * Sending from a number: the limits decide, the message is recorded with its Idempotency-Key
 * before it reaches the network, then handed to the session; the network's refusal fails it and
 * gives its place in the limits back.
 */
import { type ApiError, Capacity, InvalidParam, NotConnected, NumberPaused, type Quota, SendFailed, StorageUnavailable } from "@wagate/domain/ApiError"
import type { MessageMedia, MessageSource, MessageType } from "@wagate/domain/Message"
import { AccountEntity } from "@wagate/entities/AccountEntity"
import type { SendContent, SendPayload } from "@wagate/entities/NumberEntity"
import { type BlobNotFound, BlobStore, type BlobStoreError } from "@wagate/media/BlobStore"
import { MediaFetcher } from "@wagate/media/MediaFetcher"
import { Conversations } from "@wagate/store/Conversations"
import { NumberStates } from "@wagate/store/NumberStates"
import { chatIdOf, isLid as isLidAddress } from "@wagate/store/OutgoingMessages"
import { DriverUnavailable, type OutgoingContent, SendRejected, type Session } from "@wagate/whatsapp/WhatsAppDriver"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { randomFillSync, randomUUID } from "node:crypto"
import * as DomainClock from "@wagate/domain/DomainClock"
import * as UnpaidDay from "./billing/UnpaidDay.js"
import * as BlobLeftovers from "./BlobLeftovers.js"
import * as OutgoingMedia from "./OutgoingMedia.js"
import type { NumberContext } from "./NumberContext.js"
import { NumberHooks } from "./NumberHooks.js"
import * as AntiMailing from "./policy/AntiMailing.js"
import * as SendPolicy from "./policy/SendPolicy.js"

/** How long an Idempotency-Key is remembered (docs/api-decisions.md); older keys are deleted. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

/**
 * The idempotency key as the client of a send gave it, for the refusals that name it: the REST
 * API's `Idempotency-Key` header, or the MCP tool's `idempotency_key` argument.
 */
export const idempotencyKeyName = (source: MessageSource) => source === "mcp" ? "idempotency_key" : "Idempotency-Key"

/** An attachment slot is released by then even if its runner is lost. */
const ATTACHMENT_LEASE_MS = 2 * 60 * 1000

/**
 * Random bytes for message ids, drawn from the system's generator a pool at a time: a
 * `randomBytes` call of its own costs about 8 µs here, a pooled id 0.3 µs.
 */
const idPool = Buffer.alloc(9 * 512)
let idPoolOffset = idPool.length

/** Network ids in the shape WhatsApp clients use, chosen before sending. */
export const newWaMessageId = () => {
  if (idPoolOffset === idPool.length) {
    randomFillSync(idPool)
    idPoolOffset = 0
  }
  const id = idPool.toString("hex", idPoolOffset, idPoolOffset + 9).toUpperCase()
  idPoolOffset += 9
  return `3EB0${id}`
}

/** The same error with the number's allowance attached, for the X-RateLimit-* headers. */
const withQuota = <E extends ApiError>(error: E, quota: Quota): E =>
  new (error.constructor as new(props: object) => E)({ error: error.error, retryAfter: error.retryAfter, quota })

const textOf = (content: SendContent): string =>
  content._tag === "text" ? content.text : content._tag === "voice" ? "" : content.caption ?? ""

const typeOf = (content: SendContent): MessageType => content._tag

const mediaKind = (content: Exclude<SendContent, { _tag: "text" }>): MessageMedia["kind"] =>
  content._tag === "image" ? "photo" : content._tag

interface Prepared {
  /** The message's network id, chosen first: a stored attachment's key names it. */
  readonly waMessageId: string
  readonly outgoing: OutgoingContent
  readonly media: MessageMedia | null
  /** The attachment as stored before the send. */
  readonly stored: { readonly key: string; readonly size: number } | null
}

interface Recorded {
  readonly messageId: number
  readonly waMessageId: string
  readonly at: Date
  readonly day: string
  readonly now: number
  readonly firstContact: boolean
  readonly quota: () => Quota
}

export const make = (ctx: NumberContext, session: Session) =>
  Effect.gen(function*() {
    const { counters, number, numberId } = ctx
    const states = yield* NumberStates
    const conversations = yield* Conversations
    const fetcher = yield* MediaFetcher
    const blobs = yield* BlobStore
    const accountClient = yield* AccountEntity.client

    const settleUnpaidDay = yield* UnpaidDay.make(ctx)
    const keepFile = yield* OutgoingMedia.make

    // An upload that failed may still land, with no file row to count or remove it.
    const { leaveBehind, remove } = yield* BlobLeftovers.make

    /**
     * The number's allowance now, for a refusal decided outside its section. The trust index is
     * brought up to date as a send would; if it cannot be, the last one stands.
     */
    const quotaNow = Effect.gen(function*() {
      const now = yield* DomainClock.now
      yield* Effect.ignore(counters.refreshTrust(now))
      return counters.quotaAt(now, counters.limitsAt(now).messagesPerDay, counters.today(now).messages)
    })

    /** Holds one of the account's two attachment slots around `use`. */
    const withAttachmentSlot = <A, E, R>(use: Effect.Effect<A, E, R>) =>
      Effect.gen(function*() {
        const lease = randomUUID()
        const account = accountClient(String(number.accountId))
        yield* account.AttachmentStart({ lease, ttlMs: ATTACHMENT_LEASE_MS }).pipe(
          Effect.catchTags({
            // Like every 429 of a send, with the X-RateLimit-* headers (docs/limits.md).
            AttachmentsBusy: (busy) => Effect.flatMap(quotaNow, (quota) => Effect.fail(withQuota(busy, quota))),
            MailboxFull: () => new Capacity({ retryAfter: 5 }),
            AlreadyProcessingMessage: () => new Capacity({ retryAfter: 5 }),
            PersistenceError: () => new Capacity({ retryAfter: 5 })
          })
        )
        return yield* use.pipe(Effect.ensuring(Effect.ignore(account.AttachmentEnd({ lease }))))
      })

    const toOutgoing = Effect.fnUntraced(function*(content: SendContent) {
      const waMessageId = newWaMessageId()
      switch (content._tag) {
        case "text":
          return { waMessageId, outgoing: { kind: "text", text: content.text } as OutgoingContent, media: null, stored: null } as Prepared
        case "image":
        case "video":
        case "voice":
        case "document": {
          // From the URL straight into the blob store, a chunk at a time; the network is handed
          // the file from there, so it is never whole in memory.
          const key = OutgoingMedia.sentKey(number.accountId, numberId, waMessageId)
          const { file, size } = yield* Effect.scoped(Effect.gen(function*() {
            const file = yield* fetcher.fetch(content.url, content._tag)
            // The length the server announced, when it did: a store can then take the file in one piece.
            const put = yield* blobs.put(key, file.body, {
              contentType: file.mimeType,
              contentLength: file.announcedSize ?? undefined
            }).pipe(
              Effect.catchTag("BlobStoreError", (error) =>
                Effect.gen(function*() {
                  yield* Effect.logWarning("storing an attachment before its send failed", error)
                  yield* leaveBehind(key)
                  return yield* new StorageUnavailable({
                    error: "The file store is unavailable; the attachment cannot be sent now",
                    retryAfter: 30
                  })
                }))
            )
            return { file, size: put.size }
          }))
          const caption = content._tag === "voice" ? undefined : content.caption
          const filename = content._tag === "document"
            ? content.filename ?? file.filename ?? "file"
            : file.filename
          const media: MessageMedia = {
            kind: mediaKind(content),
            mime_type: file.mimeType,
            filename,
            size,
            caption: caption ?? null,
            deleted: false
          }
          const unreadable = (e: BlobNotFound | BlobStoreError) =>
            e._tag === "BlobNotFound"
              ? new SendRejected({ reason: "the attachment is no longer stored" })
              : new DriverUnavailable({ reason: "the attachment could not be read from the file store" })
          const bytes = {
            mimeType: file.mimeType,
            size,
            open: Effect.map(
              Effect.mapError(blobs.read(key), unreadable),
              (body) => ({ readable: body.readable, failure: (cause: unknown) => unreadable(body.failure(cause)) })
            )
          }
          const outgoing: OutgoingContent = content._tag === "document"
            ? { kind: "document", media: bytes, filename: filename ?? "file", caption }
            : content._tag === "voice"
            ? { kind: "voice", media: bytes }
            : { kind: content._tag, media: bytes, caption }
          return { waMessageId, outgoing, media, stored: { key, size } } as Prepared
        }
      }
    })

    /**
     * The answer kept for the request's Idempotency-Key: checked inside the number's section,
     * before the limits, so a retry that waited for its first request gets that request's answer
     * (never a 429 for a message that was sent).
     */
    const replay = Effect.fnUntraced(function*(payload: SendPayload, quota: () => Quota) {
      if (payload.idempotency === undefined) return Option.none()
      const since = new Date((yield* DomainClock.now) - IDEMPOTENCY_TTL_MS)
      // A key past its lifetime that the hourly sweep has not deleted yet is free again.
      const seen = yield* conversations.findAnswer(number.accountId, payload.idempotency.key, since)
      if (Option.isNone(seen)) return Option.none()
      if (seen.value.requestHash !== payload.idempotency.requestHash) {
        return yield* new InvalidParam({ error: `This ${idempotencyKeyName(payload.source)} was used for another request` })
      }
      const answer = seen.value.answer
      if (answer === null) {
        return yield* new Capacity({
          error: `The first request with this ${idempotencyKeyName(payload.source)} is still in progress`,
          retryAfter: 1
        })
      }
      if (answer.status !== 200) {
        const body = answer.body as { readonly error?: string }
        return yield* new SendFailed({ error: body.error ?? "The network did not accept the message" })
      }
      const body = answer.body as { readonly id: number; readonly wa_message_id: string; readonly from: { readonly phone: string } }
      return Option.some({ messageId: body.id, waMessageId: body.wa_message_id, phone: body.from.phone, quota: quota(), replayed: true })
    })

    /**
     * The decision and the record, in the number's section. The attachment was fetched before
     * and the hand-over to the network follows after, both outside it: a slow URL or upload never
     * holds up the number's other sends, its incoming messages, acks or connection changes.
     */
    const decideAndRecord = Effect.fnUntraced(function*(payload: SendPayload, prepared: Prepared) {
      yield* (yield* NumberHooks).onSend({ text: textOf(payload.content) })
      const now = yield* DomainClock.now
      const used = counters.today(now)
      yield* counters.refreshTrust(now)
      const limits = counters.limitsAt(now)
      const quota = () => counters.quotaAt(now, limits.messagesPerDay, counters.today(now).messages)
      const replayed = yield* replay(payload, quota)
      if (Option.isSome(replayed)) return { _tag: "Replayed", sent: replayed.value } as const
      yield* settleUnpaidDay(now)
      if (number.paused) return yield* NumberPaused.because(number.pausedBy)
      if (ctx.connection.current.status !== "WORKING") {
        return yield* new NotConnected({ error: `The number is not connected (${ctx.connection.current.status})` })
      }
      const firstContact = !(yield* ctx.contacts.isKnown(payload.to))
      const text = textOf(payload.content)
      const textHash = AntiMailing.textHash(text || ("url" in payload.content ? payload.content.url : ""))
      const decision = SendPolicy.decide({
        messagesToday: used.messages,
        newContactsToday: used.newContacts,
        messagesPerDay: limits.messagesPerDay,
        // The tier's: a restriction by the network is a limit of its own there, with its own end
        // (the day's new contacts closed by it would wait for midnight, not for that end).
        newContactsPerDay: counters.tierLimitsAt(now).newContactsPerDay,
        lastSendAt: counters.history.lastSendAt,
        lastFirstContactAt: counters.history.lastFirstContactAt,
        coldBlockedUntil: number.coldBlockedUntil,
        restrictedUntil: number.restrictedUntil,
        recentFirstContacts: counters.recentFirstContactsAt(now)
      }, { firstContact, textHash }, now)
      if (decision._tag === "Refuse") {
        if (decision.coldBlockUntil !== undefined) {
          number.coldBlockedUntil = decision.coldBlockUntil
          yield* states.setColdBlock(numberId, new Date(decision.coldBlockUntil))
        }
        return yield* Effect.fail(withQuota(decision.error, quota()))
      }
      const { waMessageId } = prepared
      const at = new Date(yield* DomainClock.now)
      // The day the counters count the send on: after a clock stepped back across midnight, the
      // later day, which PostgreSQL must count it on too (a restart reloads the day from there).
      const day = used.day
      const messageId = yield* conversations.recordOutgoing({
        accountId: number.accountId,
        numberId,
        phone: number.phone,
        to: payload.to,
        type: typeOf(payload.content),
        text,
        media: prepared.media,
        waMessageId,
        source: payload.source,
        firstContact,
        textHash,
        day,
        at,
        idempotency: payload.idempotency
      }).pipe(
        // The key was recorded since the check above: by another request with this key, or by
        // this very request on the number's entity of another runner while the number moved
        // (its first attempt still in flight there). The same request waits for that answer (a
        // retry replays it); another one under the same key is refused, as above.
        Effect.catchTag("IdempotencyConflict", () =>
          Effect.zipRight(
            replay(payload, quota),
            Effect.fail(new Capacity({ error: "The first request with this Idempotency-Key is still in progress", retryAfter: 1 }))
          ))
      )
      ctx.contacts.remember(payload.to)
      counters.countSend(now, firstContact, textHash, at.getTime())
      // Not re-sent by the pending sweep while this send hands it over itself.
      ctx.inFlight.add(waMessageId)
      return { _tag: "Recorded", messageId, waMessageId, at, day, now, firstContact, quota } as const
    }, ctx.serialized)

    /** The recorded message goes to the network; a refusal fails it and gives its place back. */
    const handOver = Effect.fnUntraced(function*(payload: SendPayload, prepared: Prepared, r: Recorded) {
      const hooks = yield* NumberHooks
      yield* hooks.afterRecord({ messageId: r.messageId, text: textOf(payload.content) })
      const wait = counters.handOffDelay(yield* DomainClock.now)
      if (wait > 0) yield* Effect.sleep(wait)
      const handed = yield* Effect.either(session.send({
        waMessageId: r.waMessageId,
        to: payload.to,
        content: prepared.outgoing,
        firstContact: r.firstContact
      }))
      if (handed._tag === "Left" && handed.left._tag === "SendRejected") {
        const failure = new SendFailed({ error: `The network did not accept the message: ${handed.left.reason}` })
        if (prepared.stored !== null) yield* remove(prepared.stored.key)
        // In the number's section: no send decides on the person between the record and what
        // is remembered of them.
        yield* ctx.serialized(Effect.gen(function*() {
          yield* conversations.markRejected({
            accountId: number.accountId,
            numberId,
            messageId: r.messageId,
            waMessageId: r.waMessageId,
            to: payload.to,
            error: handed.left.reason,
            firstContact: r.firstContact,
            day: r.day,
            at: r.at,
            answer: { status: failure.status, body: { error: failure.error, code: failure.code } }
          })
          counters.uncountSend(r.day, r.at.getTime(), r.firstContact)
          // The person may be a new contact again (also after a reply sent while their first
          // message was on its way, both refused): PostgreSQL tells.
          ctx.contacts.forget(payload.to)
        }))
        return yield* failure
      }
      // Unavailable: the message stays pending and goes out when the connection is back.
      if (handed._tag === "Right") {
        yield* conversations.applyAck({ numberId, waMessageId: r.waMessageId, ack: "sent", at: r.at })
      }
      if (prepared.media !== null && prepared.stored !== null) {
        // The chat the message is in now: WhatsApp may have named the phone by other digits
        // during the send (`PhoneMapped`), and the message moved to that phone's chat.
        const to = isLidAddress(payload.to) ? payload.to : yield* ctx.contacts.canonical(payload.to)
        yield* keepFile({
          messageId: r.messageId,
          accountId: number.accountId,
          numberId,
          chatId: chatIdOf(to),
          media: prepared.media,
          blobKey: prepared.stored.key,
          size: prepared.stored.size,
          at: r.at
        })
      }
      return { messageId: r.messageId, waMessageId: r.waMessageId, phone: number.phone, quota: r.quota(), replayed: false }
    }, (handing, _payload, _prepared, r) => Effect.ensuring(handing, Effect.sync(() => ctx.inFlight.delete(r.waMessageId))))

    /**
     * A `<lid>@lid` whose phone the number learned goes to the phone (its chats were merged), and
     * so do digits WhatsApp knows by another form of the phone (an alias, see `PhoneMapped`).
     */
    const resolve = (payload: SendPayload) =>
      isLidAddress(payload.to)
        ? Effect.map(conversations.phoneOfLid(numberId, payload.to), Option.match({
          onNone: () => payload,
          onSome: (phone) => ({ ...payload, to: phone })
        }))
        : Effect.map(ctx.contacts.canonical(payload.to), (to) => to === payload.to ? payload : { ...payload, to })

    // A text send's steps are generator functions made once, as the entity starts. One made on
    // each call (`(...) => Effect.gen(function*() {...})`) gets a map of its own in the old
    // generation, which keeps the call's whole scope through young collections
    // (docs/performance.md, sixteenth round).
    const deliver = Effect.fnUntraced(function*(payload: SendPayload) {
      const prepared = yield* toOutgoing(payload.content)
      // A stored attachment whose message was not recorded (refused, a replay) is removed.
      const discard = prepared.stored === null ? Effect.void : remove(prepared.stored.key)
      const decided = yield* decideAndRecord(payload, prepared).pipe(Effect.onError(() => discard))
      if (decided._tag === "Replayed") {
        yield* discard
        return decided.sent
      }
      return yield* handOver(payload, prepared, decided)
    })

    const send = (given: SendPayload) =>
      Effect.flatMap(
        resolve(given),
        (payload) => payload.content._tag === "text" ? deliver(payload) : withAttachmentSlot(deliver(payload))
      )

    return send
  })
