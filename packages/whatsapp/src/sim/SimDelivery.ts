/**
 * How the simulated network carries messages: what it accepts from a number, the acks it
 * returns and when, the recipient's side when it is another number of the gateway, peers'
 * replies, and messages that peers write.
 *
 * @since 1.0.0
 */
import * as SimDevice from "./SimDevice.js"
import * as SimInbound from "./SimInbound.js"
import * as SimModel from "./SimModel.js"
import * as SimSentMessage from "./SimSentMessage.js"
import type { SimOutgoing } from "./SimOutgoing.js"
import { type IncomingMessage, SendRejected } from "../WhatsAppDriver.js"

/**
 * A peer's message reaches the number `input.to` at `now`: at once when it is connected,
 * otherwise when it next connects.
 *
 * @since 1.0.0
 */
export const receive = (
  model: SimModel.SimModel,
  input: SimInbound.InboundMessage,
  now: number
): { readonly message: IncomingMessage; readonly delivered: boolean } => {
  const message = SimInbound.fromPeer(input, model.nextId(), now)
  const delivered = SimDevice.deliver(SimModel.deviceOf(model, input.to), { _tag: "Incoming", message })
  return { message, delivered }
}

/**
 * The connected number `sender` hands `message` to the network at `now`: refused
 * (`SendRejected`, when a failure rule says so), or accepted, logged and acked `sent`, with the
 * rest of its way planned.
 *
 * @since 1.0.0
 */
export const accept = (
  model: SimModel.SimModel,
  sender: SimDevice.SimDevice,
  message: SimOutgoing,
  now: number
): SendRejected | null => {
  const earlier = model.logged.get(SimModel.logKey(sender.phone, message.waMessageId))
  if (earlier !== undefined) {
    // A re-send under the same id (after a crash) is not a second message.
    SimDevice.deliver(sender, { _tag: "Ack", waMessageId: earlier.waMessageId, ack: earlier.ack })
    return null
  }
  const mode = takeFailure(model, message.to)
  if (mode === "reject") return new SendRejected({ reason: "the simulated network rejected the message" })
  const entry: SimModel.LogEntry = { ...SimSentMessage.fromOutgoing(sender.phone, message, now) }
  SimModel.record(model, entry)
  SimDevice.deliver(sender, { _tag: "Ack", waMessageId: message.waMessageId, ack: "sent" })
  const failure = mode === "fail"
    ? "delivery failed (simulated)"
    : SimModel.exists(model, message.to)
    ? null
    : "the recipient is not on WhatsApp"
  plan(model, sender, entry, message, failure, now)
  return null
}

/** The mode of the failure rule for `to`, counting the message against it. */
const takeFailure = (model: SimModel.SimModel, to: string) => {
  const rule = model.failureRules.get(to)
  if (rule === undefined) return null
  if (rule.remaining !== null && --rule.remaining <= 0) model.failureRules.delete(to)
  return rule.mode
}

/**
 * `delivered` (or `failed`) at `deliveredDelayMs` after the send, with the recipient's copy
 * and the peer's reply; `read` at `readDelayMs` after the send, never before `delivered`.
 */
const plan = (
  model: SimModel.SimModel,
  sender: SimDevice.SimDevice,
  entry: SimModel.LogEntry,
  message: SimOutgoing,
  failure: string | null,
  now: number
) => {
  const { deliveredDelayMs, readDelayMs } = model.settings
  const ack = (state: SimModel.LogEntry["ack"], error?: string) => {
    entry.ack = state
    SimDevice.deliver(sender, { _tag: "Ack", waMessageId: entry.waMessageId, ack: state, ...(error ? { error } : {}) })
  }
  const deliveredAt = now + deliveredDelayMs
  model.agenda.schedule(deliveredAt, "message", (at) => {
    if (failure !== null) return ack("failed", failure)
    const recipient = model.devices.get(entry.to)
    if (recipient?.linked) {
      SimDevice.deliver(recipient, { _tag: "Incoming", message: SimInbound.fromNumber(sender.phone, message, now) })
    }
    ack("delivered")
    const reply = model.autoReplies.get(entry.to)
    if (reply !== undefined) {
      model.agenda.schedule(at + reply.delayMs, "message", (replyAt) => {
        receive(model, { to: sender.phone, from: entry.to, text: reply.text, name: reply.name, type: reply.type }, replyAt)
      })
    }
  })
  // Planned after the delivery, so at the same instant it still comes second.
  if (failure === null && readDelayMs !== null) {
    model.agenda.schedule(Math.max(now + readDelayMs, deliveredAt), "message", () => ack("read"))
  }
}
