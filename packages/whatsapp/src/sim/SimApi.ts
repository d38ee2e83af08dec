/**
 * The simulator's control API under `/sim/v1`, for tests and demos: shape the simulated network
 * (phones, failures, peers), act as the phone (scan, pair, log out) and read what the network
 * received. Operator token only; not part of the public contract or its OpenAPI document.
 *
 * @since 1.0.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import * as E from "@wagate/domain/ApiError"
import { ConnectionStatus } from "@wagate/domain/Connection"
import { Timestamp } from "@wagate/domain/Ids"
import { MessageType } from "@wagate/domain/Message"
import * as Schema from "effect/Schema"

/**
 * Bearer authentication of the control API (the gateway checks it against the operator token).
 *
 * @since 1.0.0
 */
export class SimAuth extends HttpApiMiddleware.Tag<SimAuth>()("SimAuth", {
  failure: Schema.Union(E.wire(E.Unauthorized), E.wire(E.InvalidKey), E.wire(E.RateLimited)),
  security: { operator: HttpApiSecurity.bearer }
}) {}

/** Digits in international format. @since 1.0.0 */
export const SimPhone = Schema.String.pipe(Schema.pattern(/^[1-9]\d{6,14}$/)).annotations({
  description: "International format, digits only"
})

const Millis = Schema.Int.pipe(Schema.nonNegative())

/** The simulator's settings on the wire. @since 1.0.0 */
export const SimConfigBody = Schema.Struct({
  exists_by_default: Schema.Boolean,
  auto_scan: Schema.Boolean,
  scan_delay_ms: Millis,
  qr_refresh_ms: Millis,
  delivered_delay_ms: Millis,
  read_delay_ms: Schema.NullOr(Millis).annotations({ description: "null: messages are never read" }),
  reconnect_delay_ms: Millis
})

/** Settings to change; absent fields keep their value. @since 1.0.0 */
export const SimConfigPatch = Schema.partial(SimConfigBody)

/** A number of the gateway as the simulated network sees it. @since 1.0.0 */
export const SimNumber = Schema.Struct({
  phone: Schema.String,
  linked: Schema.Boolean,
  status: ConnectionStatus,
  qr: Schema.NullOr(Schema.String),
  pairing_code: Schema.NullOr(Schema.String),
  reason: Schema.NullOr(Schema.String),
  session_open: Schema.Boolean,
  queued: Schema.Int.annotations({ description: "Messages and acks waiting for the number to connect" }),
  sessions: Schema.Int.annotations({
    description: "Sessions the number connected through since the network started; each reconnect counts"
  })
})

/** A message the network accepted from one of the gateway's numbers. @since 1.0.0 */
export const SimSent = Schema.Struct({
  wa_message_id: Schema.String,
  from: Schema.String,
  to: Schema.String,
  kind: Schema.Literal("text", "image", "document", "voice", "video"),
  text: Schema.NullOr(Schema.String),
  caption: Schema.NullOr(Schema.String),
  filename: Schema.NullOr(Schema.String),
  media_size: Schema.NullOr(Schema.Int),
  mime_type: Schema.NullOr(Schema.String),
  sent_at: Timestamp,
  ack: Schema.Literal("sent", "delivered", "read", "failed")
})

const phone = HttpApiSchema.param("phone", SimPhone)

/** @since 1.0.0 */
export class SimGroup extends HttpApiGroup.make("sim")
  .add(HttpApiEndpoint.get("getConfig", "/config").addSuccess(SimConfigBody))
  .add(
    HttpApiEndpoint.put("setConfig", "/config")
      .setPayload(SimConfigPatch)
      .addSuccess(SimConfigBody)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
  )
  .add(
    HttpApiEndpoint.post("setPhone", "/phones")
      .setPayload(Schema.Struct({ phone: SimPhone, exists: Schema.Boolean }))
      .addSuccess(Schema.Struct({ phone: Schema.String, exists: Schema.Boolean }))
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
  )
  .add(
    HttpApiEndpoint.post("inbound", "/inbound")
      .setPayload(Schema.Struct({
        to: SimPhone,
        from: SimPhone,
        name: Schema.optional(Schema.NullOr(Schema.String)),
        text: Schema.String,
        type: Schema.optional(MessageType),
        group: Schema.optional(Schema.Struct({
          id: Schema.String.pipe(Schema.pattern(/^[\d-]+(@g\.us)?$/)),
          subject: Schema.optional(Schema.NullOr(Schema.String))
        })),
        from_me: Schema.optional(Schema.Boolean),
        media: Schema.optional(Schema.Struct({
          url: Schema.String.pipe(Schema.pattern(/^https?:\/\//)).annotations({
            description: "Where the file is served; each download by the gateway fetches it from there"
          }),
          mime_type: Schema.String,
          filename: Schema.optional(Schema.NullOr(Schema.String)),
          size: Schema.optional(Schema.NullOr(Schema.Int.pipe(Schema.nonNegative()))).annotations({
            description: "The size announced with the message; absent: none"
          })
        }))
      }))
      .addSuccess(
        Schema.Struct({
          wa_message_id: Schema.String,
          delivered: Schema.Boolean.annotations({ description: "false: queued until the number connects" })
        }),
        { status: 201 }
      )
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
  )
  .add(
    HttpApiEndpoint.post("autoReply")`/peers/${phone}/auto-reply`
      .setPayload(Schema.Struct({
        text: Schema.String,
        delay_ms: Millis,
        name: Schema.optional(Schema.NullOr(Schema.String))
      }))
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
  )
  .add(
    HttpApiEndpoint.post("failures", "/failures")
      .setPayload(Schema.Struct({
        to: SimPhone,
        mode: Schema.Literal("reject", "fail"),
        times: Schema.optional(Schema.Int.pipe(Schema.positive())).annotations({ description: "Absent: always" })
      }))
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
  )
  .add(
    HttpApiEndpoint.post("scan")`/numbers/${phone}/scan`
      .addSuccess(SimNumber)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.NotConnected))
  )
  .add(
    HttpApiEndpoint.post("pair")`/numbers/${phone}/pair`
      .setPayload(Schema.Struct({ code: Schema.String }))
      .addSuccess(SimNumber)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.NotConnected))
  )
  .add(
    HttpApiEndpoint.post("disconnect")`/numbers/${phone}/disconnect`
      .setPayload(Schema.Struct({ reason: Schema.Literal("logged_out", "connection_lost") }))
      .addSuccess(SimNumber)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.NotConnected))
  )
  .add(HttpApiEndpoint.get("numbers", "/numbers").addSuccess(Schema.Array(SimNumber)))
  .add(
    HttpApiEndpoint.get("number")`/numbers/${phone}`
      .addSuccess(SimNumber)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
  )
  .add(
    HttpApiEndpoint.get("sent", "/sent")
      .setUrlParams(Schema.Struct({ from: Schema.optional(SimPhone), to: Schema.optional(SimPhone) }))
      .addSuccess(Schema.Array(SimSent))
      .addError(E.wire(E.InvalidParam))
  )
  .add(HttpApiEndpoint.post("reset", "/reset"))
  .middleware(SimAuth)
  .prefix("/sim/v1")
  .annotate(OpenApi.Exclude, true)
{}
