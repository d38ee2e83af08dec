/**
 * A message from Baileys' `messages.upsert` as the port's `IncomingMessage`: who it is from
 * (phone, LID, group and author), its type and text, its file. The network id is WhatsApp's
 * own (`key.id`), so a message delivered again after a reconnect has the same id and is stored
 * once.
 *
 * @since 1.0.0
 */
import { type GroupMetadata, proto, type WAMessage } from "@whiskeysockets/baileys"
import * as Effect from "effect/Effect"
import type { IncomingMessage, IncomingMedia } from "../WhatsAppDriver.js"
import type { GroupSubjects } from "./GroupSubjects.js"
import * as IncomingContent from "./IncomingContent.js"
import * as Jids from "./Jids.js"
import type { LidMap } from "./LidMap.js"

/** @since 1.0.0 */
export interface Context {
  readonly lids: LidMap
  readonly groups: GroupSubjects
  readonly fetchGroup: (jid: string) => Promise<GroupMetadata>
  readonly download: (message: WAMessage) => IncomingMedia["download"]
  /** When the message carries no time. */
  readonly now: number
}

/** A person, by phone when known, else by LID. */
interface Person {
  readonly phone: string | null
  readonly lid: string | null
}

/**
 * Resolves a person from a JID and its alternative (Baileys gives both when WhatsApp sent both),
 * learning the LID -> phone mapping when both are there and using it when only the LID is.
 */
const person = Effect.fnUntraced(function*(jid: string | null | undefined, alt: string | null | undefined, lids: LidMap) {
  const pnJid = Jids.isPhone(jid) ? jid : Jids.isPhone(alt) ? alt : null
  const lidJid = Jids.isLid(jid) ? jid : Jids.isLid(alt) ? alt : null
  if (pnJid !== null && lidJid !== null) yield* lids.remember([{ lid: lidJid, phone: pnJid }])
  const phone = pnJid !== null ? Jids.userOf(pnJid) : lidJid !== null ? yield* lids.phoneOf(lidJid) : null
  const lid = lidJid !== null ? Jids.lidOf(lidJid) : phone !== null ? yield* lids.lidOf(phone) : null
  return { phone, lid } satisfies Person
})

const timestampOf = (m: WAMessage, now: number): number => {
  const t = m.messageTimestamp
  const seconds = t === null || t === undefined ? null : typeof t === "number" ? t : Number(t.toString())
  return seconds === null || !Number.isFinite(seconds) || seconds <= 0 ? now : seconds * 1000
}

/**
 * What a message without content is: a view-once message a linked device is never given (Baileys
 * marks its key `isViewOnce`, with no stub), which is stored as a placeholder since nothing more
 * will come; anything else has nothing to store, as a message WhatsApp could not decrypt
 * (`CIPHERTEXT` stub) arrives again with its content under the same id when it can be.
 */
const withoutContent = (m: WAMessage): IncomingContent.Content | null =>
  !m.message && m.key.isViewOnce === true && m.messageStubType !== proto.WebMessageInfo.StubType.CIPHERTEXT
    ? IncomingContent.viewOnceUnavailable
    : null

/**
 * The message, or null when it is not one to store: status updates, channels and broadcasts,
 * WhatsApp's own service account, protocol messages, and messages without content (not
 * decrypted), except view-once messages.
 *
 * @since 1.0.0
 */
export const toIncoming = Effect.fnUntraced(function*(m: WAMessage, ctx: Context) {
  const key = m.key
  const remote = key.remoteJid
  if (typeof key.id !== "string" || key.id === "" || typeof remote !== "string" || Jids.isIgnored(remote)) return null
  const content = IncomingContent.classify(m.message) ?? withoutContent(m)
  if (content === null) return null
  const fromMe = key.fromMe === true
  const base = {
    waMessageId: key.id,
    fromMe,
    name: fromMe ? null : m.pushName || null,
    type: content.type,
    text: content.text,
    timestamp: timestampOf(m, ctx.now),
    // The file is found in the content out of its wrappers (an animated sticker's only there).
    media: content.file === null
      ? null
      : { ...content.file, download: ctx.download({ ...m, message: IncomingContent.contentOf(m.message) }) }
  }
  if (Jids.isGroup(remote)) {
    const author = fromMe ? null : yield* person(key.participant, key.participantAlt, ctx.lids)
    return {
      ...base,
      chatId: `${Jids.userOf(remote)}@g.us`,
      peer: Jids.userOf(remote),
      peerLid: null,
      isGroup: true,
      groupSubject: yield* ctx.groups.subjectOf(remote, ctx.fetchGroup),
      // A member known only by LID is shown as its LID, never as a made-up phone.
      author: author === null ? null : author.phone ?? author.lid
    } satisfies IncomingMessage
  }
  if (!Jids.isPhone(remote) && !Jids.isLid(remote)) return null
  const who = yield* person(remote, key.remoteJidAlt, ctx.lids)
  return {
    ...base,
    // Known only by its LID: no phone (never the LID's digits), and the chat is `<lid>@lid`,
    // the address replies go to.
    chatId: who.phone !== null ? Jids.chatOf(who.phone) : who.lid!,
    peer: who.phone ?? "",
    peerLid: who.lid,
    isGroup: false,
    groupSubject: null,
    author: null
  } satisfies IncomingMessage
})
