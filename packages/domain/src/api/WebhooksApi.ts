/**
 * The account's webhook (account key only): where events go, its signing secret, the delivery
 * log and resending. See docs/webhooks.md.
 *
 * @since 1.0.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import * as E from "../ApiError.js"
import { Authentication } from "../Auth.js"
import {
  DeliveryStatus,
  ResendRequest,
  ResendResult,
  SetWebhookRequest,
  Webhook,
  WebhookDeliveryDetail,
  WebhookDeliveryList
} from "../Webhook.js"
import { AccountKeyOnly, BodyErrors, ByIdErrors } from "./Errors.js"
import { Before, id, PageLimit } from "./Params.js"

/** @since 1.0.0 */
export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.get("get", "/webhook")
      .addSuccess(Webhook)
      .addError(E.wire(E.NotFound))
      .annotate(OpenApi.Summary, "The account's webhook (the secret is not shown)")
  )
  .add(
    HttpApiEndpoint.put("set", "/webhook")
      .setPayload(SetWebhookRequest)
      .addSuccess(Webhook)
      .addError(BodyErrors)
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
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.Capacity))
      .annotate(OpenApi.Summary, "Replace the signing secret; the old one keeps signing for 24 hours")
  )
  .add(
    HttpApiEndpoint.get("deliveries", "/webhook/deliveries")
      .setUrlParams(Schema.Struct({
        status: Schema.optional(DeliveryStatus),
        limit: Schema.optional(PageLimit(500, 50)),
        before: Schema.optional(Before("deliveries"))
      }))
      .addSuccess(WebhookDeliveryList)
      .addError(E.wire(E.InvalidParam))
      .annotate(OpenApi.Summary, "Delivery log, newest first: status, attempts, last response code, latency and error")
  )
  .add(
    HttpApiEndpoint.get("delivery")`/webhook/deliveries/${id}`
      .addSuccess(WebhookDeliveryDetail)
      .addError(ByIdErrors)
      .annotate(OpenApi.Summary, "One delivery with its body and every attempt")
  )
  .add(
    HttpApiEndpoint.post("resend", "/webhook/resend")
      .setPayload(ResendRequest)
      .addSuccess(ResendResult, { status: 202 })
      .addError(BodyErrors)
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.Capacity))
      .annotate(OpenApi.Summary, "Send one event again (event_id), or every event of a time range (since, until)")
  )
  .addError(AccountKeyOnly)
  .middleware(Authentication)
{}
