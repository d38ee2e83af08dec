/**
 * The behaviour of a linked number's entity: it owns the number's session with the network, its
 * limits, trust index and daily counters. Its state is rebuilt from PostgreSQL when it starts,
 * so an entity restarted or moved to another runner enforces exactly the same limits.
 *
 * Everything that changes the number's state (sends, checks, the network's events) runs one at a
 * time; reads (limits, connection) do not wait for them.
 */
import * as Entity from "@effect/cluster/Entity"
import type { Sharding } from "@effect/cluster/Sharding"
import * as Almaty from "@wagate/domain/Almaty"
import {
  type ApiError,
  Capacity,
  DailyLimit,
  InvalidParam,
  NotConnected,
  NumberPaused,
  type Quota,
  RateLimited,
  SendFailed
} from "@wagate/domain/ApiError"
import type { Limits } from "@wagate/domain/Limits"
import type { MessageMedia, MessageType } from "@wagate/domain/Message"
import { AccountEntity } from "@wagate/entities/AccountEntity"
import { type ConnectionState, NumberEntity, type SendContent, type SendPayload } from "@wagate/entities/NumberEntity"
import type { BlobStore } from "@wagate/media/BlobStore"
import { MediaFetcher } from "@wagate/media/MediaFetcher"
import { Conversations } from "@wagate/store/Conversations"
import { NumberStates, type Usage } from "@wagate/store/NumberStates"
import type { Mutable } from "effect/Types"
import {
  type DriverEvent,
  type OutgoingContent,
  type Session,
  WhatsAppDriver
} from "@wagate/whatsapp/WhatsAppDriver"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as DomainClock from "./DomainClock.js"
import * as IncomingMedia from "./IncomingMedia.js"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { randomBytes, randomUUID } from "node:crypto"
import * as AntiMailing from "./policy/AntiMailing.js"
import * as SendPolicy from "./policy/SendPolicy.js"
import * as Tiers from "./policy/Tiers.js"
import * as TrustIndex from "./policy/TrustIndex.js"

/** The trust index is recomputed at most this often. */
const TRUST_REFRESH_MS = 5 * 60 * 1000
/** An attachment slot is released by then even if its runner is lost. */
const ATTACHMENT_LEASE_MS = 2 * 60 * 1000
const CHECK_INTERVAL_MS = 1000

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

export const NumberLive = NumberEntity.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    const numberId = Number(address.entityId)
    const states = yield* NumberStates
    const conversations = yield* Conversations
    const driver = yield* WhatsAppDriver
    const fetcher = yield* MediaFetcher
    const accountClient = yield* AccountEntity.client

    const found = yield* states.snapshot(numberId)
    if (Option.isNone(found) || found.value.deleted) {
      // Not a number (or no longer one): nothing to connect; every call says so.
      const gone = new NotConnected({ error: "No such number" })
      const none: ConnectionState = { status: "none", qr: null, pairingCode: null, reason: null }
      return NumberEntity.of({
        Send: () => Effect.fail(gone),
        Limits: () => Effect.die(gone),
        Check: () => Effect.fail(gone),
        Connection: () => Effect.succeed(none),
        Link: () => Effect.succeed(none),
        SetPaused: () => Effect.void,
        Wake: () => Effect.succeed(none)
      })
    }
    const number = { ...found.value }
    const start = yield* DomainClock.now
    let usage: Mutable<Usage> = { ...(yield* states.usage(numberId, start)) }
    const history = { ...(yield* states.sendHistory(numberId, start)) }
    let recentFirstContacts = [...history.recentFirstContacts]
    let trust = { rating: 0, enoughData: false, at: Number.NEGATIVE_INFINITY }
    let lastCheckAt: number | null = null
    /**
     * People this number has talked with. The entity is the only writer of its contacts, so once
     * known a phone stays known; unknown phones are looked up in PostgreSQL.
     */
    const knownContacts = new Set<string>()
    const isKnown = (phone: string) =>
      knownContacts.has(phone) ? Effect.succeed(true) : Effect.map(conversations.contact(numberId, phone), (found) => {
        if (Option.isSome(found)) remember(phone)
        return Option.isSome(found)
      })
    const remember = (phone: string) => {
      if (knownContacts.size >= 100_000) knownContacts.clear()
      knownContacts.add(phone)
    }
    let connection: ConnectionState = {
      status: number.linked ? "STARTING" : number.status,
      qr: null,
      pairingCode: null,
      reason: null
    }

    // Files of incoming messages: a few downloads at a time, in the entity's scope. Those pending
    // from an earlier run died with it.
    const mediaSettings = yield* IncomingMedia.IncomingMediaSettings
    const downloads = yield* Effect.makeSemaphore(Math.max(1, mediaSettings.concurrency))
    const abandoned = yield* conversations.abandonPendingMedia(numberId, IncomingMedia.INTERRUPTED, new Date(start))
    if (abandoned > 0) yield* Effect.logWarning(`${abandoned} incoming files of number ${numberId} were not stored`)

    // Event handling runs in the session's fibers: give it the entity's scope and address.
    const entityContext = yield* Effect.context<
      Sharding | Entity.CurrentAddress | Scope.Scope | BlobStore | Conversations
    >()
    const mutex = yield* Effect.makeSemaphore(1)
    const serialized = mutex.withPermits(1)

    const today = (now: number) => {
      if (Almaty.dateOf(now) !== usage.day) usage = { day: Almaty.dateOf(now), messages: 0, newContacts: 0, checks: 0 }
      return usage
    }

    const refreshTrust = (now: number) =>
      now - trust.at < TRUST_REFRESH_MS ? Effect.void : Effect.gen(function*() {
        const inputs = yield* states.trustInputs(numberId, now, number.connectedAt)
        const rating = TrustIndex.trustIndex(inputs)
        if (rating !== trust.rating || trust.at === Number.NEGATIVE_INFINITY) yield* states.setRating(numberId, rating)
        trust = { rating, enoughData: TrustIndex.enoughData(inputs), at: now }
      })

    const limitsAt = (now: number) => {
      const daily = Tiers.dailyLimits({
        rating: trust.rating,
        enoughData: trust.enoughData,
        warmup: Tiers.inWarmup(number.connectedAt, now)
      })
      // A restriction by the network closes first messages to new people while it lasts.
      const restricted = number.restrictedUntil !== null && number.restrictedUntil > now
      return restricted ? { ...daily, newContactsPerDay: 0 } : daily
    }

    const quotaAt = (now: number, limit: number, used: number): Quota => ({
      limit,
      remaining: Math.max(0, limit - used),
      reset: Math.floor(Almaty.nextMidnight(now) / 1000)
    })

    // The network's events

    /** Callers of Link waiting for the connection to change. */
    let changed = yield* Deferred.make<void>()

    const setConnection = (next: ConnectionState) =>
      Effect.gen(function*() {
        const previous = connection
        if (previous.status !== next.status || previous.reason !== next.reason) {
          // Persist before publishing, so a reader never sees a status the database lacks.
          yield* states.setStatus({
            numberId,
            accountId: number.accountId,
            phone: number.phone,
            previous: previous.status,
            status: next.status,
            reason: next.reason,
            at: new Date(yield* DomainClock.now)
          })
        }
        connection = next
        yield* Deferred.succeed(changed, undefined)
        changed = yield* Deferred.make<void>()
        if (previous.status === next.status) return
        const at = yield* DomainClock.now
        if (next.status === "WORKING") {
          number.linked = true
          number.connectedAt ??= at
          // Stay up when idle, and come back on whichever runner owns the shard after a move.
          yield* Entity.keepAlive(true)
          yield* Effect.forkScoped(serialized(resendPending))
        } else if (next.status === "STOPPED") {
          number.linked = false
          yield* Entity.keepAlive(false)
        }
      })

    const onEvent = (event: DriverEvent): Effect.Effect<void> =>
      serialized(Effect.gen(function*() {
        switch (event._tag) {
          case "Connection":
            return yield* setConnection({
              status: event.status,
              qr: event.qr ?? null,
              pairingCode: event.pairingCode ?? null,
              reason: event.reason ?? null
            })
          case "Restricted": {
            // No end given: assume WhatsApp's usual day and lift it then.
            const until = event.until ?? (yield* DomainClock.now) + 24 * 60 * 60 * 1000
            number.restrictedUntil = until
            return yield* states.setRestricted(numberId, new Date(until), event.reason)
          }
          case "Ack":
            return yield* conversations.applyAck({
              numberId,
              waMessageId: event.waMessageId,
              ack: event.ack,
              error: event.error,
              at: new Date(yield* DomainClock.now)
            })
          case "Incoming": {
            const m = event.message
            if (!m.isGroup) remember(m.peer)
            const described = m.media === null ? null : IncomingMedia.describe(m.type, m.text, m.media)
            const recorded = yield* conversations.recordIncoming({
              accountId: number.accountId,
              numberId,
              waMessageId: m.waMessageId,
              fromMe: m.fromMe,
              chatId: m.chatId,
              peer: m.peer,
              peerLid: m.peerLid,
              name: m.name,
              isGroup: m.isGroup,
              groupSubject: m.groupSubject,
              author: m.author,
              type: m.type,
              text: m.text,
              at: new Date(m.timestamp),
              // Recorded now, the file follows: the next event never waits for a download.
              media: described,
              mediaPending: described !== null,
              mediaSkipped: false,
              mediaSkipReason: null
            })
            // A replay (None) is a message stored before, with its file already settled.
            if (m.media !== null && described !== null && Option.isSome(recorded)) {
              yield* Effect.forkScoped(downloads.withPermits(1)(IncomingMedia.download({
                messageId: recorded.value,
                accountId: number.accountId,
                numberId,
                described,
                media: m.media,
                maxBytes: mediaSettings.maxBytes
              })))
            }
            return
          }
        }
      })).pipe(
        Effect.catchAllCause((cause) => Effect.logError("number event failed", cause)),
        Effect.provide(entityContext)
      )

    const session: Session = yield* driver.open({ id: numberId, phone: number.phone, linked: number.linked }, onEvent)
    if (number.linked) yield* Entity.keepAlive(true)

    /** Text messages recorded before a crash but never handed to the network go out now. */
    const resendPending = Effect.gen(function*() {
      if (connection.status !== "WORKING") return
      for (const p of yield* conversations.pending(numberId)) {
        const at = new Date(yield* DomainClock.now)
        if (p.type !== "text") {
          yield* conversations.markRejected({
            accountId: number.accountId,
            numberId,
            messageId: p.id,
            waMessageId: p.wa_message_id,
            to: p.peer,
            error: "the attachment was lost in a restart before it was sent",
            firstContact: false,
            day: Almaty.dateOf(at.getTime()),
            at
          })
          continue
        }
        const sent = yield* Effect.either(
          session.send({ waMessageId: p.wa_message_id, to: p.peer, content: { kind: "text", text: p.text } })
        )
        if (sent._tag === "Right") {
          yield* conversations.applyAck({ numberId, waMessageId: p.wa_message_id, ack: "sent", at })
        } else if (sent.left._tag === "DriverUnavailable") {
          return
        }
      }
    }).pipe(Effect.catchAllCause((cause) => Effect.logError("re-sending pending messages failed", cause)))

    // Sending

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
        const used = today(now)
        yield* refreshTrust(now)
        const limits = limitsAt(now)
        const quota = () => quotaAt(now, limits.messagesPerDay, usage.messages)
        if (number.paused) return yield* new NumberPaused()
        if (connection.status !== "WORKING") {
          return yield* new NotConnected({ error: `The number is not connected (${connection.status})` })
        }
        const firstContact = !(yield* isKnown(payload.to))
        const text = textOf(payload.content)
        const textHash = AntiMailing.textHash(text || ("url" in payload.content ? payload.content.url : ""))
        recentFirstContacts = AntiMailing.prune(recentFirstContacts, now)
        const decision = SendPolicy.decide({
          messagesToday: used.messages,
          newContactsToday: used.newContacts,
          messagesPerDay: limits.messagesPerDay,
          newContactsPerDay: limits.newContactsPerDay,
          lastSendAt: history.lastSendAt,
          lastFirstContactAt: history.lastFirstContactAt,
          coldBlockedUntil: number.coldBlockedUntil,
          restrictedUntil: number.restrictedUntil,
          recentFirstContacts
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
          remember(payload.to)
          used.messages++
          if (firstContact) {
            used.newContacts++
            history.lastFirstContactAt = now
            recentFirstContacts.push({ at: now, textHash })
          }
          history.lastSendAt = now
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
            used.messages = Math.max(0, used.messages - 1)
            if (firstContact) used.newContacts = Math.max(0, used.newContacts - 1)
            const failure = new SendFailed({ error: `The network did not accept the message: ${handed.left.reason}` })
            yield* storeAnswer(failure.status, { error: failure.error, code: failure.code })
            return yield* failure
          }
          // Unavailable: the message stays pending and goes out when the connection is back.
          if (handed._tag === "Right") {
            yield* conversations.applyAck({ numberId, waMessageId, ack: "sent", at })
          }
          yield* storeAnswer(200, { ok: true, id: messageId, wa_message_id: waMessageId, from: { id: numberId, phone: number.phone } })
          return { messageId, waMessageId, phone: number.phone, quota: quota() }
        })
        return yield* (payload.content._tag === "text" ? deliver : withAttachmentSlot(deliver))
      })

    const check = (phone: string) =>
      Effect.gen(function*() {
        const now = yield* DomainClock.now
        const used = today(now)
        const quota = () => quotaAt(now, Tiers.CHECKS_PER_DAY, usage.checks)
        if (number.paused) return yield* new NumberPaused()
        if (connection.status !== "WORKING") return yield* new NotConnected()
        if (used.checks >= Tiers.CHECKS_PER_DAY) {
          return yield* new DailyLimit({
            error: `Daily limit of ${Tiers.CHECKS_PER_DAY} contact checks reached`,
            retryAfter: Almaty.secondsToMidnight(now),
            quota: quota()
          })
        }
        if (lastCheckAt !== null && now - lastCheckAt < CHECK_INTERVAL_MS) {
          return yield* new RateLimited({ error: "One contact check a second per number", retryAfter: 1, quota: quota() })
        }
        const result = yield* session.exists(phone).pipe(
          Effect.catchTag("DriverUnavailable", (e) => new Capacity({ error: `Check unavailable: ${e.reason}`, retryAfter: 5 }))
        )
        lastCheckAt = now
        used.checks++
        yield* states.countCheck(numberId, used.day)
        return { exists: result.exists, chatId: result.chatId, quota: quota() }
      })

    const limits = Effect.gen(function*() {
      const now = yield* DomainClock.now
      const used = today(now)
      yield* refreshTrust(now)
      const daily = limitsAt(now)
      return {
        rating: trust.rating,
        tier: daily.tier.tier,
        tier_title: daily.tier.title,
        enough_data: trust.enoughData,
        limits: {
          messages_per_day: daily.messagesPerDay,
          new_contacts_per_day: daily.newContactsPerDay,
          checks_per_day: Tiers.CHECKS_PER_DAY,
          messages_per_second: Tiers.MESSAGES_PER_SECOND
        },
        used: { messages: used.messages, new_contacts: used.newContacts, checks: used.checks },
        cold_blocked_until: number.coldBlockedUntil !== null && number.coldBlockedUntil > now
          ? new Date(number.coldBlockedUntil).toISOString()
          : null,
        warmup: Tiers.inWarmup(number.connectedAt, now)
      } satisfies Limits
    })

    return NumberEntity.of({
      Send: ({ payload }) => serialized(send(payload)),
      Limits: () => limits,
      Check: ({ payload }) => serialized(check(payload.phone)),
      Connection: () => Effect.sync(() => connection),
      Link: ({ payload }) =>
        Effect.gen(function*() {
          yield* session.link({ kind: payload.method }).pipe(
            Effect.catchTag("DriverUnavailable", (e) => new Capacity({ error: `Linking unavailable: ${e.reason}` }))
          )
          // Answer with something to show: the QR, the code, or the outcome (the network is quick).
          const shown = () => ["SCAN_QR_CODE", "WORKING", "FAILED", "STOPPED"].includes(connection.status)
          yield* Effect.whileLoop({
            while: () => !shown(),
            body: () => Deferred.await(changed),
            step: () => {}
          }).pipe(Effect.timeout("5 seconds"), Effect.ignore)
          return connection
        }),
      SetPaused: ({ payload }) =>
        serialized(Effect.gen(function*() {
          number.paused = payload.paused
          yield* states.setPaused(numberId, payload.paused)
        })),
      Wake: () => Effect.sync(() => connection)
    })
  }),
  { concurrency: "unbounded", maxIdleTime: "5 minutes" }
)
