/**
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"

/** Whether `s` is an absolute http or https URL. */
const isHttpUrl = (s: string): boolean => {
  try {
    const { protocol } = new URL(s)
    return protocol === "http:" || protocol === "https:"
  } catch {
    return false
  }
}

const Url = Schema.String.pipe(
  Schema.filter(isHttpUrl, { message: () => "must be an http or https URL" })
).annotations({ description: "http(s) URL the gateway fetches the file from" })
const Caption = Schema.optional(Schema.String)
/** Absent, or null (taken as absent). */
const optional = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { nullable: true })

/**
 * POST /messages/send. Exactly one of text, image, document, voice and video; `text` alongside
 * an attachment is used as its caption when the attachment has none. A voice note has no caption
 * on WhatsApp: text beside it is refused (400 `invalid_param`), never dropped.
 *
 * @since 1.0.0
 */
export const SendMessageRequest = Schema.Struct({
  to: Schema.String.annotations({
    description: "Recipient in international format, digits only; or the `chat_id` `<lid>@lid` of a person " +
      "WhatsApp names only by a LID"
  }),
  text: optional(Schema.String.annotations({ description: "Message text (at most 4096 characters)" })),
  image: optional(Schema.Struct({ url: Url, caption: Caption })),
  document: optional(Schema.Struct({
    url: Url,
    filename: Schema.optional(Schema.String.annotations({ description: "Name shown to the recipient" })),
    caption: Caption
  })),
  voice: optional(Schema.Struct({ url: Url }).annotations({
    description: "Sent as a voice note (OGG/Opus). It carries no caption: `text` beside it is refused (invalid_param)"
  })),
  video: optional(Schema.Struct({ url: Url, caption: Caption })),
  from: Schema.optional(
    Schema.Union(Schema.Int, Schema.String).annotations({
      description: "Sending number: id or phone; required when the account has several numbers"
    })
  )
}).annotations({ identifier: "SendMessageRequest" })
/** @since 1.0.0 */
export type SendMessageRequest = typeof SendMessageRequest.Type

/** @since 1.0.0 */
export const SendMessageResponse = Schema.Struct({
  ok: Schema.Boolean,
  id: Schema.Int.annotations({ description: "Service message id" }),
  wa_message_id: Schema.String,
  from: Schema.Struct({ id: Schema.Int, phone: Schema.String })
}).annotations({ identifier: "SendMessageResponse" })
/** @since 1.0.0 */
export type SendMessageResponse = typeof SendMessageResponse.Type
