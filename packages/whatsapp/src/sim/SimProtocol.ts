/**
 * The wire protocol of the standalone simulator: every operation of `SimNetworkService` as an
 * RPC, and a number's session as a stream of its events with calls addressed to it. Runners
 * reach one network over it, so the network outlives any of them and a test can read what the
 * network really received from all of them (see `SimRemote` and `SimServer`).
 *
 * @since 1.0.0
 */
import * as Rpc from "@effect/rpc/Rpc"
import * as RpcGroup from "@effect/rpc/RpcGroup"
import { ConnectionStatus } from "@wagate/domain/Connection"
import { MessageType } from "@wagate/domain/Message"
import * as Schema from "effect/Schema"
import { SimConfig } from "./SimConfig.js"

/** @since 1.0.0 */
export class WireUnknownNumber extends Schema.TaggedError<WireUnknownNumber>()("SimUnknownNumber", {
  phone: Schema.String
}) {}

/** @since 1.0.0 */
export class WireWrongState extends Schema.TaggedError<WireWrongState>()("SimWrongState", {
  phone: Schema.String,
  status: Schema.String,
  reason: Schema.String
}) {}

/** @since 1.0.0 */
export class WireWrongPairingCode extends Schema.TaggedError<WireWrongPairingCode>()("SimWrongPairingCode", {
  phone: Schema.String
}) {}

/** @since 1.0.0 */
export class WireSendRejected extends Schema.TaggedError<WireSendRejected>()("SendRejected", {
  reason: Schema.String
}) {}

/** @since 1.0.0 */
export class WireUnavailable extends Schema.TaggedError<WireUnavailable>()("DriverUnavailable", {
  reason: Schema.String
}) {}

/** @since 1.0.0 */
export const NumberState = Schema.Struct({
  phone: Schema.String,
  linked: Schema.Boolean,
  status: ConnectionStatus,
  qr: Schema.NullOr(Schema.String),
  pairingCode: Schema.NullOr(Schema.String),
  reason: Schema.NullOr(Schema.String),
  sessionOpen: Schema.Boolean,
  queued: Schema.Number,
  sessions: Schema.Number
})

const Bytes = Schema.Uint8ArrayFromSelf

/** An incoming message with its file, if any, carried inline. @since 1.0.0 */
export const Incoming = Schema.Struct({
  waMessageId: Schema.String,
  fromMe: Schema.Boolean,
  chatId: Schema.String,
  peer: Schema.String,
  peerLid: Schema.NullOr(Schema.String),
  name: Schema.NullOr(Schema.String),
  isGroup: Schema.Boolean,
  groupSubject: Schema.NullOr(Schema.String),
  author: Schema.NullOr(Schema.String),
  type: MessageType,
  text: Schema.String,
  timestamp: Schema.Number,
  media: Schema.NullOr(Schema.Struct({
    mimeType: Schema.String,
    filename: Schema.NullOr(Schema.String),
    size: Schema.NullOr(Schema.Number),
    bytes: Bytes
  }))
})

/** @since 1.0.0 */
export const Ack = Schema.Literal("sent", "delivered", "read", "failed")

/** A `DriverEvent` on the wire. @since 1.0.0 */
export const Event = Schema.Union(
  Schema.TaggedStruct("Connection", {
    status: ConnectionStatus,
    qr: Schema.optional(Schema.String),
    pairingCode: Schema.optional(Schema.String),
    reason: Schema.optional(Schema.String)
  }),
  Schema.TaggedStruct("Incoming", { message: Incoming }),
  Schema.TaggedStruct("Ack", { waMessageId: Schema.String, ack: Ack, error: Schema.optional(Schema.String) }),
  Schema.TaggedStruct("Restricted", { reason: Schema.String, until: Schema.NullOr(Schema.Number) }),
  Schema.TaggedStruct("Unrestricted", {}),
  Schema.TaggedStruct("LidMapped", { pairs: Schema.Array(Schema.Struct({ lid: Schema.String, phone: Schema.String })) }),
  Schema.TaggedStruct("PhoneMapped", { asked: Schema.String, phone: Schema.String })
)

/** What a session's stream carries: first its id, then the number's events in order. @since 1.0.0 */
export const SessionItem = Schema.Union(
  Schema.TaggedStruct("Opened", { session: Schema.Number }),
  Schema.TaggedStruct("Event", { event: Event })
)

const Media = Schema.Struct({ bytes: Bytes, mimeType: Schema.String })

/** @since 1.0.0 */
export const Outgoing = Schema.Struct({
  waMessageId: Schema.String,
  to: Schema.String,
  content: Schema.Union(
    Schema.Struct({ kind: Schema.Literal("text"), text: Schema.String }),
    Schema.Struct({ kind: Schema.Literal("image"), media: Media, caption: Schema.optional(Schema.String) }),
    Schema.Struct({
      kind: Schema.Literal("document"),
      media: Media,
      filename: Schema.String,
      caption: Schema.optional(Schema.String)
    }),
    Schema.Struct({ kind: Schema.Literal("voice"), media: Media }),
    Schema.Struct({ kind: Schema.Literal("video"), media: Media, caption: Schema.optional(Schema.String) })
  )
})

/** @since 1.0.0 */
export const Sent = Schema.Struct({
  waMessageId: Schema.String,
  from: Schema.String,
  to: Schema.String,
  kind: Schema.Literal("text", "image", "document", "voice", "video"),
  text: Schema.NullOr(Schema.String),
  caption: Schema.NullOr(Schema.String),
  filename: Schema.NullOr(Schema.String),
  mediaSize: Schema.NullOr(Schema.Number),
  mimeType: Schema.NullOr(Schema.String),
  timestamp: Schema.Number,
  ack: Ack
})

/** A peer's message on the wire. @since 1.0.0 */
export const InboundPayload = Schema.Struct({
  to: Schema.String,
  from: Schema.String,
  name: Schema.optional(Schema.NullOr(Schema.String)),
  text: Schema.String,
  type: Schema.optional(MessageType),
  group: Schema.optional(Schema.Struct({ id: Schema.String, subject: Schema.optional(Schema.NullOr(Schema.String)) })),
  fromMe: Schema.optional(Schema.Boolean),
  media: Schema.optional(Schema.Struct({
    mimeType: Schema.String,
    filename: Schema.optional(Schema.NullOr(Schema.String)),
    bytes: Bytes
  }))
})

/** @since 1.0.0 */
export type InboundPayload = typeof InboundPayload.Type

const Control = Schema.Union(WireUnknownNumber, WireWrongState, WireWrongPairingCode)

/** @since 1.0.0 */
export class SimRpcs extends RpcGroup.make(
  Rpc.make("Config", { success: SimConfig }),
  Rpc.make("UpdateConfig", { payload: { patch: Schema.partial(SimConfig) }, success: SimConfig }),
  Rpc.make("SetPhone", { payload: { phone: Schema.String, exists: Schema.Boolean } }),
  Rpc.make("Exists", { payload: { phone: Schema.String }, success: Schema.Boolean }),
  Rpc.make("Failures", {
    payload: { to: Schema.String, mode: Schema.Literal("reject", "fail"), times: Schema.optional(Schema.Number) }
  }),
  Rpc.make("AutoReply", {
    payload: {
      peer: Schema.String,
      reply: Schema.NullOr(Schema.Struct({
        text: Schema.String,
        delayMs: Schema.Number,
        name: Schema.optional(Schema.NullOr(Schema.String)),
        type: Schema.optional(MessageType)
      }))
    }
  }),
  Rpc.make("Inbound", {
    payload: InboundPayload.fields,
    success: Schema.Struct({ message: Incoming, delivered: Schema.Boolean })
  }),
  Rpc.make("Scan", { payload: { phone: Schema.String }, success: NumberState, error: Control }),
  Rpc.make("Pair", { payload: { phone: Schema.String, code: Schema.String }, success: NumberState, error: Control }),
  Rpc.make("Disconnect", {
    payload: { phone: Schema.String, reason: Schema.Literal("logged_out", "connection_lost") },
    success: NumberState,
    error: Control
  }),
  Rpc.make("Restrict", {
    payload: { phone: Schema.String, reason: Schema.String, until: Schema.NullOr(Schema.Number) },
    error: WireUnknownNumber
  }),
  Rpc.make("Numbers", { success: Schema.Array(NumberState) }),
  Rpc.make("Number", { payload: { phone: Schema.String }, success: NumberState, error: WireUnknownNumber }),
  Rpc.make("SentLog", {
    payload: { from: Schema.optional(Schema.String), to: Schema.optional(Schema.String) },
    success: Schema.Array(Sent)
  }),
  Rpc.make("Reset"),
  Rpc.make("Connect", {
    payload: { phone: Schema.String, linked: Schema.optional(Schema.Boolean) },
    success: SessionItem,
    stream: true
  }),
  Rpc.make("Link", {
    payload: { session: Schema.Number, method: Schema.Literal("qr", "code") },
    error: WireUnavailable
  }),
  Rpc.make("Send", {
    payload: { session: Schema.Number, message: Outgoing },
    error: Schema.Union(WireSendRejected, WireUnavailable)
  }),
  Rpc.make("SessionExists", {
    payload: { session: Schema.Number, phone: Schema.String },
    success: Schema.Struct({ exists: Schema.Boolean, chatId: Schema.String }),
    error: WireUnavailable
  }),
  Rpc.make("Logout", { payload: { session: Schema.Number } }),
  // The runner has handled (stored) an incoming message, or with `ack` that ack of its own
  // message; until then the network keeps it and hands it to the number's next session, as
  // WhatsApp redelivers what a device did not acknowledge.
  Rpc.make("Received", { payload: { phone: Schema.String, waMessageId: Schema.String, ack: Schema.optional(Ack) } })
) {}
