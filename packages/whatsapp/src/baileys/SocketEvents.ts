/**
 * The Baileys events a session acts on, as signals tagged with the socket's generation: a
 * session handles them one at a time and ignores those of a socket it already replaced.
 *
 * @since 1.0.0
 */
import type {
  BaileysEventMap,
  BinaryNode,
  ConnectionState,
  Contact,
  GroupMetadata,
  MessageUserReceiptUpdate,
  WAMessage,
  WAMessageUpdate
} from "@whiskeysockets/baileys"
import type { BaileysSocket } from "./BaileysSocket.js"
import * as Jids from "./Jids.js"

/** @since 1.0.0 */
export type SocketSignal =
  | { readonly _tag: "Update"; readonly gen: number; readonly update: Partial<ConnectionState> }
  | { readonly _tag: "Upsert"; readonly gen: number; readonly messages: ReadonlyArray<WAMessage> }
  | { readonly _tag: "Updates"; readonly gen: number; readonly updates: ReadonlyArray<WAMessageUpdate> }
  | { readonly _tag: "Receipts"; readonly gen: number; readonly receipts: ReadonlyArray<MessageUserReceiptUpdate> }
  | { readonly _tag: "Lids"; readonly gen: number; readonly pairs: ReadonlyArray<{ lid: string; phone: string }> }
  | { readonly _tag: "Groups"; readonly gen: number; readonly groups: ReadonlyArray<Partial<GroupMetadata>> }
  /** WhatsApp answered a query with an error (`<iq type="error"><error code text/></iq>`). */
  | { readonly _tag: "IqError"; readonly gen: number; readonly code: string; readonly text: string }

/** What must happen at the moment Baileys emits, not when the session's fiber gets to it. @since 1.0.0 */
export interface Immediate {
  /** `creds.update`: the credentials as they are now go into the auth state's ordered writer. */
  readonly creds: () => void
  /** WhatsApp's server ack of a sent message (`<ack class="message">`), with its error code if any. */
  readonly serverAck: (id: string, error: string | undefined) => void
}

const childOf = (node: BinaryNode, tag: string): BinaryNode | undefined =>
  Array.isArray(node.content) ? node.content.find((c) => c.tag === tag) : undefined

/**
 * Listens to `socket` for generation `gen`; `traffic` is called on every received frame and
 * event. Returns the function that stops listening.
 *
 * @since 1.0.0
 */
export const attach = (
  socket: BaileysSocket,
  gen: number,
  signal: (s: SocketSignal) => void,
  traffic: () => void,
  immediate: Immediate
): () => void => {
  const off: Array<() => void> = []
  const on = <T extends keyof BaileysEventMap>(event: T, handle: (arg: BaileysEventMap[T]) => SocketSignal | null) => {
    const listener = (arg: BaileysEventMap[T]) => {
      traffic()
      const s = handle(arg)
      if (s !== null) signal(s)
    }
    socket.ev.on(event, listener)
    off.push(() => socket.ev.off(event, listener))
  }
  on("connection.update", (update) => ({ _tag: "Update", gen, update }))
  on("creds.update", () => {
    // Baileys has already merged the update into the credentials (its listener runs first).
    immediate.creds()
    return null
  })
  on("messages.upsert", ({ messages }) => ({ _tag: "Upsert", gen, messages }))
  on("messages.update", (updates) => ({ _tag: "Updates", gen, updates }))
  on("message-receipt.update", (receipts) => ({ _tag: "Receipts", gen, receipts }))
  on("lid-mapping.update", ({ lid, pn }) => ({ _tag: "Lids", gen, pairs: [{ lid, phone: pn }] }))
  // History messages are not imported (only `messages.upsert` is), but its LID mappings are kept.
  on("messaging-history.set", ({ lidPnMappings }) =>
    lidPnMappings === undefined || lidPnMappings.length === 0
      ? null
      : { _tag: "Lids", gen, pairs: lidPnMappings.map(({ lid, pn }) => ({ lid, phone: pn })) })
  // Contacts from the app state sync name a person by both its LID and its phone.
  const contactPairs = (contacts: ReadonlyArray<Partial<Contact>>): SocketSignal | null => {
    const pairs = contacts.flatMap(({ id, lid, phoneNumber }) => {
      const phone = Jids.isPhone(phoneNumber) ? phoneNumber : Jids.isPhone(id) ? id : null
      const l = Jids.isLid(lid) ? lid : Jids.isLid(id) ? id : null
      return phone !== null && l !== null ? [{ lid: l, phone }] : []
    })
    return pairs.length === 0 ? null : { _tag: "Lids", gen, pairs }
  }
  on("contacts.upsert", contactPairs)
  on("contacts.update", contactPairs)
  on("groups.update", (groups) => ({ _tag: "Groups", gen, groups }))
  on("groups.upsert", (groups) => ({ _tag: "Groups", gen, groups }))
  const wire = (event: string, handle: (node: BinaryNode) => void) => {
    socket.ws.on(event, handle)
    off.push(() => socket.ws.off(event, handle))
  }
  wire("frame", () => traffic())
  wire("CB:ack,class:message", (node) => {
    const id = node.attrs.id
    if (typeof id === "string") immediate.serverAck(id, node.attrs.error)
  })
  wire("CB:iq,type:error", (node) => {
    const error = childOf(node, "error")
    signal({ _tag: "IqError", gen, code: error?.attrs.code ?? "", text: error?.attrs.text ?? "" })
  })
  return () => {
    for (const f of off) f()
  }
}
