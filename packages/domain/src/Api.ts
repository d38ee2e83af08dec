/**
 * The HTTP contract of wagate: every endpoint of the interface specification, with its
 * parameters, success and error responses. The server and the typed client are both derived
 * from it.
 *
 * @since 1.0.0
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { Account, Balance, Summary } from "./Account.js"
import * as E from "./ApiError.js"
import { ArchiveExport, CreateExportRequest, ExportList } from "./ArchiveExport.js"
import { Authentication } from "./Auth.js"
import { ChatList } from "./Chat.js"
import { Connection } from "./Connection.js"
import { ContactCheck, ContactCheckRequest } from "./ContactCheck.js"
import { Limits } from "./Limits.js"
import { NumberList } from "./LinkedNumber.js"
import { HistoryExport, Message, MessagePage } from "./Message.js"
import { SendMessageRequest, SendMessageResponse } from "./SendMessage.js"
import { ServiceStatus } from "./ServiceStatus.js"
import { DeleteResult, MediaDeleteRequest, Storage } from "./Storage.js"
import {
  DeliveryStatus,
  ResendRequest,
  ResendResult,
  SetWebhookRequest,
  Webhook,
  WebhookDeliveryDetail,
  WebhookDeliveryList
} from "./Webhook.js"

/** @since 1.0.0 */
export const API_VERSION = "1.0.0"

// Parameters

const FromParam = Schema.String.annotations({
  description: "Account number: its id from GET /numbers, or its phone (digits). Omitted: all numbers of the key."
})
const TimeParam = (description: string) =>
  Schema.String.annotations({ description: `${description}: a date (2026-11-21), ISO 8601 time or unix seconds` })
const PageLimit = (max: number, byDefault: number) =>
  Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, max)).annotations({
    description: `Page size, 1-${max}, default ${byDefault}`
  })
const IdParam = Schema.NumberFromString.pipe(Schema.int(), Schema.positive()).annotations({
  description: "Integer id"
})
const id = HttpApiSchema.param("id", IdParam)

// Response headers, documented in the OpenAPI document

type Operation = Record<string, any> & { responses: Record<string, any> }
const integerHeader = (description: string) => ({ description, schema: { type: "integer" } })
const rateLimitHeaders = (what: string) => ({
  "X-RateLimit-Limit": integerHeader(`Daily ${what} limit of the number, trust-index multiplier included`),
  "X-RateLimit-Remaining": integerHeader(`${what} still allowed today`),
  "X-RateLimit-Reset": integerHeader("Unix time (seconds) of the next midnight in Almaty (UTC+5)")
})
const retryAfter = { "Retry-After": integerHeader("Seconds after which the request may succeed") }
const addHeaders = (op: Operation, statuses: ReadonlyArray<string>, headers: Record<string, unknown>): Operation => {
  const responses = { ...op.responses }
  for (const status of statuses) {
    if (responses[status]) responses[status] = { ...responses[status], headers: { ...responses[status].headers, ...headers } }
  }
  return { ...op, responses }
}
const withRateLimitHeaders = (what: string) =>
  OpenApi.annotations({ transform: (op) => addHeaders(op as Operation, ["200", "429"], rateLimitHeaders(what)) })

// Groups

/** @since 1.0.0 */
export class MessagesApi extends HttpApiGroup.make("messages")
  .add(
    HttpApiEndpoint.post("send", "/messages/send")
      .setPayload(SendMessageRequest)
      .addSuccess(SendMessageResponse)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidTo))
      .addError(E.wire(E.EmptyText))
      .addError(E.wire(E.TextTooLong))
      .addError(E.wire(E.InvalidMedia))
      .addError(E.wire(E.MediaTooLarge))
      .addError(E.wire(E.MediaFetchFailed))
      .addError(E.wire(E.InvalidFrom))
      .addError(E.wire(E.FromRequired))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NumberPaused))
      .addError(E.wire(E.NumberNotFound))
      .addError(E.wire(E.NoNumbers))
      .addError(E.wire(E.NotConnected))
      .addError(E.wire(E.RateLimited))
      .addError(E.wire(E.DailyLimit))
      .addError(E.wire(E.NewContactsLimit))
      .addError(E.wire(E.ColdBlocked))
      .addError(E.wire(E.SpamDetected))
      .addError(E.wire(E.AttachmentsBusy))
      .addError(E.wire(E.SendFailed))
      .addError(E.wire(E.Capacity))
      .addError(E.wire(E.Busy))
      .annotate(OpenApi.Summary, "Send a message")
      .annotate(
        OpenApi.Description,
        "Sends text, an image, a document, a voice message or a video. An `Idempotency-Key` header makes a retried request return the first answer and send once."
      )
      .annotateContext(withRateLimitHeaders("message"))
  )
  .add(
    HttpApiEndpoint.get("list", "/messages")
      .setUrlParams(Schema.Struct({
        from: Schema.optional(FromParam),
        chat: Schema.optional(Schema.String.annotations({ description: "Phone or chat_id" })),
        since: Schema.optional(TimeParam("Not earlier than")),
        until: Schema.optional(TimeParam("Earlier than")),
        direction: Schema.optional(Schema.Literal("in", "out")),
        limit: Schema.optional(PageLimit(500, 50)),
        before: Schema.optional(
          Schema.NumberFromString.pipe(Schema.int()).annotations({ description: "Only messages with a lower id" })
        )
      }))
      .addSuccess(MessagePage)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.InvalidFrom))
      .addError(E.wire(E.NumberNotFound))
      .annotate(OpenApi.Summary, "Message history, newest first")
  )
  .add(
    HttpApiEndpoint.get("get")`/messages/${id}`
      .addSuccess(Message)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .annotate(OpenApi.Summary, "One message with its delivery status")
  )
  .middleware(Authentication)
{}

/** @since 1.0.0 */
export class ChatsApi extends HttpApiGroup.make("chats")
  .add(
    HttpApiEndpoint.get("list", "/chats")
      .setUrlParams(Schema.Struct({
        from: Schema.optional(FromParam),
        limit: Schema.optional(PageLimit(500, 100))
      }))
      .addSuccess(ChatList)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.InvalidFrom))
      .addError(E.wire(E.NumberNotFound))
      .annotate(OpenApi.Summary, "Chats, most recent first")
  )
  .middleware(Authentication)
{}

/** @since 1.0.0 */
export class HistoryApi extends HttpApiGroup.make("history")
  .add(
    HttpApiEndpoint.get("export", "/export")
      .setUrlParams(Schema.Struct({
        from: Schema.optional(FromParam),
        since: Schema.optional(TimeParam("Not earlier than")),
        until: Schema.optional(TimeParam("Earlier than")),
        format: Schema.optional(Schema.Literal("csv", "json").annotations({ description: "Default csv" }))
      }))
      .addSuccess(HistoryExport)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.InvalidFrom))
      .addError(E.wire(E.NumberNotFound))
      .addError(E.wire(E.RateLimited))
      .annotate(OpenApi.Summary, "Download the history as CSV or JSON, oldest first, at most 100 000 messages")
      .annotateContext(OpenApi.annotations({
        transform: (op) => {
          const o = op as Operation
          const ok = o.responses["200"]
          return {
            ...o,
            responses: {
              ...o.responses,
              "200": {
                ...ok,
                description: "The history file (format=csv: text/csv; format=json: application/json)",
                content: { ...ok?.content, "text/csv": { schema: { type: "string" } } }
              }
            }
          }
        }
      }))
  )
  .middleware(Authentication)
{}

/** @since 1.0.0 */
export class MediaApi extends HttpApiGroup.make("media")
  .add(
    HttpApiEndpoint.get("get")`/media/${id}`
      .setUrlParams(Schema.Struct({
        download: Schema.optional(
          Schema.Literal("1", "0").annotations({ description: "1: download as a file with the original name" })
        )
      }))
      .addSuccess(HttpApiSchema.Empty(302).annotations({ description: "Location: signed link valid 15 minutes" }))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.StorageUnavailable))
      .addError(E.wire(E.NotImplemented))
      .annotate(OpenApi.Summary, "Redirect to a signed link of a message's file")
  )
  .add(
    HttpApiEndpoint.del("delete")`/media/${id}`
      .addSuccess(DeleteResult)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.NotImplemented))
      .annotate(OpenApi.Summary, "Delete one file; the message text remains")
  )
  .add(
    HttpApiEndpoint.post("bulkDelete", "/media/delete")
      .setPayload(MediaDeleteRequest)
      .addSuccess(DeleteResult)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.InvalidFrom))
      .addError(E.wire(E.NumberNotFound))
      .addError(E.wire(E.NotImplemented))
      .annotate(OpenApi.Summary, "Delete files in bulk; the message texts remain")
  )
  .middleware(Authentication)
{}

/** @since 1.0.0 */
export class StorageApi extends HttpApiGroup.make("storage")
  .add(
    HttpApiEndpoint.get("get", "/storage")
      .addSuccess(Storage)
      .addError(E.wire(E.ForbiddenForNumberKey))
      .addError(E.wire(E.NotImplemented))
      .annotate(OpenApi.Summary, "Storage accounting of the account (account key only)")
  )
  .middleware(Authentication)
{}

/** @since 1.0.0 */
export class ExportsApi extends HttpApiGroup.make("exports")
  .add(
    HttpApiEndpoint.get("list", "/exports")
      .addSuccess(ExportList)
      .annotate(OpenApi.Summary, "The last 50 archive exports, newest first")
  )
  .add(
    HttpApiEndpoint.post("create", "/exports")
      .setPayload(CreateExportRequest)
      .addSuccess(ArchiveExport, { status: 202 })
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.InvalidFrom))
      .addError(E.wire(E.NumberNotFound))
      .addError(E.wire(E.ExportBusy))
      .addError(E.wire(E.ExportLimit))
      .addError(E.wire(E.StorageUnavailable))
      .annotate(OpenApi.Summary, "Start a ZIP archive of files and conversation")
  )
  .add(
    HttpApiEndpoint.get("get")`/exports/${id}`
      .addSuccess(ArchiveExport)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.StorageUnavailable))
      .annotate(OpenApi.Summary, "One archive export with progress and a fresh 15-minute link")
  )
  .middleware(Authentication)
{}

/** @since 1.0.0 */
export class NumbersApi extends HttpApiGroup.make("numbers")
  .add(
    HttpApiEndpoint.get("list", "/numbers")
      .addSuccess(NumberList)
      .annotate(OpenApi.Summary, "Numbers of the account and how many it may hold")
  )
  .add(
    HttpApiEndpoint.get("connection")`/numbers/${id}/connection`
      .addSuccess(Connection)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NumberNotFound))
      .annotate(OpenApi.Summary, "Connection status of a number: {status, phone, paid_until}")
  )
  .middleware(Authentication)
{}

/** @since 1.0.0 */
export class AccountApi extends HttpApiGroup.make("account")
  .add(
    HttpApiEndpoint.get("status", "/status")
      .addSuccess(Summary)
      .annotate(OpenApi.Summary, "Numbers and balance in one answer (a number key: its number, no balance)")
  )
  .add(
    HttpApiEndpoint.get("balance", "/balance")
      .addSuccess(Balance)
      .addError(E.wire(E.ForbiddenForNumberKey))
      .annotate(OpenApi.Summary, "Balance and daily drawdown (account key only)")
  )
  .add(
    HttpApiEndpoint.get("me", "/me")
      .addSuccess(Account)
      .addError(E.wire(E.ForbiddenForNumberKey))
      .annotate(OpenApi.Summary, "Account data (account key only)")
  )
  .middleware(Authentication)
{}

/** @since 1.0.0 */
export class LimitsApi extends HttpApiGroup.make("limits")
  .add(
    HttpApiEndpoint.get("get", "/limits")
      .setUrlParams(Schema.Struct({ from: Schema.optional(FromParam) }))
      .addSuccess(Limits)
      .addError(E.wire(E.InvalidFrom))
      .addError(E.wire(E.FromRequired))
      .addError(E.wire(E.NumberNotFound))
      .addError(E.wire(E.NoNumbers))
      .addError(E.wire(E.Capacity))
      .annotate(OpenApi.Summary, "Trust index, today's limits and usage of a number")
  )
  .middleware(Authentication)
{}

/** @since 1.0.0 */
export class ContactsApi extends HttpApiGroup.make("contacts")
  .add(
    HttpApiEndpoint.post("check", "/contacts/check")
      .setPayload(ContactCheckRequest)
      .addSuccess(ContactCheck)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.InvalidFrom))
      .addError(E.wire(E.FromRequired))
      .addError(E.wire(E.NumberPaused))
      .addError(E.wire(E.NumberNotFound))
      .addError(E.wire(E.NoNumbers))
      .addError(E.wire(E.NotConnected))
      .addError(E.wire(E.RateLimited))
      .addError(E.wire(E.DailyLimit))
      .addError(E.wire(E.Capacity))
      .annotate(OpenApi.Summary, "Check whether a phone exists on the network (200 a day per number, 1 a second)")
      .annotateContext(OpenApi.annotations({
        transform: (op) =>
          addHeaders(
            addHeaders(op as Operation, ["200", "429"], rateLimitHeaders("check")),
            ["503"],
            retryAfter
          )
      }))
  )
  .middleware(Authentication)
{}

/**
 * The account's webhook (account key only): where events go, its signing secret, the delivery
 * log and resending. See docs/webhooks.md.
 *
 * @since 1.0.0
 */
export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.get("get", "/webhook")
      .addSuccess(Webhook)
      .addError(E.wire(E.ForbiddenForNumberKey))
      .addError(E.wire(E.NotFound))
      .annotate(OpenApi.Summary, "The account's webhook (the secret is not shown)")
  )
  .add(
    HttpApiEndpoint.put("set", "/webhook")
      .setPayload(SetWebhookRequest)
      .addSuccess(Webhook)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.ForbiddenForNumberKey))
      .addError(E.wire(E.Capacity))
      .annotate(OpenApi.Summary, "Set the webhook URL and turn it on or off")
      .annotate(
        OpenApi.Description,
        "Creates the webhook, with a new signing secret shown in this answer only, or changes its URL and whether it is on. Turning it on again (or changing the URL) retries the held events at once."
      )
  )
  .add(
    HttpApiEndpoint.post("rotateSecret", "/webhook/rotate-secret")
      .addSuccess(Webhook)
      .addError(E.wire(E.ForbiddenForNumberKey))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.Capacity))
      .annotate(OpenApi.Summary, "Replace the signing secret; the old one keeps signing for 24 hours")
  )
  .add(
    HttpApiEndpoint.get("deliveries", "/webhook/deliveries")
      .setUrlParams(Schema.Struct({
        status: Schema.optional(DeliveryStatus),
        limit: Schema.optional(PageLimit(500, 50)),
        before: Schema.optional(
          Schema.NumberFromString.pipe(Schema.int()).annotations({ description: "Only deliveries with a lower id" })
        )
      }))
      .addSuccess(WebhookDeliveryList)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.ForbiddenForNumberKey))
      .annotate(OpenApi.Summary, "Delivery log, newest first: status, attempts, last response code, latency and error")
  )
  .add(
    HttpApiEndpoint.get("delivery")`/webhook/deliveries/${id}`
      .addSuccess(WebhookDeliveryDetail)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.ForbiddenForNumberKey))
      .addError(E.wire(E.NotFound))
      .annotate(OpenApi.Summary, "One delivery with its body and every attempt")
  )
  .add(
    HttpApiEndpoint.post("resend", "/webhook/resend")
      .setPayload(ResendRequest)
      .addSuccess(ResendResult, { status: 202 })
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.ForbiddenForNumberKey))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.Capacity))
      .annotate(OpenApi.Summary, "Send one event again (event_id), or every event of a time range (since, until)")
  )
  .middleware(Authentication)
{}

/**
 * Public endpoints outside the versioned API: the service status needs no key.
 *
 * @since 1.0.0
 */
export class PublicApi extends HttpApiGroup.make("public")
  .add(
    HttpApiEndpoint.get("status", "/api/status")
      .addSuccess(ServiceStatus)
      .annotate(OpenApi.Summary, "Public service status: overall state, version and dependency health")
  )
{}

/**
 * The versioned REST API under `/api/v1`.
 *
 * @since 1.0.0
 */
export class WagateApi extends HttpApi.make("wagate")
  .add(MessagesApi)
  .add(ChatsApi)
  .add(HistoryApi)
  .add(MediaApi)
  .add(StorageApi)
  .add(ExportsApi)
  .add(NumbersApi)
  .add(AccountApi)
  .add(LimitsApi)
  .add(ContactsApi)
  .add(WebhooksApi)
  .prefix("/api/v1")
  .add(PublicApi)
  .annotateContext(OpenApi.annotations({
    title: "wagate",
    version: API_VERSION,
    description:
      "Self-hostable WhatsApp linked-device gateway. Every error body is `{error, code}`; every endpoint can answer 401 (unauthorized, invalid_key) and 429 (key_rate_limited, rate_limited) with Retry-After.",
    transform: (spec) => {
      // Decode failures never leave the server in their raw form (the gateway answers
      // invalid_param / invalid_from / invalid_json instead), and every 429 carries Retry-After.
      const paths: Record<string, Record<string, Operation>> = {}
      for (const [path, item] of Object.entries(spec.paths)) {
        paths[path] = {}
        for (const [method, op] of Object.entries(item as Record<string, Operation>)) {
          const described = { ...op, description: op.description ?? op.summary }
          paths[path][method] = addHeaders(stripDecodeError(described), ["429"], retryAfter)
        }
      }
      const { HttpApiDecodeError: _, Issue: __, PropertyKey: ___, ...schemas } = spec.components.schemas
      return {
        ...spec,
        info: { ...spec.info, contact: { name: "The operator of this gateway" } },
        servers: [{ url: "/", description: "This gateway" }],
        paths,
        components: { ...spec.components, schemas }
      }
    }
  }))
{}

const stripDecodeError = (op: Operation): Operation => {
  const bad = op.responses["400"]
  const schema = bad?.content?.["application/json"]?.schema
  if (!schema) return op
  const isDecodeError = (s: any) => s?.$ref === "#/components/schemas/HttpApiDecodeError"
  if (isDecodeError(schema)) {
    const { "400": _, ...responses } = op.responses
    return { ...op, responses }
  }
  if (Array.isArray(schema.anyOf)) {
    const anyOf = schema.anyOf.filter((s: unknown) => !isDecodeError(s))
    const content = { "application/json": { schema: anyOf.length === 1 ? anyOf[0] : { ...schema, anyOf } } }
    return { ...op, responses: { ...op.responses, "400": { ...bad, content } } }
  }
  return op
}
