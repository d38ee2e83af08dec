/**
 * A number's session with the network and the events it reports: connection changes (persisted
 * before they are published), restrictions, acks and incoming messages, each applied in the
 * number's serialized section; and the messages recorded before a crash that still have to go
 * out once the connection is back.
 */
import * as Entity from "@effect/cluster/Entity"
import type { Sharding } from "@effect/cluster/Sharding"
import * as Almaty from "@wagate/domain/Almaty"
import type { ConnectionState } from "@wagate/entities/NumberEntity"
import type { BlobStore } from "@wagate/media/BlobStore"
import { Accounts } from "@wagate/store/Accounts"
import { Conversations } from "@wagate/store/Conversations"
import { MediaFiles } from "@wagate/store/MediaFiles"
import { NumberStates } from "@wagate/store/NumberStates"
import { type DriverEvent, type Session, WhatsAppDriver } from "@wagate/whatsapp/WhatsAppDriver"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as DomainClock from "./DomainClock.js"
import * as IncomingMedia from "./IncomingMedia.js"
import type { NumberContext } from "./NumberContext.js"

/** Opens the number's session; its events are applied from now on. */
export const open = (ctx: NumberContext) =>
  Effect.gen(function*() {
    const { number, numberId, serialized } = ctx
    const states = yield* NumberStates
    const conversations = yield* Conversations
    const driver = yield* WhatsAppDriver

    // Files of incoming messages: a few downloads at a time, in the entity's scope. Those pending
    // from an earlier run died with it.
    const mediaSettings = yield* IncomingMedia.IncomingMediaSettings
    const downloads = yield* Effect.makeSemaphore(Math.max(1, mediaSettings.concurrency))
    const abandoned = yield* conversations.abandonPendingMedia(numberId, IncomingMedia.INTERRUPTED, new Date(yield* DomainClock.now))
    if (abandoned > 0) yield* Effect.logWarning(`${abandoned} incoming files of number ${numberId} were not stored`)

    // Event handling runs in the session's fibers: give it the entity's scope and address.
    const entityContext = yield* Effect.context<
      Sharding | Entity.CurrentAddress | Scope.Scope | BlobStore | Conversations | Accounts | MediaFiles
    >()

    /** Callers of Link waiting for the connection to change. */
    let changed = yield* Deferred.make<void>()
    let session: Session | undefined

    const setConnection = (next: ConnectionState) =>
      Effect.gen(function*() {
        const previous = ctx.connection.current
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
        ctx.connection.current = next
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
          case "Unrestricted":
            number.restrictedUntil = null
            return yield* states.setRestricted(numberId, null, "WhatsApp lifted the restriction")
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
            if (!m.isGroup) ctx.contacts.remember(m.peer)
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

    /** Text messages recorded before a crash but never handed to the network go out now. */
    const resendPending = Effect.gen(function*() {
      if (ctx.connection.current.status !== "WORKING" || session === undefined) return
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

    session = yield* driver.open({ id: numberId, phone: number.phone, linked: number.linked }, onEvent)
    if (number.linked) yield* Entity.keepAlive(true)

    return {
      session,
      /** Waits for the next change of the connection. */
      nextChange: Effect.suspend(() => Deferred.await(changed))
    }
  })
