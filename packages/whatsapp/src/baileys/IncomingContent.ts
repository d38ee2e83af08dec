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
 * event answers, and the announcement of an album (its photos and videos come as messages of
 * their own). They are not stored.
 */
const NOT_MESSAGES = new Set<string>([
  "protocolMessage",
  "albumMessage",
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

/** The lines that are not empty, one under the other. */
const lines = (...parts: ReadonlyArray<string | null | undefined>) => parts.filter((p) => !!p).join("\n")

/**
 * What a linked device is given of a view-once message: only that there was one (WhatsApp shows
 * it on the phone alone), stored as an `unknown` message with this text.
 *
 * @since 1.0.0
 */
export const viewOnceUnavailable: Content = {
  type: "unknown",
  text: "View-once message: it can be opened only on the phone",
  file: null
}

/**
 * The content of a message out of its wrappers (disappearing, view-once, edited, album item,
 * document with caption), and an animated (Lottie) sticker's own sticker out of its wrapper,
 * which Baileys leaves: its file is found only there.
 *
 * @since 1.0.0
 */
export const contentOf = (message: proto.IMessage | null | undefined): proto.IMessage | undefined => {
  const content = normalizeMessageContent(message)
  const lottie = content?.lottieStickerMessage?.message
  return lottie?.stickerMessage ? lottie : content
}

/**
 * The content of a message, or null when there is nothing to store: no content (a message
 * WhatsApp could not decrypt yet arrives again with content under the same id, and must not be
 * stored empty first), a protocol message, or a removed reaction.
 *
 * @since 1.0.0
 */
export const classify = (message: proto.IMessage | null | undefined): Content | null => {
  const content = contentOf(message)
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
      const still = content.locationMessage
      const m = still ?? content.liveLocationMessage!
      // A live location has no place, only what its sender wrote with it.
      const place = still
        ? [still.name, still.address].filter((s) => !!s).join(", ")
        : content.liveLocationMessage!.caption
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
    // A tap on a button or a list row of a business message: the customer's answer is the text
    // of what was chosen, as WhatsApp shows it in the chat.
    case "buttonsResponseMessage":
      return { type: "text", text: content.buttonsResponseMessage?.selectedDisplayText ?? "", ...none }
    case "templateButtonReplyMessage":
      return { type: "text", text: content.templateButtonReplyMessage?.selectedDisplayText ?? "", ...none }
    case "listResponseMessage":
      return { type: "text", text: content.listResponseMessage?.title ?? "", ...none }
    case "interactiveResponseMessage":
      return { type: "text", text: content.interactiveResponseMessage?.body?.text ?? "", ...none }
    case "eventMessage":
      return { type: "unknown", text: lines(content.eventMessage?.name, content.eventMessage?.description), ...none }
    case "groupInviteMessage":
      return { type: "unknown", text: lines(content.groupInviteMessage?.groupName, content.groupInviteMessage?.caption), ...none }
    default:
      return { type: "unknown", text: "", ...none }
  }
}
