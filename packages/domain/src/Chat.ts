/**
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"
import { Phone, Timestamp } from "./Ids.js"
import { Direction, MessageStatus, MessageType } from "./Message.js"

/** @since 1.0.0 */
export const LastMessage = Schema.Struct({
  id: Schema.Int,
  direction: Direction,
  type: MessageType,
  text: Schema.String,
  status: MessageStatus,
  created_at: Timestamp
}).annotations({ identifier: "LastMessage" })

/**
 * A conversation of one account number with one counterpart (a person or a group).
 *
 * @since 1.0.0
 */
export const Chat = Schema.Struct({
  chat_id: Schema.String,
  from: Schema.Int.annotations({ description: "Id of the account number" }),
  peer: Phone,
  peer_lid: Schema.NullOr(Schema.String),
  name: Schema.NullOr(Schema.String),
  is_group: Schema.Boolean,
  group_subject: Schema.NullOr(Schema.String),
  last_message: Schema.NullOr(LastMessage),
  last_message_at: Schema.NullOr(Timestamp),
  message_count: Schema.Int,
  incoming_count: Schema.Int,
  outgoing_count: Schema.Int,
  created_at: Timestamp
}).annotations({ identifier: "Chat" })
/** @since 1.0.0 */
export type Chat = typeof Chat.Type

/** @since 1.0.0 */
export const ChatList = Schema.Struct({ chats: Schema.Array(Chat) }).annotations({ identifier: "ChatList" })
