/**
 * What a received WhatsApp message holds, as the gateway's Message `type`, its text and its file.
 * Pure: works on the message content (`proto.IMessage`) Baileys decoded.
 *
 * @since 1.0.0
 */
import type { MessageType } from "@wagate/domain/Message"
import { getContentType, normalizeMessageContent, type proto } from "@whiskeysockets/baileys"

/** The file of a message, as described by the message (the bytes are fetched on demand). @since 1.0.0 */
export interface FileInfo {
  readonly mimeType: string
  readonly filename: string | null
  readonly size: number | null
}

/** @since 1.0.0 */
export interface Content {
  readonly type: MessageType
  readonly text: string
  readonly file: FileInfo | null
}

/**
 * Parts of the protocol that travel as messages but are not messages of the conversation:
 * edits and deletions (protocol), poll votes, pins, "keep in chat", encrypted reactions and
 * event answers. They are not stored.
 */
const NOT_MESSAGES = new Set<string>([
  "protocolMessage",
  "senderKeyDistributionMessage",
  "pollUpdateMessage",
  "pinInChatMessage",
  "keepInChatMessage",
  "encReactionMessage",
  "encEventResponseMessage",
  "messageHistoryNotice"
])

const size = (length: number | { toNumber(): number } | null | undefined): number | null =>
  length === null || length === undefined ? null : typeof length === "number" ? length : length.toNumber()

const file = (
  media: { mimetype?: string | null; fileLength?: number | { toNumber(): number } | null; fileName?: string | null },
  fallbackMime: string
): FileInfo => ({
  mimeType: media.mimetype || fallbackMime,
  filename: media.fileName || null,
  size: size(media.fileLength)
})

const pollText = (poll: proto.Message.IPollCreationMessage) =>
  [poll.name ?? "", ...(poll.options ?? []).map((o) => `- ${o.optionName ?? ""}`)].join("\n")

/**
 * The content of a message, or null when there is nothing to store: no content (a message
 * WhatsApp could not decrypt yet arrives again with content under the same id, and must not be
 * stored empty first), a protocol message, or a removed reaction.
 *
 * @since 1.0.0
 */
export const classify = (message: proto.IMessage | null | undefined): Content | null => {
  const content = normalizeMessageContent(message)
  const kind = getContentType(content)
  if (content === undefined || kind === undefined) return null
  if (NOT_MESSAGES.has(kind)) return null
  const none = { file: null }
  switch (kind) {
    case "conversation":
      return { type: "text", text: content.conversation ?? "", ...none }
    case "extendedTextMessage":
      return { type: "text", text: content.extendedTextMessage?.text ?? "", ...none }
    case "imageMessage": {
      const m = content.imageMessage!
      return { type: "image", text: m.caption ?? "", file: file(m, "image/jpeg") }
    }
    case "videoMessage":
    case "ptvMessage": {
      const m = (content.videoMessage ?? content.ptvMessage)!
      return { type: "video", text: m.caption ?? "", file: file(m, "video/mp4") }
    }
    case "audioMessage": {
      const m = content.audioMessage!
      return { type: m.ptt ? "voice" : "audio", text: "", file: file(m, "audio/ogg") }
    }
    case "documentMessage": {
      const m = content.documentMessage!
      return { type: "document", text: m.caption ?? "", file: file(m, "application/octet-stream") }
    }
    case "stickerMessage": {
      const m = content.stickerMessage!
      return { type: "sticker", text: "", file: file(m, "image/webp") }
    }
    case "locationMessage":
    case "liveLocationMessage": {
      const m = content.locationMessage ?? content.liveLocationMessage!
      const place = "name" in m ? [m.name, m.address].filter((s) => !!s).join(", ") : ""
      const where = `${m.degreesLatitude ?? 0},${m.degreesLongitude ?? 0}`
      return { type: "location", text: place ? `${place} (${where})` : where, ...none }
    }
    case "contactMessage":
      return { type: "contact", text: content.contactMessage?.displayName ?? "", ...none }
    case "contactsArrayMessage": {
      const m = content.contactsArrayMessage!
      const names = (m.contacts ?? []).map((c) => c.displayName ?? "").filter((n) => n !== "")
      return { type: "contact", text: names.join(", ") || (m.displayName ?? ""), ...none }
    }
    case "reactionMessage": {
      const text = content.reactionMessage?.text ?? ""
      // An empty reaction takes a reaction back: nothing new was said.
      return text === "" ? null : { type: "reaction", text, ...none }
    }
    case "pollCreationMessage":
    case "pollCreationMessageV2":
    case "pollCreationMessageV3":
    case "pollCreationMessageV5": {
      const poll = (content.pollCreationMessage ?? content.pollCreationMessageV2 ?? content.pollCreationMessageV3 ??
        content.pollCreationMessageV5)!
      return { type: "poll", text: pollText(poll), ...none }
    }
    default:
      return { type: "unknown", text: "", ...none }
  }
}
