/**
 * The protocol of a linked number's entity (id = number id). The entity owns the number's
 * connection, its limits, trust index and daily counters; every write about the number goes
 * through it. All calls are volatile (answered directly): a send is made durable by the entity
 * itself, which records the message before handing it to the network.
 *
 * Old and new processes exchange these messages during a rolling upgrade: a release only adds
 * optional fields to them (see this package's index; {@link LimitsReply}).
 *
 * @since 1.0.0
 */
import * as Entity from "@effect/cluster/Entity"
import * as Rpc from "@effect/rpc/Rpc"
import * as E from "@wagate/domain/ApiError"
import { ConnectionStatus } from "@wagate/domain/Connection"
import { Limits, TrustFactors } from "@wagate/domain/Limits"
import { MessageSource } from "@wagate/domain/Message"
import * as Schema from "effect/Schema"

/** What to send: text, or one attachment fetched from a URL. @since 1.0.0 */
export const SendContent = Schema.Union(
  Schema.TaggedStruct("text", { text: Schema.String }),
  Schema.TaggedStruct("image", { url: Schema.String, caption: Schema.optional(Schema.String) }),
  Schema.TaggedStruct("document", {
    url: Schema.String,
    filename: Schema.optional(Schema.String),
    caption: Schema.optional(Schema.String)
  }),
  Schema.TaggedStruct("voice", { url: Schema.String }),
  Schema.TaggedStruct("video", { url: Schema.String, caption: Schema.optional(Schema.String) })
)
/** @since 1.0.0 */
export type SendContent = typeof SendContent.Type

/** @since 1.0.0 */
export const SendPayload = Schema.Struct({
  /** Recipient phone, digits, already validated. */
  to: Schema.String,
  content: SendContent,
  source: MessageSource,
  idempotency: Schema.optional(Schema.Struct({ key: Schema.String, requestHash: Schema.String })),
  /**
   * The account the caller acts for: the number refuses the send (`number_not_found`) unless it
   * is a live number of that account, so a caller can name the number by id without looking it up.
   */
  accountId: Schema.optional(Schema.Int)
})
/** @since 1.0.0 */
export type SendPayload = typeof SendPayload.Type

/** @since 1.0.0 */
export const Sent = Schema.Struct({
  messageId: Schema.Int,
  waMessageId: Schema.String,
  phone: Schema.String,
  quota: E.Quota,
  /** The answer of an earlier request with the same Idempotency-Key. */
  replayed: Schema.optional(Schema.Boolean)
})
/** @since 1.0.0 */
export type Sent = typeof Sent.Type

/**
 * Not an answer for the client: the number's shard moved to another runner while the request
 * waited for the number to connect, and nothing was done. The caller asks again and the cluster
 * takes the request to the new owner (see the api's `EntityCalls.bounded`). Without it, a request
 * waiting here holds up the shard's hand-over, since a runner lets its entities finish what they
 * are doing before it gives their shard up.
 *
 * @since 1.0.0
 */
export class NumberMoved extends Schema.TaggedError<NumberMoved>()("NumberMoved", {}) {}

/** Why a send can be refused, each with its HTTP status and code (and {@link NumberMoved}). @since 1.0.0 */
export const SendError = Schema.Union(
  NumberMoved,
  E.NumberNotFound,
  E.NumberPaused,
  E.NotConnected,
  E.RateLimited,
  E.DailyLimit,
  E.NewContactsLimit,
  E.ColdBlocked,
  E.SpamDetected,
  E.AttachmentsBusy,
  E.InvalidMedia,
  E.MediaTooLarge,
  E.MediaFetchFailed,
  E.Busy,
  E.StorageUnavailable,
  E.SendFailed,
  E.InvalidParam,
  E.Capacity,
  E.InternalError
)
/** @since 1.0.0 */
export type SendError = typeof SendError.Type

/** Why a request that reads or changes the number's state can fail. @since 1.0.0 */
export const StateError = Schema.Union(E.InvalidParam, E.Capacity, E.InternalError)

/** @since 1.0.0 */
export const Checked = Schema.Struct({
  exists: Schema.Boolean,
  chatId: Schema.String,
  quota: E.Quota
})

/** The live connection as the entity knows it. @since 1.0.0 */
export const ConnectionState = Schema.Struct({
  status: ConnectionStatus,
  qr: Schema.NullOr(Schema.String),
  pairingCode: Schema.NullOr(Schema.String),
  reason: Schema.NullOr(Schema.String)
})
/** @since 1.0.0 */
export type ConnectionState = typeof ConnectionState.Type

/**
 * A number's limits as its entity answers them (GET /limits). A runner of the release before
 * `pause_reason` answers without it: that reads as null, the reason not known (as the refusal of
 * a number paused without a recorded reason says none).
 *
 * @since 1.0.0
 */
export const LimitsReply = Schema.Struct({
  ...Limits.fields,
  pause_reason: Schema.optionalWith(Limits.fields.pause_reason, { default: () => null })
})

/** @since 1.0.0 */
export const NumberEntity = Entity.make("Number", [
  Rpc.make("Send", { payload: SendPayload, success: Sent, error: SendError }),
  Rpc.make("Limits", { success: LimitsReply, error: Schema.Union(E.Capacity, E.InternalError) }),
  /** The scores behind the trust index (the cabinet explains the index with them). */
  Rpc.make("TrustFactors", { success: TrustFactors, error: Schema.Union(E.Capacity, E.InternalError) }),
  Rpc.make("Check", {
    payload: { phone: Schema.String },
    success: Checked,
    error: Schema.Union(NumberMoved, E.NumberPaused, E.NotConnected, E.RateLimited, E.DailyLimit, StateError)
  }),
  Rpc.make("Connection", { success: ConnectionState }),
  Rpc.make("Link", {
    payload: { method: Schema.Literal("qr", "code") },
    success: ConnectionState,
    error: StateError
  }),
  /** Unlinks the device (logs it out on the phone's side): the number is STOPPED until linked again. */
  Rpc.make("Unlink", { success: ConnectionState, error: StateError }),
  /** Takes the number's pause from the database (billing changed it) and answers it. */
  Rpc.make("RefreshPaused", { success: Schema.Boolean, error: StateError }),
  /** Activates the entity (its connection comes up) and tells its state. */
  Rpc.make("Wake", { success: ConnectionState })
])
