/**
 * What arrives from the network is made storable before it is stored: PostgreSQL's text and
 * jsonb cannot hold U+0000, nor a UTF-16 surrogate without its pair. U+0000 is removed and an
 * unpaired surrogate becomes U+FFFD (the replacement character), in every string of an incoming
 * message: text, sender name, group subject, author and file name (a caption is the message's text) (docs/api-decisions.md).
 */
import type { IncomingMessage } from "@wagate/whatsapp/WhatsAppDriver"

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/** The storable form of one string. */
export const storable = (s: string): string => s.replace(/\u0000/g, "").replace(LONE_SURROGATE, "\uFFFD")

const storableOrNull = (s: string | null): string | null => (s === null ? null : storable(s))

/** The message with every string storable; the file's handle is kept as it is. */
export const sanitize = (m: IncomingMessage): IncomingMessage => ({
  ...m,
  waMessageId: storable(m.waMessageId),
  chatId: storable(m.chatId),
  peer: storable(m.peer),
  peerLid: storableOrNull(m.peerLid),
  name: storableOrNull(m.name),
  groupSubject: storableOrNull(m.groupSubject),
  author: storableOrNull(m.author),
  text: storable(m.text),
  media: m.media === null ? null : { ...m.media, filename: storableOrNull(m.media.filename) }
})
