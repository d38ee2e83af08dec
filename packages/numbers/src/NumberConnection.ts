/**
 * A number's session with the network and the events it reports: connection changes (persisted
 * before they are published), restrictions, acks and incoming messages, each applied in the
 * number's serialized section; the messages recorded before a crash that still have to go out
 * once the connection is back; and giving the number up to the runner that owns its shard now.
 */
import * as Entity from "@effect/cluster/Entity"
import { Sharding } from "@effect/cluster/Sharding"
import * as Almaty from "@wagate/domain/Almaty"
import type { ConnectionState } from "@wagate/entities/NumberEntity"
import { BlobStore } from "@wagate/media/BlobStore"
import { Accounts } from "@wagate/store/Accounts"
import { Conversations } from "@wagate/store/Conversations"
import { MediaFiles } from "@wagate/store/MediaFiles"
import { NumberStates } from "@wagate/store/NumberStates"
import { type DriverEvent, type IncomingMessage, type LinkMethod, type Session, WhatsAppDriver } from "@wagate/whatsapp/WhatsAppDriver"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Metric from "effect/Metric"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as DomainClock from "@wagate/domain/DomainClock"
import * as HeldSession from "./HeldSession.js"
import * as IncomingFailures from "./IncomingFailures.js"
import * as IncomingMedia from "./IncomingMedia.js"
import * as IncomingText from "./IncomingText.js"
import * as NumberMetrics from "./NumberMetrics.js"
import type { NumberContext } from "./NumberContext.js"
import * as BlobLeftovers from "./BlobLeftovers.js"
import * as OutgoingMedia from "./OutgoingMedia.js"

/**
 * How many instants of each sweep interval the numbers' sweeps are spread over: numbers sweeping
 * at the same instant share one statement (every 30 s by default: one a second, not one a number),
 * and no instant wakes more than a share of the runner's numbers at once.
 */
export const SWEEP_INSTANTS = 30

/** The number's sweep instant, as an offset into each interval. */
export const sweepInstant = (numberId: number, intervalMs: number): number =>
  Math.floor(((numberId % SWEEP_INSTANTS) * intervalMs) / SWEEP_INSTANTS)

/** From `now` to the next time at `instant` into an interval (a whole interval when it is now). */
export const untilInstant = (now: number, instant: number, intervalMs: number): number =>
  intervalMs - ((((now - instant) % intervalMs) + intervalMs) % intervalMs)

/** Why a link in progress ends when the runner it moved to cannot go on with it. */
export const INTERRUPTED_LINK = "linking was interrupted by a runner stop; link again"

/** A pending message the network did not take after this many hand-overs fails. */
export const MAX_SEND_ATTEMPTS = 5

/** Opens the number's session; its events are applied from now on. */
export const open = (ctx: NumberContext) =>
  Effect.gen(function*() {
    const { number, numberId, serialized } = ctx
    const states = yield* NumberStates
    const conversations = yield* Conversations
    const driver = yield* WhatsAppDriver
    const leftovers = yield* BlobLeftovers.make

    // Files of incoming messages: a few downloads at a time, in the entity's scope. Those pending
    // from an earlier run died with it.
    const mediaSettings = yield* IncomingMedia.IncomingMediaSettings
    const retrySettings = yield* IncomingFailures.IncomingRetrySettings
    const downloads = yield* Effect.makeSemaphore(Math.max(1, mediaSettings.concurrency))
    const abandoned = yield* conversations.abandonPendingMedia(numberId, IncomingMedia.INTERRUPTED, new Date(yield* DomainClock.now))
    if (abandoned > 0) yield* Effect.logWarning(`${abandoned} incoming files of number ${numberId} were not stored`)

    // Event handling runs in the session's fibers: give it the entity's scope and address.
    type EntityServices = Sharding | Entity.CurrentAddress | Scope.Scope | BlobStore | Conversations | Accounts | MediaFiles
    const entityContext = yield* Effect.context<EntityServices>()
    // The entity's whole context in place of the session fiber's, as it is: providing it instead
    // would copy both into a new one for every event (two acks a send).
    const inEntity = <A, E>(effect: Effect.Effect<A, E, EntityServices>): Effect.Effect<A, E> =>
      Effect.mapInputContext(effect, (_: Context.Context<never>) => entityContext)
    // An ack needs nothing of that context but the entity's clock, taken here once.
    const ackTime = DomainClock.nowBy(yield* DomainClock.DomainClock)

    const sharding = Context.get(entityContext, Sharding)
    const address = Context.get(entityContext, Entity.CurrentAddress)
    const movedAway = Effect.sync(() => !sharding.hasShardId(address.shardId))

    /** One sweep of pending messages at a time. */
    const resending = yield* Effect.makeSemaphore(1)

    /** Callers waiting for the connection to change (an unlink, a request waiting for the number to connect). */
    let changed = yield* Deferred.make<void>()
    /** Callers waiting for a state that passes their test: each state set is shown to each, in order. */
    const watchers = new Set<(state: ConnectionState) => void>()
    /**
     * A link in progress that this entity goes on with in a session it has just opened: the
     * runner that showed the QR or code stopped (a graceful stop, a failover), and the link is
     * not lost with it. Set until the link shows in the new session (see the Connection event).
     */
    let resuming: LinkMethod | null = null
    /**
     * A session opened while the number is being linked (not linked, STARTING or SCAN_QR_CODE):
     * the session has no credentials yet, so the network knows the number as not linked (`none`,
     * or STOPPED "logged out" after an unlink), which is not news about a number being linked.
     * Linking goes on in it instead, with a new QR or pairing code.
     */
    const linkInProgress = () =>
      !number.linked && (ctx.connection.current.status === "STARTING" || ctx.connection.current.status === "SCAN_QR_CODE")
    /** Goes on linking in the session opened; if it cannot, the link ends FAILED, saying why. */
    const resume = (opened: Session, method: LinkMethod): Effect.Effect<void> =>
      Effect.zipRight(
        Effect.logInfo(`number ${numberId}: its link was in progress on a runner that stopped; it goes on here (${method.kind})`),
        opened.link(method).pipe(Effect.catchAll((e) =>
          serialized(Effect.suspend(() => {
            if (resuming === null) return Effect.void
            resuming = null
            return setConnection({ status: "FAILED", qr: null, pairingCode: null, reason: `${INTERRUPTED_LINK} (${e.reason})` })
          })).pipe(inEntity)
        ))
      )
    /** The number's session: given up while its shard is elsewhere, and taken again (see HeldSession). */
    const held = yield* HeldSession.make({
      numberId,
      shard: String(address.shardId),
      open: (onEvent) =>
        Effect.flatMap(movedAway, (away) => {
          // Set before the session opens: its first event can come before `open` returns. An
          // entity whose shard has moved on leaves the link to the new owner.
          resuming = linkInProgress() && !away ? { kind: number.linkMethod ?? "qr" } : null
          const method = resuming
          return driver.open({ id: numberId, phone: number.phone, linked: number.linked }, onEvent).pipe(
            Effect.tap((opened) => method === null ? Effect.void : resume(opened, method))
          )
        }),
      onEvent: (event) => onEvent(event),
      movedAway,
      scope: Context.get(entityContext, Scope.Scope)
    })
    const { reclaim, session } = held
    /**
     * The status PostgreSQL holds. A number that moved to this runner (a failover, a rolling
     * restart) starts as STARTING here but WORKING there: reconnected, it is what it was, and
     * neither a write nor a session.status event is news.
     */
    let persisted = { status: number.status, reason: number.statusReason }
    /** Whether the entity has asked the cluster to keep it running (a persisted message). */
    let keptAlive = false
    // Let go of even when this entity did not ask: an earlier one's keep-alive message, delivered
    // again after a restart, is what woke it.
    const keepAlive = (enabled: boolean) =>
      enabled && keptAlive ? Effect.void : Effect.zipRight(
        Entity.keepAlive(enabled),
        Effect.sync(() => void (keptAlive = enabled))
      )

    /** `retrying`: STOPPED, but the network tries once more by itself (the entity stays up until then). */
    const setConnection = Effect.fnUntraced(function*(next: ConnectionState, retrying = false) {
      const previous = ctx.connection.current
      const changes = (known: { readonly status: string; readonly reason: string | null }) =>
        known.status !== next.status || known.reason !== next.reason
      if (changes(previous) && changes(persisted)) {
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
        persisted = { status: next.status, reason: next.reason }
      }
      ctx.connection.current = next
      for (const watcher of watchers) watcher(next)
      yield* Deferred.succeed(changed, undefined)
      changed = yield* Deferred.make<void>()
      if (next.status === "STOPPED") {
        number.linked = false
        // Up (and back after a restart) until the network's own try, which no one else would wake.
        yield* keepAlive(retrying)
      }
      if (previous.status === next.status) return
      const at = yield* DomainClock.now
      if (next.status === "WORKING") {
        number.linked = true
        number.connectedAt ??= at
        // Stay up when idle, and come back on whichever runner owns the shard after a move.
        yield* keepAlive(true)
        yield* Effect.forkScoped(resendPending)
      }
    })

    /** Stores an incoming message; its file (if any) follows in the background. */
    const recordIncoming = Effect.fnUntraced(function*(m: IncomingMessage, mediaSkipReason: string | null) {
      const described = m.media === null ? null : IncomingMedia.describe(m.type, m.text, m.media)
      const skipped = described !== null && mediaSkipReason !== null
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
        mediaPending: described !== null && !skipped,
        mediaSkipped: skipped,
        mediaSkipReason: skipped ? mediaSkipReason : null
      })
      // A replay (None) is a message stored before, with its file already settled.
      if (m.media !== null && described !== null && !skipped && Option.isSome(recorded)) {
        yield* Effect.forkScoped(downloads.withPermits(1)(IncomingMedia.download({
          messageId: recorded.value,
          accountId: number.accountId,
          numberId,
          described,
          media: m.media,
          maxBytes: mediaSettings.maxBytes
        })))
      }
    })

    /**
     * Stores an incoming message, or keeps it as the network gave it when storing fails (for any
     * reason): it is stored by a later retry, never only logged. Keeping it is itself retried
     * until the database takes it.
     */
    const storeIncoming = Effect.fnUntraced(function*(m: IncomingMessage) {
      if (!m.isGroup) ctx.contacts.remember(m.peer !== "" ? m.peer : m.chatId)
      const stored = yield* Effect.exit(recordIncoming(m, null))
      if (stored._tag === "Success") return yield* Metric.increment(NumberMetrics.incoming)
      yield* Metric.increment(IncomingFailures.failures)
      yield* Effect.logError(`incoming message ${m.waMessageId} of number ${numberId} not stored; kept for a retry`, stored.cause)
      const event = IncomingFailures.serialize(m)
      const error = Cause.pretty(stored.cause).slice(0, 500)
      const keep = Effect.flatMap(DomainClock.now, (now) =>
        conversations.keepFailedIncoming(numberId, event, error, new Date(now + IncomingFailures.retryDelayMs(retrySettings.baseDelayMs, 1))))
      yield* keep.pipe(
        Effect.retry(IncomingFailures.keepSchedule),
        Effect.catchAllCause((cause) => Effect.logError("keeping a failed incoming message failed", cause)),
        Effect.forkScoped
      )
    })

    /** Kept incoming messages whose retry is due are stored now (their files cannot follow). */
    const retryFailedIncoming = Effect.gen(function*() {
      const now = yield* DomainClock.now
      for (const kept of yield* conversations.dueFailedIncoming(numberId, new Date(now))) {
        const m = IncomingText.sanitize(IncomingFailures.deserialize(kept.event))
        const stored = yield* Effect.exit(serialized(recordIncoming(m, IncomingFailures.FILE_LOST)))
        if (stored._tag === "Success") {
          yield* conversations.forgetFailedIncoming(kept.id)
        } else {
          yield* Metric.increment(IncomingFailures.failures)
          yield* conversations.retryFailedIncomingLater(
            kept.id,
            Cause.pretty(stored.cause).slice(0, 500),
            new Date(now + IncomingFailures.retryDelayMs(retrySettings.baseDelayMs, kept.attempts + 1))
          )
        }
      }
    }).pipe(Effect.catchAllCause((cause) => Effect.logError("retrying kept incoming messages failed", cause)))

    const onEvent = (event: DriverEvent): Effect.Effect<void> =>
      // An ack changes nothing the number decides by, so it does not wait for the number's
      // section (nor does a send wait for it): the session hands events over one at a time, and
      // the ack writer keeps each message's acks in order. A `sent` for a message a send is
      // handing over right now is recorded by that send.
      event._tag === "Ack"
        ? event.ack === "sent" && ctx.inFlight.has(event.waMessageId) ? Effect.void : Effect.flatMap(ackTime, (now) =>
          Effect.zipRight(Metric.increment(NumberMetrics.ackCounter(event.ack)), conversations.applyAck({
            numberId,
            waMessageId: event.waMessageId,
            ack: event.ack,
            error: event.error,
            at: new Date(now)
          }))).pipe(Effect.catchAllCause((cause) => Effect.logError("number event failed", cause)))
        : serialized(Effect.gen(function*() {
        switch (event._tag) {
          case "Connection":
            // An entity whose shard has moved to another runner is on its way out: its session
            // replaced by the new owner's is not news about the number, whose status the new
            // owner writes. If this session is the network's newest (it opened after the new
            // owner's), it gives the number back.
            if (yield* movedAway) return yield* held.giveUp
            if (resuming !== null) {
              // The new session's word that the number is not linked, before linking goes on.
              if (event.status === "none" || event.status === "STOPPED") return
              resuming = null
            }
            return yield* setConnection({
              status: event.status,
              qr: event.qr ?? null,
              pairingCode: event.pairingCode ?? null,
              reason: event.reason ?? null
            }, event.retryAt !== undefined)
          case "Restricted": {
            // No end given: assume WhatsApp's usual day and lift it then.
            const until = event.until ?? (yield* DomainClock.now) + 24 * 60 * 60 * 1000
            number.restrictedUntil = until
            return yield* states.setRestricted(numberId, new Date(until), event.reason)
          }
          case "Unrestricted":
            number.restrictedUntil = null
            return yield* states.setRestricted(numberId, null, "WhatsApp lifted the restriction")
          case "Incoming":
            return yield* storeIncoming(IncomingText.sanitize(event.message))
          case "LidMapped": {
            // A person known so far only by its LID is the phone's: one chat, one contact.
            const merged = yield* conversations.mergeLids(numberId, event.pairs)
            for (const pair of event.pairs) if (merged.includes(pair.lid)) ctx.contacts.remember(pair.phone)
            if (merged.length > 0) yield* Effect.logInfo(`number ${numberId}: ${merged.length} LID chats merged into their phones' chats`)
            return
          }
          case "PhoneMapped":
            // The person's replies come from the phone WhatsApp knows: the chat is that one's,
            // and the digits sent to are its alias from now on (known first: a file kept by the
            // send meanwhile goes to the phone's chat, or is moved there by the merge).
            ctx.contacts.alias(event.asked, event.phone)
            yield* conversations.mergePhone(numberId, event.asked, event.phone)
            ctx.contacts.remember(event.phone)
            return
        }
      })).pipe(
        Effect.catchAllCause((cause) => Effect.logError("number event failed", cause)),
        inEntity
      )

    /**
     * Messages recorded but not taken by the network (a crash in between, or the connection was
     * down) go out now, in order, each at most MAX_SEND_ATTEMPTS times: one that keeps failing
     * (a recipient whose session cannot be encrypted) is failed alone and never holds up those
     * behind it. A failed one's attachment is not kept, as when the network refuses a send: the
     * file stored before the send is removed, and no longer counted if it was. Runs beside the
     * number's other work, never inside its serialized section.
     *
     * A paused number (its balance ran out, or the operator paused it) hands nothing to the
     * network: what it had queued waits, its attempts not counted, and goes out once it is
     * resumed (`sendPending`).
     */
    const mayHandOver = () => ctx.connection.current.status === "WORKING" && !number.paused
    const resendPending = resending.withPermits(1)(Effect.gen(function*() {
      if (!mayHandOver()) return
      for (const p of yield* conversations.pending(numberId)) {
        if (ctx.inFlight.has(p.wa_message_id)) continue
        if (!mayHandOver()) return
        const at = new Date(yield* DomainClock.now)
        const reject = (error: string) =>
          Effect.gen(function*() {
            // The day of its record. (One recorded while the clock was stepped back across
            // midnight was counted on the later day; it is given back on the earlier one, so the
            // later day keeps it: one send too many counted, never one too few.)
            const day = Almaty.dateOf(p.created_at.getTime())
            // In the number's section, as a send's refusal: no send decides on the person in between.
            const uncounted = yield* serialized(Effect.gen(function*() {
              const uncounted = yield* conversations.markRejected({
                accountId: number.accountId,
                numberId,
                messageId: p.id,
                waMessageId: p.wa_message_id,
                to: p.peer,
                error,
                // Given back where it was counted: on the day it was recorded, a new contact if it was one.
                firstContact: p.first_contact,
                day,
                at
              })
              ctx.counters.uncountSend(day, p.created_at.getTime(), p.first_contact)
              // The person may be a new contact again: PostgreSQL tells.
              ctx.contacts.forget(p.peer !== "" ? p.peer : p.chat_id)
              return uncounted
            }))
            if (p.media === null) return
            // Once the record says so: a file still counted is never served from a key already gone.
            const stored = new Set([OutgoingMedia.sentKey(number.accountId, numberId, p.wa_message_id), ...uncounted])
            yield* Effect.forEach(stored, leftovers.remove, { discard: true })
          })
        if (p.type !== "text") {
          yield* reject("the attachment was lost in a restart before it was sent")
          continue
        }
        // In a second of its own: a send taken over from a dead runner never goes out in the
        // same second as one the new owner just accepted.
        const wait = ctx.counters.handOffDelay(yield* DomainClock.now)
        if (wait > 0) yield* Effect.sleep(wait)
        const attempts = yield* conversations.countAttempt(p.id)
        const sent = yield* Effect.either(
          // A person known only by its LID has no phone: its chat `<lid>@lid` is the address.
          session.send({
            waMessageId: p.wa_message_id,
            to: p.peer !== "" ? p.peer : p.chat_id,
            content: { kind: "text", text: p.text },
            firstContact: p.first_contact
          })
        )
        if (sent._tag === "Right") {
          yield* conversations.applyAck({ numberId, waMessageId: p.wa_message_id, ack: "sent", at })
        } else if (sent.left._tag === "SendRejected") {
          yield* reject(sent.left.reason)
        } else if (attempts >= MAX_SEND_ATTEMPTS) {
          yield* reject(`not taken by the network after ${attempts} attempts: ${sent.left.reason}`)
        }
        // Otherwise it stays pending for the next sweep; the messages behind it go on.
      }
    })).pipe(Effect.catchAllCause((cause) => Effect.logError("re-sending pending messages failed", cause)))

    yield* held.start
    if (number.linked) yield* keepAlive(true)
    // Also sends what is still pending: a send that met a session the network had already
    // replaced (another runner's, in a failover) was recorded and answered, and waits here
    // rather than for the next reconnect.
    // One query first tells whether there is anything to do: with thousands of numbers the two
    // queries of every sweep were most of what idle numbers cost.
    // An entity whose shard has moved on leaves it all to the new owner; one that gave its number
    // up and has it back connects first.
    const due = Effect.flatMap(DomainClock.now, (now) => conversations.sweepDue(numberId, new Date(now)))
    const sweep = Effect.zipRight(reclaim, due).pipe(
      Effect.flatMap((due) =>
        Effect.zipRight(due.incoming ? retryFailedIncoming : Effect.void, due.pending ? resendPending : Effect.void)
      ),
      Effect.unlessEffect(movedAway),
      Effect.catchAllCause((cause) => Effect.logError("sweeping the number failed", cause))
    )
    // Then at the number's instant of every interval: numbers sharing an instant (one in
    // SWEEP_INSTANTS) share the statement that asks what they have to do.
    const interval = Math.max(1, Duration.toMillis(retrySettings.sweepInterval))
    const instant = sweepInstant(numberId, interval)
    yield* sweep.pipe(
      Effect.zipRight(Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sleep(untilInstant(now, instant, interval)))),
      Effect.forever,
      Effect.forkScoped
    )

    return {
      session,
      /** Waits for the next change of the connection. */
      nextChange: Effect.suspend(() => Deferred.await(changed)),
      /**
       * From now on (for the scope), every state the connection is set to is shown to `settles`,
       * even states that come and go before a waiting fiber could look; the effect returned waits
       * for the first state it accepts. Taken before an action, it sees all the action causes.
       */
      awaitState: (settles: (state: ConnectionState) => boolean) =>
        Effect.gen(function*() {
          const settled = yield* Deferred.make<ConnectionState>()
          const watcher = (state: ConnectionState) => {
            if (settles(state)) Deferred.unsafeDone(settled, Exit.succeed(state))
          }
          yield* Effect.acquireRelease(
            Effect.sync(() => watchers.add(watcher)),
            () => Effect.sync(() => watchers.delete(watcher))
          )
          return Deferred.await(settled)
        }),
      /** Whether the number's shard has moved to another runner (this entity is on its way out). */
      movedAway,
      /**
       * Connects again if the number was given up (its shard moved away) and has come back: the
       * entity that gave it up may still be running when its runner gets the shard back.
       */
      reclaim,
      /** Sends what is pending now, beside the caller (a resumed number's queued messages). */
      sendPending: Effect.asVoid(Effect.forkIn(inEntity(resendPending), Context.get(entityContext, Scope.Scope)))
    }
  })
