/**
 * Sending from a number: the limits decide, the message is recorded with its Idempotency-Key
 * before it reaches the network, then handed to the session; the network's refusal fails it and
 * gives its place in the limits back.
 */
import * as Almaty from "@wagate/domain/Almaty"
import { type ApiError, Capacity, InvalidParam, NotConnected, NumberPaused, type Quota, SendFailed } from "@wagate/domain/ApiError"
import type { MessageMedia, MessageType } from "@wagate/domain/Message"
import { AccountEntity } from "@wagate/entities/AccountEntity"
import type { SendContent, SendPayload } from "@wagate/entities/NumberEntity"
import { MediaFetcher } from "@wagate/media/MediaFetcher"
import { Conversations } from "@wagate/store/Conversations"
import { NumberStates } from "@wagate/store/NumberStates"
import type { OutgoingContent, Session } from "@wagate/whatsapp/WhatsAppDriver"
import * as Effect from "effect/Effect"
import { randomBytes, randomUUID } from "node:crypto"
import * as DomainClock from "./DomainClock.js"
import * as OutgoingMedia from "./OutgoingMedia.js"
import type { NumberContext } from "./NumberContext.js"
import * as AntiMailing from "./policy/AntiMailing.js"
import * as SendPolicy from "./policy/SendPolicy.js"

/** An attachment slot is released by then even if its runner is lost. */
const ATTACHMENT_LEASE_MS = 2 * 60 * 1000

/** Network ids in the shape WhatsApp clients use, chosen before sending. */
export const newWaMessageId = () => `3EB0${randomBytes(9).toString("hex").toUpperCase()}`

/** The same error with the number's allowance attached, for the X-RateLimit-* headers. */
const withQuota = <E extends ApiError>(error: E, quota: Quota): E =>
  new (error.constructor as new(props: object) => E)({ error: error.error, retryAfter: error.retryAfter, quota })

const textOf = (content: SendContent): string =>
  content._tag === "text" ? content.text : content._tag === "voice" ? "" : content.caption ?? ""

const typeOf = (content: SendContent): MessageType => content._tag

const mediaKind = (content: Exclude<SendContent, { _tag: "text" }>): MessageMedia["kind"] =>
  content._tag === "image" ? "photo" : content._tag

export const make = (ctx: NumberContext, session: Session) =>
  Effect.gen(function*() {
    const { counters, number, numberId } = ctx
    const states = yield* NumberStates
    const conversations = yield* Conversations
    const fetcher = yield* MediaFetcher
    const accountClient = yield* AccountEntity.client
    const keepFile = yield* OutgoingMedia.make

    /** Holds one of the account's two attachment slots around `use`. */
    const withAttachmentSlot = <A, E, R>(use: Effect.Effect<A, E, R>) =>
      Effect.gen(function*() {
        const lease = randomUUID()
        const account = accountClient(String(number.accountId))
        yield* account.AttachmentStart({ lease, ttlMs: ATTACHMENT_LEASE_MS }).pipe(
          Effect.catchTags({
            MailboxFull: () => new Capacity({ retryAfter: 5 }),
            AlreadyProcessingMessage: () => new Capacity({ retryAfter: 5 }),
            PersistenceError: () => new Capacity({ retryAfter: 5 })
          })
        )
        return yield* use.pipe(Effect.ensuring(Effect.ignore(account.AttachmentEnd({ lease }))))
      })

    const toOutgoing = (content: SendContent) =>
      Effect.gen(function*() {
        switch (content._tag) {
          case "text":
            return { outgoing: { kind: "text", text: content.text } as OutgoingContent, media: null }
          case "image":
          case "video":
          case "voice":
          case "document": {
            const file = yield* fetcher.fetch(content.url, content._tag)
            const caption = content._tag === "voice" ? undefined : content.caption
            const filename = content._tag === "document"
              ? content.filename ?? file.filename ?? "file"
              : file.filename
            const media: MessageMedia = {
              kind: mediaKind(content),
              mime_type: file.mimeType,
              filename,
              size: file.size,
              caption: caption ?? null,
              deleted: false
            }
            const bytes = { bytes: file.bytes, mimeType: file.mimeType }
            const outgoing: OutgoingContent = content._tag === "document"
              ? { kind: "document", media: bytes, filename: filename ?? "file", caption }
              : content._tag === "voice"
              ? { kind: "voice", media: bytes }
              : { kind: content._tag, media: bytes, caption }
            return { outgoing, media }
          }
        }
      })

    const send = (payload: SendPayload) =>
      Effect.gen(function*() {
        const now = yield* DomainClock.now
        const used = counters.today(now)
        yield* counters.refreshTrust(now)
        const limits = counters.limitsAt(now)
        const quota = () => counters.quotaAt(now, limits.messagesPerDay, counters.today(now).messages)
        if (number.paused) return yield* new NumberPaused()
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
          newContactsPerDay: limits.newContactsPerDay,
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

        const deliver = Effect.gen(function*() {
          const { media, outgoing } = yield* toOutgoing(payload.content)
          const waMessageId = newWaMessageId()
          const at = new Date(yield* DomainClock.now)
          const day = Almaty.dateOf(now)
          const messageId = yield* conversations.recordOutgoing({
            accountId: number.accountId,
            numberId,
            to: payload.to,
            type: typeOf(payload.content),
            text,
            media,
            waMessageId,
            source: payload.source,
            firstContact,
            textHash,
            day,
            at,
            idempotency: payload.idempotency
          }).pipe(
            Effect.catchTag("IdempotencyConflict", () =>
              new InvalidParam({ error: "This Idempotency-Key was used for another request" }))
          )
          ctx.contacts.remember(payload.to)
          counters.countSend(now, firstContact, textHash)
          const handed = yield* Effect.either(session.send({ waMessageId, to: payload.to, content: outgoing }))
          const storeAnswer = (status: number, body: unknown) =>
            payload.idempotency === undefined
              ? Effect.void
              : conversations.storeAnswer(number.accountId, payload.idempotency.key, { status, body })
          if (handed._tag === "Left" && handed.left._tag === "SendRejected") {
            yield* conversations.markRejected({
              accountId: number.accountId,
              numberId,
              messageId,
              waMessageId,
              to: payload.to,
              error: handed.left.reason,
              firstContact,
              day,
              at
            })
            counters.uncountSend(now, firstContact)
            const failure = new SendFailed({ error: `The network did not accept the message: ${handed.left.reason}` })
            yield* storeAnswer(failure.status, { error: failure.error, code: failure.code })
            return yield* failure
          }
          // Unavailable: the message stays pending and goes out when the connection is back.
          if (handed._tag === "Right") {
            yield* conversations.applyAck({ numberId, waMessageId, ack: "sent", at })
          }
          if (media !== null && outgoing.kind !== "text") {
            yield* keepFile({
              messageId,
              accountId: number.accountId,
              numberId,
              chatId: `${payload.to}@c.us`,
              media,
              bytes: outgoing.media.bytes,
              at
            })
          }
          yield* storeAnswer(200, { ok: true, id: messageId, wa_message_id: waMessageId, from: { id: numberId, phone: number.phone } })
          return { messageId, waMessageId, phone: number.phone, quota: quota() }
        })
        return yield* (payload.content._tag === "text" ? deliver : withAttachmentSlot(deliver))
      })

    return send
  })
