/**
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"
import { Phone, Timestamp } from "./Ids.js"

/**
 * Kind of a stored media file (also the `kind` of GET /storage and POST /media/delete).
 *
 * @since 1.0.0
 */
export const MediaKind = Schema.Literal("photo", "video", "voice", "document", "sticker")
/** @since 1.0.0 */
export type MediaKind = typeof MediaKind.Type

/**
 * The attachment of a message. The file itself is fetched through GET /media/{id}.
 *
 * @since 1.0.0
 */
export const MessageMedia = Schema.Struct({
  kind: MediaKind.annotations({
    description: "photo (image), video, voice (voice notes and audio), document (any other file), sticker"
  }),
  mime_type: Schema.String.annotations({ description: "Type of the file, e.g. image/jpeg, application/pdf" }),
  filename: Schema.NullOr(Schema.String).annotations({
    description: "Original file name (documents; other kinds usually have none). GET /media/{id}?download=1 saves under it"
  }),
  size: Schema.NullOr(Schema.Int).annotations({
    description: "Bytes; null while an incoming file is downloading (media_pending) or when it was not kept (media_skipped)"
  }),
  caption: Schema.NullOr(Schema.String).annotations({ description: "Caption of a photo, video or document" }),
  deleted: Schema.Boolean.annotations({
    description: "The file was deleted (DELETE /media/{id}, POST /media/delete or retention); the message and its text remain"
  })
}).annotations({
  identifier: "MessageMedia",
  description: "The file of a message: null for messages without one. The file is kept in the gateway's storage " +
    "and counted in GET /storage unless media_skipped says why not; GET /media/{id} redirects to a link valid 15 minutes."
})
/** @since 1.0.0 */
export type MessageMedia = typeof MessageMedia.Type

/**
 * Delivery status of a stored message. `pending` is an accepted outgoing message not yet handed
 * to the network, `received` an incoming one; the rest follow the ack events.
 *
 * @since 1.0.0
 */
export const MessageStatus = Schema.Literal("pending", "sent", "delivered", "read", "failed", "received")
/** @since 1.0.0 */
export type MessageStatus = typeof MessageStatus.Type

/** @since 1.0.0 */
export const Direction = Schema.Literal("in", "out")
/** @since 1.0.0 */
export type Direction = typeof Direction.Type

/**
 * Where a message came from: `api` (REST), `mcp` (tool server), `phone` (written in the phone
 * application), `network` (incoming from a counterpart).
 *
 * @since 1.0.0
 */
export const MessageSource = Schema.Literal("api", "mcp", "phone", "network")
/** @since 1.0.0 */
export type MessageSource = typeof MessageSource.Type

/**
 * Message type: text, image, video, audio, voice, document, sticker, location, contact,
 * reaction, poll or unknown.
 *
 * @since 1.0.0
 */
export const MessageType = Schema.Literal(
  "text",
  "image",
  "video",
  "audio",
  "voice",
  "document",
  "sticker",
  "location",
  "contact",
  "reaction",
  "poll",
  "unknown"
)
/** @since 1.0.0 */
export type MessageType = typeof MessageType.Type

/** @since 1.0.0 */
export const Message = Schema.Struct({
  id: Schema.Int.annotations({ description: "Service message id" }),
  from: Schema.Int.annotations({ description: "Id of the account number that sent or received the message" }),
  direction: Direction,
  source: MessageSource,
  chat_id: Schema.String.annotations({
    description: "`<phone>@c.us` for one-to-one chats, `<id>@g.us` for groups, `<lid>@lid` for a person whose phone " +
      "WhatsApp has not revealed (merged into `<phone>@c.us` once it does)"
  }),
  peer: Phone.annotations({
    description: "Counterpart phone, digits; \"\" when WhatsApp names the person only by a LID (then `peer_lid` " +
      "and `chat_id` `<lid>@lid` identify them, and a reply goes to `to: \"<lid>@lid\"`)"
  }),
  peer_lid: Schema.NullOr(Schema.String).annotations({ description: "The person's LID (`<lid>@lid`), when known" }),
  name: Schema.NullOr(Schema.String).annotations({ description: "Counterpart display name" }),
  is_group: Schema.Boolean,
  group_subject: Schema.NullOr(Schema.String),
  author: Schema.NullOr(Schema.String).annotations({ description: "Author phone inside a group" }),
  wa_message_id: Schema.String.annotations({ description: "Network-side message id" }),
  type: MessageType,
  text: Schema.String,
  status: MessageStatus,
  error: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp,
  media: Schema.NullOr(MessageMedia),
  media_skipped: Schema.Boolean,
  media_skip_reason: Schema.NullOr(Schema.String),
  media_pending: Schema.Boolean
}).annotations({ identifier: "Message" })
/** @since 1.0.0 */
export type Message = typeof Message.Type

/** @since 1.0.0 */
export const MessagePage = Schema.Struct({
  messages: Schema.Array(Message),
  next_before: Schema.NullOr(Schema.Int).annotations({ description: "Pass as `before` for the next page" })
}).annotations({ identifier: "MessagePage" })
/** @since 1.0.0 */
export type MessagePage = typeof MessagePage.Type

/**
 * A message of GET /export?format=json: a Message with the phone of the account's number.
 *
 * @since 1.0.0
 */
export const ExportedMessage = Schema.Struct({
  ...Message.fields,
  from_phone: Schema.NullOr(Schema.String)
}).annotations({ identifier: "ExportedMessage" })

/** @since 1.0.0 */
export const HistoryExport = Schema.Struct({
  messages: Schema.Array(ExportedMessage),
  count: Schema.Int
}).annotations({ identifier: "HistoryExport" })
