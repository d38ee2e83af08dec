/**
 * What a tool call answers: structured content matching the tool's output schema with a short
 * sentence, or, when refused, a tool error (`isError`) carrying the spec's code and the retry
 * time. Each result also carries its JSON as text, for clients that show models only text.
 */
import type { Summary } from "@wagate/domain/Account"
import type { Limits } from "@wagate/domain/Limits"
import type { Refusal } from "./McpGateway.js"
import type { CheckedNumber, SentMessage } from "./Tools.js"

export interface ToolResult {
  readonly [key: string]: unknown
  readonly content: ReadonlyArray<{ readonly type: "text"; readonly text: string }>
  readonly structuredContent?: Record<string, unknown>
  readonly isError?: boolean
}

const success = (summary: string, structured: object): ToolResult => ({
  content: [{ type: "text", text: summary }, { type: "text", text: JSON.stringify(structured) }],
  structuredContent: structured as Record<string, unknown>
})

/** The body of a refusal: `{error, code}` as the REST API answers, with the retry time when there is one. */
export const refusalBody = (refusal: Refusal, now: number) => {
  const retryAfter = refusal.retryAfter === undefined ? undefined : Math.ceil(refusal.retryAfter)
  return {
    error: refusal.error,
    code: refusal.code,
    ...(retryAfter === undefined
      ? {}
      : { retry_after_seconds: retryAfter, retry_at: new Date(now + retryAfter * 1000).toISOString() })
  }
}

export const refused = (refusal: Refusal, now: number): ToolResult => {
  const body = refusalBody(refusal, now)
  const retry = body.retry_after_seconds === undefined
    ? ""
    : ` Retry after ${body.retry_after_seconds} s (at ${body.retry_at}).`
  return {
    content: [{ type: "text", text: `Refused (${body.code}): ${body.error}.${retry}` }, { type: "text", text: JSON.stringify(body) }],
    isError: true
  }
}

const quotaText = (quota: { readonly remaining: number; readonly limit: number } | undefined, what: string) =>
  quota === undefined ? "" : `; ${quota.remaining} of ${quota.limit} ${what} left today`

export const sent = (result: SentMessage): ToolResult =>
  success(
    `Sent message ${result.id} (WhatsApp id ${result.wa_message_id}) from ${result.from.phone}${quotaText(result.quota, "messages")}.`,
    result
  )

/** Why a number is paused, as a clause; nothing when it is not. */
const pausedText = (n: { readonly paused: boolean; readonly pause_reason: Limits["pause_reason"] }) =>
  !n.paused ? "" : n.pause_reason === "operator" ? ", paused by the operator" : ", paused: the balance ran out"

export const status = (summary: Summary): ToolResult => {
  const numbers = summary.numbers.map((n) => `${n.phone} (id ${n.id}) ${n.status}${pausedText(n)}`)
  const balance = summary.balance === undefined
    ? ""
    : ` Balance ${summary.balance.balance} KZT, ${summary.balance.days_left} days left.`
  return success(
    `${summary.numbers.length === 0 ? "No numbers" : `Numbers: ${numbers.join("; ")}`}.${balance}`,
    summary
  )
}

export const limits = (l: Limits): ToolResult =>
  success(
    `Trust index ${l.rating} (${l.tier_title})${l.warmup ? ", warm-up" : ""}${pausedText(l)}. Used today: ` +
      `${l.used.messages}/${l.limits.messages_per_day} messages, ${l.used.new_contacts}/${l.limits.new_contacts_per_day} ` +
      `new contacts, ${l.used.checks}/${l.limits.checks_per_day} checks.` +
      (l.cold_blocked_until === null ? "" : ` First messages to new people suspended until ${l.cold_blocked_until}.`),
    l
  )

export const checked = (c: CheckedNumber): ToolResult =>
  success(
    c.exists
      ? `${c.phone} is on WhatsApp (chat ${c.chat_id})${quotaText(c.quota, "checks")}.`
      : `${c.phone} is not on WhatsApp${quotaText(c.quota, "checks")}.`,
    c
  )
