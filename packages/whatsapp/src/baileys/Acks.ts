/**
 * Delivery reports of the number's own messages, from Baileys' `messages.update` (one-to-one:
 * status codes) and `message-receipt.update` (groups: a receipt per member), as the port's Ack
 * events. Pure. Server error 463 fails the message only: whether the account is restricted is
 * WhatsApp's answer to a reach-out time lock query (the session asks; 463 also means a missing
 * trusted-contact token for that one contact).
 *
 * @since 1.0.0
 */
import type { MessageUserReceiptUpdate, WAMessageUpdate } from "@whiskeysockets/baileys"
import type { Ack, DriverEvent } from "../WhatsAppDriver.js"

/** `proto.WebMessageInfo.Status`: ERROR 0, PENDING 1, SERVER_ACK 2, DELIVERY_ACK 3, READ 4, PLAYED 5. */
const STATUS_ACK: Record<number, Ack | undefined> = { 0: "failed", 2: "sent", 3: "delivered", 4: "read", 5: "read" }

/** Server error code of a message refused because the account is restricted. @since 1.0.0 */
export const RESTRICTED_CODE = "463"

const codeOf = (params: unknown): string | undefined => Array.isArray(params) && params.length > 0 ? String(params[0]) : undefined

const failure = (params: unknown): string => {
  const code = codeOf(params)
  if (code === RESTRICTED_CODE) return `refused by WhatsApp: account restricted or no trusted-contact token (${RESTRICTED_CODE})`
  return code === undefined ? "delivery failed" : `delivery failed (${code})`
}

/** Whether any of the updates is a send refused with 463. @since 1.0.0 */
export const hasRestrictedFailure = (updates: ReadonlyArray<WAMessageUpdate>): boolean =>
  updates.some((u) => u.key.fromMe === true && u.update.status === 0 && codeOf(u.update.messageStubParameters) === RESTRICTED_CODE)

/** @since 1.0.0 */
export const fromUpdates = (updates: ReadonlyArray<WAMessageUpdate>): Array<DriverEvent> =>
  updates.flatMap((u): Array<DriverEvent> => {
    const status = u.update.status
    // Only our own messages have acks; a status on a received message is this account reading it.
    if (u.key.fromMe !== true || typeof u.key.id !== "string" || status === null || status === undefined) return []
    const ack = STATUS_ACK[status]
    if (ack === undefined) return []
    if (ack !== "failed") return [{ _tag: "Ack", waMessageId: u.key.id, ack }]
    return [{ _tag: "Ack", waMessageId: u.key.id, ack, error: failure(u.update.messageStubParameters) }]
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
