/**
 * The chats list.
 *
 * @since 1.0.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { Authentication } from "../Auth.js"
import { ChatList } from "../Chat.js"
import { ReadErrors } from "./Errors.js"
import { FromParam, PageLimit } from "./Params.js"

/** @since 1.0.0 */
export class ChatsApi extends HttpApiGroup.make("chats")
  .add(
    HttpApiEndpoint.get("list", "/chats")
      .setUrlParams(Schema.Struct({
        from: Schema.optional(FromParam),
        limit: Schema.optional(PageLimit(500, 100))
      }))
      .addSuccess(ChatList)
      .addError(ReadErrors)
      .annotate(OpenApi.Summary, "Chats, most recent first")
  )
  .middleware(Authentication)
{}
