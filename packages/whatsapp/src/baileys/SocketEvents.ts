/**
 * The Baileys events a session acts on, as signals tagged with the socket's generation: a
 * session handles them one at a time and ignores those of a socket it already replaced.
 *
 * @since 1.0.0
 */
import type {
  BaileysEventMap,
  ConnectionState,
  GroupMetadata,
  MessageUserReceiptUpdate,
  WAMessage,
  WAMessageUpdate
} from "@whiskeysockets/baileys"
import type { BaileysSocket } from "./BaileysSocket.js"

/** @since 1.0.0 */
export type SocketSignal =
  | { readonly _tag: "Update"; readonly gen: number; readonly update: Partial<ConnectionState> }
  | { readonly _tag: "Creds"; readonly gen: number }
  | { readonly _tag: "Upsert"; readonly gen: number; readonly messages: ReadonlyArray<WAMessage> }
  | { readonly _tag: "Updates"; readonly gen: number; readonly updates: ReadonlyArray<WAMessageUpdate> }
  | { readonly _tag: "Receipts"; readonly gen: number; readonly receipts: ReadonlyArray<MessageUserReceiptUpdate> }
  | { readonly _tag: "Lids"; readonly gen: number; readonly pairs: ReadonlyArray<{ lid: string; phone: string }> }
  | { readonly _tag: "Groups"; readonly gen: number; readonly groups: ReadonlyArray<Partial<GroupMetadata>> }

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
  traffic: () => void
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
  on("creds.update", () => ({ _tag: "Creds", gen }))
  on("messages.upsert", ({ messages }) => ({ _tag: "Upsert", gen, messages }))
  on("messages.update", (updates) => ({ _tag: "Updates", gen, updates }))
  on("message-receipt.update", (receipts) => ({ _tag: "Receipts", gen, receipts }))
  on("lid-mapping.update", ({ lid, pn }) => ({ _tag: "Lids", gen, pairs: [{ lid, phone: pn }] }))
  // History is not imported (see LiveSocketFactory), but its LID mappings are worth keeping.
  on("messaging-history.set", ({ lidPnMappings }) =>
    lidPnMappings === undefined || lidPnMappings.length === 0
      ? null
      : { _tag: "Lids", gen, pairs: lidPnMappings.map(({ lid, pn }) => ({ lid, phone: pn })) })
  on("groups.update", (groups) => ({ _tag: "Groups", gen, groups }))
  on("groups.upsert", (groups) => ({ _tag: "Groups", gen, groups }))
  const frame = () => traffic()
  socket.ws.on("frame", frame)
  off.push(() => socket.ws.off("frame", frame))
  return () => {
    for (const f of off) f()
  }
}
