/**
 * Delivery reports of the number's own messages, from Baileys' `messages.update` (one-to-one:
 * status codes) and `message-receipt.update` (groups: a receipt per member), as the port's Ack
 * events; server error 463 in a failed ack also reports the account restricted. Pure.
 *
 * @since 1.0.0
 */
import type { MessageUserReceiptUpdate, WAMessageUpdate } from "@whiskeysockets/baileys"
import type { Ack, DriverEvent } from "../WhatsAppDriver.js"

/** `proto.WebMessageInfo.Status`: ERROR 0, PENDING 1, SERVER_ACK 2, DELIVERY_ACK 3, READ 4, PLAYED 5. */
const STATUS_ACK: Record<number, Ack | undefined> = { 0: "failed", 2: "sent", 3: "delivered", 4: "read", 5: "read" }

/** Server error code of a message refused because the account is restricted. @since 1.0.0 */
export const RESTRICTED_CODE = "463"

const failure = (params: unknown): { readonly error: string; readonly restricted: boolean } => {
  const list = Array.isArray(params) ? params.map(String) : []
  const code = list[0]
  if (code === RESTRICTED_CODE) {
    return { error: `account restricted by WhatsApp (${RESTRICTED_CODE})`, restricted: true }
  }
  return { error: code === undefined ? "delivery failed" : `delivery failed (${code})`, restricted: false }
}

/** @since 1.0.0 */
export const fromUpdates = (updates: ReadonlyArray<WAMessageUpdate>): Array<DriverEvent> =>
  updates.flatMap((u): Array<DriverEvent> => {
    const status = u.update.status
    // Only our own messages have acks; a status on a received message is this account reading it.
    if (u.key.fromMe !== true || typeof u.key.id !== "string" || status === null || status === undefined) return []
    const ack = STATUS_ACK[status]
    if (ack === undefined) return []
    if (ack !== "failed") return [{ _tag: "Ack", waMessageId: u.key.id, ack }]
    const { error, restricted } = failure(u.update.messageStubParameters)
    const acked: DriverEvent = { _tag: "Ack", waMessageId: u.key.id, ack, error }
    return restricted
      ? [acked, { _tag: "Restricted", reason: "WhatsApp restricted the account: it may not start new chats (463)", until: null }]
      : [acked]
  })

/** @since 1.0.0 */
export const fromReceipts = (receipts: ReadonlyArray<MessageUserReceiptUpdate>): Array<DriverEvent> =>
  receipts.flatMap((r): Array<DriverEvent> => {
    if (r.key.fromMe !== true || typeof r.key.id !== "string") return []
    const ack: Ack | null = r.receipt.readTimestamp || r.receipt.playedTimestamp
      ? "read"
      : r.receipt.receiptTimestamp
      ? "delivered"
      : null
    return ack === null ? [] : [{ _tag: "Ack", waMessageId: r.key.id, ack }]
  })
