/**
 * Sending messages and reading the message history.
 *
 * @since 1.0.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { Authentication } from "../Auth.js"
import { Message, MessagePage } from "../Message.js"
import { SendMessageRequest, SendMessageResponse } from "../SendMessage.js"
import { BodyErrors, ByIdErrors, NumberCallErrors, NumberChoiceErrors, ReadErrors, SendErrors } from "./Errors.js"
import { withRateLimitHeaders } from "./OpenApiDoc.js"
import { Before, FromParam, id, PageLimit, TimeParam } from "./Params.js"

/** @since 1.0.0 */
export class MessagesApi extends HttpApiGroup.make("messages")
  .add(
    HttpApiEndpoint.post("send", "/messages/send")
      .setPayload(SendMessageRequest)
      .addSuccess(SendMessageResponse)
      .addError(BodyErrors)
      .addError(NumberChoiceErrors)
      .addError(NumberCallErrors)
      .addError(SendErrors)
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
        before: Schema.optional(Before("messages"))
      }))
      .addSuccess(MessagePage)
      .addError(ReadErrors)
      .annotate(OpenApi.Summary, "Message history, newest first")
  )
  .add(
    HttpApiEndpoint.get("get")`/messages/${id}`
      .addSuccess(Message)
      .addError(ByIdErrors)
      .annotate(OpenApi.Summary, "One message with its delivery status")
  )
  .middleware(Authentication)
{}
